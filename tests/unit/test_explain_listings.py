"""Listings of members' figures that are no table (diagnosis/explain/listings.py): one member
a line, several a line, a mapping, a Prometheus vector; the slow member found, and listings of
no speed, no members or no gap left silent."""

from __future__ import annotations

import pytest

from diagnosis.explain.listings import ListingReader
from diagnosis.explain.peers import slow_peer
from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import alarms, first


def _slow(text: str) -> list[str]:
    """Feed `text` to a ListingReader; return the label of each listing's slow member."""
    reader: ListingReader[int] = ListingReader()
    for n, line in enumerate(text.splitlines()):
        reader.feed(line, n)
    found = []
    for least, members in reader.groups():
        slowest = slow_peer([(label, rate) for label, rate, _ in members], least)
        if slowest is not None:
            found.append(members[slowest][0])
    return found


SLOW = {
    "one a line, colon, unit on the figure": (
        "per-node step time over the last 100 steps:\nnode-11: 0.62 s\nnode-12: 0.63 s\n"
        "node-13: 1.48 s\nnode-14: 0.61 s",
        "node-13",
    ),
    "one a line, caption names a rate": (
        "images/s per GPU on host b7:\nGPU 0 : 812\nGPU 1 : 809\nGPU 2 : 420\nGPU 3 : 815",
        "GPU 2",
    ),
    "decimal commas and a dash": (
        "Schrittzeit je Rang (s):\nRang 0 — 0,71\nRang 1 — 0,70\nRang 2 — 0,72\nRang 3 — 1,95",
        "Rang 3",
    ),
    "ranges of members with a range of figures": (
        "step time per rank (s):\nrank 0-6: 0.80 - 0.84\nrank 7: 2.10\nrank 8-15: 0.79 - 0.85",
        "rank 7",
    ),
    "several members a line, over two lines": (
        "tokens/s per GPU, 20-step average:\nGPU0 5120 / GPU1 5098 / GPU2 5133 / GPU3 5101\n"
        "GPU4 5117 / GPU5 2230 / GPU6 5120 / GPU7 5090",
        "GPU5",
    ),
    "three members on one line with a unit": (
        "gpu-c01 212 ms  gpu-c02 208 ms  gpu-c03 530 ms",
        "gpu-c03",
    ),
    "a mapping under a caption that names the members": (
        "Per-rank forward time: {0: 0.412, 1: 0.408, 2: 0.415, 3: 0.990, 4: 0.411}",
        "rank 3",
    ),
    "a Prometheus vector, the query above naming the quantity": (
        "avg_over_time(step_duration_seconds[5m]) by (instance)\n"
        '{instance="trn-a01:9100"}  1.02\n{instance="trn-a02:9100"}  1.01\n'
        '{instance="trn-a03:9100"}  2.44\n{instance="trn-a04:9100"}  1.03',
        "trn-a03",
    ),
    "German thousands and decimal commas": (
        "Bilder/s je GPU:\nGPU 0: 1.234,5\nGPU 1: 1.229,0\nGPU 2: 611,2\nGPU 3: 1.240,1",
        "GPU 2",
    ),
    "hosts by their addresses": (
        'avg(step_seconds) by (instance)\n{instance="10.0.3.11:9100"}  1.01\n'
        '{instance="10.0.3.12:9100"}  1.02\n{instance="10.0.3.13:9100"}  2.33\n'
        '{instance="10.0.3.14:9100"}  1.00',
        "10.0.3.13",
    ),
    "Kubeflow's worker pods": (
        'step_seconds{pod="bert-worker-0"} 0.61\nstep_seconds{pod="bert-worker-1"} 0.60\n'
        'step_seconds{pod="bert-worker-2"} 1.52\nstep_seconds{pod="bert-worker-3"} 0.62',
        "bert-worker-2",
    ),
    "a Prometheus vector, the metric naming the quantity": (
        'train_samples_per_second{node="n1"} 310\ntrain_samples_per_second{node="n2"} 305\n'
        'train_samples_per_second{node="n3"} 120\ntrain_samples_per_second{node="n4"} 311',
        "n3",
    ),
}


@pytest.mark.parametrize("text,member", list(SLOW.values()), ids=list(SLOW))
def test_the_slow_member_of_a_listing_is_found(text: str, member: str) -> None:
    assert _slow(text) == [member]


