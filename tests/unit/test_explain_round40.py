"""Classes of the thirty-ninth and fortieth rounds' development misses (fresh_49*, fresh_50*),
each read as a class: a node with no usable RDMA device (rdma-core, perftest, the RDMA
shared-device plugin), DCGM's NVML start that failed, the automounter's request that timed out,
rpcinfo finding no NFS program, EDAC's UE page line, a time quoted in seconds that `goes up`, a
training time that keeps growing in Chinese, and a rate that `goes back to` its figure (a dip
that ended, no slowdown)."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, record_read_as


@pytest.mark.parametrize(
    ("batch", "number", "category", "rule"),
    [
        ("fresh_49b", "0021", Category.NETWORK, "rdma.no_device"),
        ("fresh_50b", "0004", Category.NETWORK, "rdma.no_device"),
        ("fresh_50b", "0005", Category.NETWORK, "rdma.no_device"),
        ("fresh_50b", "0006", Category.NETWORK, "rdma.no_device"),
        ("fresh_50", "0011", Category.STRAGGLER, "straggler.slowness_in_words"),
        # DCGM's NVML start that failed, by its error (unknown: the GPU; no library: the node)
        ("fresh_49", "0003", Category.GPU_HARDWARE, "nvml.unknown_error"),
        ("fresh_49", "0005", Category.APPLICATION, "nvml.library_missing"),
        ("fresh_49b", "0006", Category.HOST_STORAGE, "storage.nfs"),  # autofs timed out
        ("fresh_49b", "0007", Category.HOST_STORAGE, "storage.nfs"),  # no NFS program
        ("fresh_49b", "0024", Category.HOST_HARDWARE, "host.mce_uncorrected"),
        ("fresh_49c", "0019", Category.STRAGGLER, "straggler.slowness_in_chinese"),
    ],
)
def test_each_class_of_the_rounds_is_read(
    batch: str, number: str, category: Category, rule: str
) -> None:
    assert record_read_as(batch, number) == (category, rule)


@pytest.mark.parametrize(
    "text",
    [
        corpus_text("fresh_50", "0004"),  # a dip that goes back to its rate
        # the device plugin finding its devices, perftest's server waiting
        '2025/07/26 20:29:31 exposing "8" devices',
        " Waiting for client to connect... *",
        # a rate that will not go back is no explanation (fresh_34-0013 stays a slowdown)
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


def test_a_rate_that_will_not_go_back_is_still_a_slowdown() -> None:
    assert alarms(corpus_text("fresh_34", "0013")) == ["straggler.slowness_in_words"]
