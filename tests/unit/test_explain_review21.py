"""Producers' catalogues and people's reports written blind (tests/fixtures/explain_review/
review21_*.json): seven reviewers who saw neither the rules nor the corpus each built a set for
one family from its producer's own source (the Linux kernel's EFA, ENA, mlx5, NVMe, block, ext4,
XFS, btrfs, md, dm, NFS, sunrpc, lockd, ceph, MCE, EDAC, GHES, AER, DPC and pciehp prints;
libfabric, aws-ofi-nccl, rdma-core, UCX, Open MPI, NCCL; NVIDIA's open kernel modules, NVML and
DCGM; Lustre, BeeGFS, GPFS; torch.distributed, gloo, the OOM killers of the kernel, systemd,
earlyoom, Kubernetes, Slurm and Ray), healthy lines of the same producers included; an eighth
wrote 140 one-line reports of speed from many kinds of GPU work (mining rigs, detection,
speech, RL, diffusion, inference servers, simulations, render farms) in nine languages.

Read before any rule was written for them: EFA/ENA 43/60, NFS and parallel filesystems 48/67,
RDMA and mlx5 56/67, crashes, torch.distributed and OOM 78/87, storage 73/79, NVIDIA 60/73 (65/73
with the switch's faults filed under the network, as the corpus files them), host 64/78, speed
96/140. What is still missed is listed with its reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/explain_review"
_SETS = ("efa", "nfs", "rdma", "proc", "storage", "nvidia", "host", "speed")
KNOWN_LIMITS = {
    "r21spd-084": "members as a range (`blades 21-24 ... every other blade`)",
    "r21nfs-032": "libceph's `session lost, hunting for new mon`: a monitor failover, routine",
    "r21rdma-022": "an mlx5 link down once: a link down once or twice is a boot",
    "r21proc-033": "a young TCPStore retry (`try=0`): the store's first retries are silent",
    "r21proc-047": "c10d's server socket timed out and `will retry`: a retry, silent",
    "r21nv-040": "DCGM's `Only N NvLinks are up`: printed on GPUs without NVLink too",
    "r21nv-055": "nvidia-smi's CSV: the value is on the row below its field name",
    "r21nv-056": "nvidia-smi -q's link width, its maximum and current a line apart",
    "r21host-069": "a link that trained slower only: idle GPUs lower their PCIe speed",
}


def _records() -> list[dict[str, str]]:
    return [
        r for name in _SETS for r in json.loads((_FIXTURES / f"review21_{name}.json").read_text())
    ]


def _read(benign: bool) -> list[dict[str, str]]:
    return [
        r for r in _records() if (r["label"] == "benign") is benign and r["id"] not in KNOWN_LIMITS
    ]


@pytest.mark.parametrize("case", _read(benign=False), ids=lambda c: c["id"])
def test_each_fault_is_read_as_its_category(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category(case["label"]), case["why"]


@pytest.mark.parametrize("case", _read(benign=True), ids=lambda c: c["id"])
def test_each_healthy_line_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


def test_the_known_limits_are_still_misses() -> None:
    """A reader that learns one moves it out of the list."""
    known = [r for r in _records() if r["id"] in KNOWN_LIMITS]
    assert len(known) == len(KNOWN_LIMITS)
    for case in known:
        found = first(case["text"])
        assert found is None or found[0].value != case["label"], case["id"]


@pytest.mark.parametrize(
    "text",
    [
        # the prefix said once, by the member's figure or the peers'
        "Today the hash rate of card 4 fell to 20 MH/s while the others stay at 31.",
        "T-Rex miner shows GPU5 at 25 MH/s while its identical neighbours are at 50",
        "Burn-in test: 7 of the 8 A100s do ~250 TFLOPS, GPU 2 only manages ~140",
        "Ethash hashrate on card 3 drifts down from 62 to 48 MH/s over several hours",
    ],
)
def test_a_rate_prefix_said_once_applies_to_its_bare_neighbour(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == Category.STRAGGLER


@pytest.mark.parametrize(
    "text",
    [
        # no prefix anywhere: a count of peers is no rate (`the other 4 are in maintenance`)
        "Throughput: yesterday 4200 tokens/s on 8 GPUs, today 2100 tokens/s on 4 GPUs "
        "(the other 4 are in maintenance).",
        "GPU5 at 25 tokens/s while its identical neighbours are at 25",
    ],
)
def test_a_bare_number_takes_no_prefix_the_sentence_does_not_say(text: str) -> None:
    found = first(text)
    assert found is None or found[0] != Category.STRAGGLER
