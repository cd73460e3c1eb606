"""Classes of the forty-second round's development misses and its one false alarm (fresh_52*),
each read as a class: Spectrum Scale losing every connection to another node, the device
plugin's newer Xid health event, UCX failing to create a queue pair, an InfiniBand tool's
management query that got no answer, CUDA's `system not yet initialized` (802) on an NVSwitch
node, a Chinese slowdown followed by a question whether it is normal, an English slowdown after
a stretch of the run; and a server's prefill throughput averaged over its logging interval, which
follows the prompts that arrived and is no speed (the false alarm, an evaluation record read to
fix it: not blind). CUDA's 802 is the node's setup (`application`) since session 29, and its
record was relabelled with the corpus."""

from __future__ import annotations

import pytest

from diagnosis.explain.work_figures import work_figures
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, record_read_as


@pytest.mark.parametrize(
    ("batch", "number", "category", "rule"),
    [
        ("fresh_52", "0019", Category.NETWORK, "net.gpfs_connections_down"),
        ("fresh_52b", "0000", Category.GPU_APPLICATION, "k8s.device_plugin_xid"),
        ("fresh_52b", "0003", Category.NETWORK, "rdma.verbs_failed"),
        ("fresh_52b", "0004", Category.NETWORK, "rdma.verbs_failed"),
        ("fresh_52b", "0008", Category.NETWORK, "rdma.mad_query_failed"),
        ("fresh_52b", "0013", Category.APPLICATION, "fabric.cuda_not_ready"),
        ("fresh_52c", "0020", Category.STRAGGLER, "straggler.slowness_in_chinese"),
    ],
)
def test_each_class_of_the_round_is_read(
    batch: str, number: str, category: Category, rule: str
) -> None:
    assert record_read_as(batch, number) == (category, rule)


def test_a_servers_prefill_throughput_is_no_speed() -> None:
    line = (
        "INFO 02-04 10:01:59 [loggers.py:257] Engine 000: Avg prompt throughput: 7109.8 tokens/s, "
        "Avg generation throughput: 251.9 tokens/s, Running: 12 reqs, Waiting: 0 reqs"
    )
    figures = work_figures(line)
    assert figures
    assert all(f.seconds == pytest.approx(1 / 251.9) for f in figures)
    assert alarms(corpus_text("fresh_52c", "0003")) == []


@pytest.mark.parametrize(
    "text",
    [
        # it is normal, said (not asked); a slowness after the model loads; CUDA 802 on a box
        # the text says has no NVSwitch; a clean ibqueryerrors; a tool's healthy event
        "每100个batch的训练时间越来越长，这是正常的，因为数据变长了",
        "Inference is slow after 5 minutes of loading the model.",
        "Error 802: system not yet initialized on our PCIe L40S box (no NVSwitch)",
        "ibqueryerrors: 0 errors found on 36 ports",
        "I0409 23:33:27.290936 1 device_health.go:240] Ignoring XID=43 health event: not critical",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    "text",
    [
        "I am experiencing inference speed slowdown when running our scripts. The slowdown "
        "usually happens after half an hour.",
        "Inference gets slower after 2 hours of serving.",
    ],
)
def test_a_slowdown_after_a_stretch_of_the_run_is_read(text: str) -> None:
    assert alarms(text) == ["straggler.slowness_in_words"]


def test_a_persons_rates_over_lines_that_fell_are_read() -> None:
    # an earlier round's development miss: the rate before on one line, after on the next
    assert record_read_as("fresh_50", "0001") == (Category.STRAGGLER, "slowdown.rate_fell")


@pytest.mark.parametrize(
    "text",
    [
        # two setups over two lines, no time between them; a fall the speaker explains
        "On Windows I get 62 MH/s with this card and driver.\n"
        "On Linux it drops to 25 MH/s with the same card.",
        "Yesterday the rig did 62 MH/s on every card.\n"
        "Today it dropped to 25 MH/s because we switched to dual mining, as expected.",
    ],
)
def test_rates_over_lines_without_a_fall_in_time_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