SILENT = {
    "temperatures": "GPU temperature:\nGPU 0: 45 C\nGPU 1: 46 C\nGPU 2: 88 C\nGPU 3: 44 C",
    "memory": "memory per GPU:\nGPU 0: 20 GiB\nGPU 1: 21 GiB\nGPU 2: 70 GiB\nGPU 3: 20 GiB",
    "utilisation": "GPU util:\nGPU0 97% / GPU1 98% / GPU2 31% / GPU3 97%",
    "a caption of no quantity": "errors per node:\nnode1: 0\nnode2: 3\nnode3: 250\nnode4: 1",
    "timeouts": "NCCL timeout per rank (s):\nrank 0: 600\nrank 1: 600\nrank 2: 1800\nrank 3: 600",
    "a sweep of node counts": (
        "step time (s):\n1 node: 4.1\n2 nodes: 2.2\n4 nodes: 1.2\n8 nodes: 0.7"
    ),
    "epochs are no members": (
        "epoch time:\nepoch 1: 310 s\nepoch 2: 305 s\nepoch 3: 720 s\nepoch 4: 300 s"
    ),
    "batch sizes are no members": (
        "step time by batch size:\nbs 8: 0.2 s\nbs 16: 0.4 s\nbs 32: 0.8 s\nbs 64: 1.6 s"
    ),
    "numbers with gaps are no run of members": (
        "step time (s):\ngpu-01: 0.6\ngpu-07: 0.6\ngpu-19: 1.9\ngpu-40: 0.6"
    ),
    "healthy jitter": (
        "step time per rank (s):\nrank 0: 0.61\nrank 1: 0.66\nrank 2: 0.70\nrank 3: 0.59"
    ),
    "a mapping with bare keys under no member's name": (
        "elapsed time: {1: 20.3, 2: 20.2, 3: 206.8, 4: 19.9}"
    ),
    "a line with other words is no listing line": (
        "step time (s):\nrank 0: 0.61\nrank 1 restarted at step 400: 1.90\nrank 2: 0.62\n"
        "rank 3: 0.60"
    ),
    "two members only on one line": "tokens/s: GPU0 5120 / GPU1 2048",
    "a sweep over members' numbers": "samples/s: node1 1210 / node2 2350 / node3 3400 / node4 4420",
    "German thousands beside plain figures": (
        "Bilder/s je GPU:\nGPU 0: 1.004\nGPU 1: 998\nGPU 2: 1.010\nGPU 3: 1.001"
    ),
    "a caption of a round trip": (
        "ping RTT per node (ms):\nnode1: 0.21\nnode2: 0.20\nnode3: 0.47\nnode4: 0.22"
    ),
    "a counter since start": (
        'cpu_seconds_total{instance="n1"} 310\ncpu_seconds_total{instance="n2"} 305\n'
        'cpu_seconds_total{instance="n3"} 990\ncpu_seconds_total{instance="n4"} 311'
    ),
    "thousands separators read as thousands": (
        "tokens/s per node:\nnode1: 1,204\nnode2: 1,198\nnode3: 1,210\nnode4: 1,201"
    ),
}


@pytest.mark.parametrize("text", list(SILENT.values()), ids=list(SILENT))
def test_listings_of_no_speed_no_members_or_no_gap_are_silent(text: str) -> None:
    assert _slow(text) == []


def test_an_unrelated_line_ends_a_listing() -> None:
    text = (
        "step time (s):\nrank 0: 0.61\nrank 1: 0.62\n(restarted here)\nrank 2: 0.60\nrank 3: 1.90"
    )
    assert _slow(text) == []  # two members before the break, two after: no group of four


def test_a_listing_gives_a_straggler_finding_on_the_slow_members_line() -> None:
    text = "Durchsatz pro GPU (img/s):\nGPU 0: 401\nGPU 1: 398\nGPU 2: 210\nGPU 3: 400"
    assert first(text) == (Category.STRAGGLER, "peers.slow_device", ComponentKind.GPU)
    assert alarms(text) == ["peers.slow_device"]


def test_a_member_s_row_may_carry_a_note_in_brackets() -> None:
    text = "step time per rank:\nranks 0-23: 0.71-0.74 s\nranks 24-31 (node gpu-k4): 1.18-1.22 s"
    assert alarms(text) == ["peers.slow_device"]
    even = text.replace("1.18-1.22", "0.72-0.75")
    assert alarms(even) == []


def test_a_listing_of_epochs_is_a_stream_over_time() -> None:
    jumped = "Epoch 1: 312s\nEpoch 2: 305s\nEpoch 3: 590s\nEpoch 4: 611s\nEpoch 5: 603s"
    assert alarms(jumped) == ["training.step_slowdown"]
    # a first epoch slower than the rest is a warm-up; epochs out of order are no stream
    assert alarms("Epoch 1: 412s\nEpoch 2: 305s\nEpoch 3: 301s\nEpoch 4: 306s") == []
    assert alarms("Epoch 3: 305s\nEpoch 1: 301s\nEpoch 2: 590s\nEpoch 5: 611s") == []
