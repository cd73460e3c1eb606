"""Classes of the thirty-eighth round's development misses (fresh_48*), each read as a class:
NVML's version mismatch and the calls a GPU does not support, a machine-check bank's raw status
and a socket's error counts, Fabric Manager's service that would not start, gdb's top frame on a
null pointer in NCCL, RDMA peers that cannot be reached, a memory registration refused for the
locked-memory limit (the RDMA path's), a stale handle in any case, and slowdowns told as a time
that rises gradually, as tokens a second, against the other epochs, or in Chinese."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first, record_read_as


@pytest.mark.parametrize(
    ("batch", "number", "category", "rule"),
    [
        ("fresh_48", "0002", Category.APPLICATION, "nvml.version_mismatch"),
        ("fresh_48", "0003", Category.APPLICATION, "nvml.version_mismatch"),
        ("fresh_48", "0026", Category.APPLICATION, "nvml.version_mismatch"),
        ("fresh_48", "0018", Category.APPLICATION, "nvml.not_supported"),
        ("fresh_48", "0010", Category.HOST_HARDWARE, "host.memory_error_counts"),
        ("fresh_48", "0013", Category.HOST_HARDWARE, "host.mc_status"),
        ("fresh_48", "0024", Category.NETWORK, "fabric.fm_not_started"),
        ("fresh_48b", "0005", Category.APPLICATION, "process.nccl_segfault"),
        ("fresh_48b", "0013", Category.NETWORK, "rdma.peer_unreachable"),
        ("fresh_48b", "0014", Category.NETWORK, "rdma.peer_unreachable"),
        ("fresh_48b", "0016", Category.NETWORK, "rdma.memlock"),
        ("fresh_48b", "0026", Category.HOST_STORAGE, "host.io_error"),
        ("fresh_48c", "0002", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_48c", "0004", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_48c", "0006", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_48c", "0016", Category.STRAGGLER, "straggler.slowness_in_chinese"),
    ],
)
def test_each_class_of_the_round_is_read(
    batch: str, number: str, category: Category, rule: str
) -> None:
    assert record_read_as(batch, number) == (category, rule)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        # the kernel module's words for the same half-finished upgrade
        (
            "NVRM: API mismatch: the client has the version 550.127.05, but this kernel module "
            "has the version 550.90.07.",
            Category.APPLICATION,
            "nvml.version_mismatch",
        ),
        # a bank's status with VAL but not UC: corrected, still the host's hardware
        ("IA32_MC5_STATUS=0x8C00004000010090", Category.HOST_HARDWARE, "host.mc_status"),
        (
            "DIMM_A1: Correctable: 0, Uncorrectable: 2",
            Category.HOST_HARDWARE,
            "host.memory_error_counts",
        ),
        (
            "Dec 06 10:01:02 gpu-a17 systemd[1]: Failed to start NVIDIA fabric manager service.",
            Category.NETWORK,
            "fabric.fm_not_started",
        ),
        (
            "#0  0x00007f3b9a11b2c3 in ncclProxyProgress (proxyState=0x0) at proxy.cc:812",
            Category.APPLICATION,
            "process.nccl_segfault",
        ),
        (
            "ucp_worker.c:1783 UCX  ERROR mlx5_0: ibv_reg_mr() failed: Cannot allocate memory. "
            "Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)",
            Category.NETWORK,
            "rdma.memlock",
        ),
        (
            "the latency of every step is steadily increasing since the restore",
            Category.STRAGGLER,
            "straggler.slowness_in_words",
        ),
        (
            "training tps drops from 3,100 to 1,200 after the first eval and slows down further",
            Category.STRAGGLER,
            "straggler.slowness_in_words",
        ),
        (
            "训练到第二天之后，速度变得超慢，每个 step 从 0.4s 涨到了 1.5s",
            Category.STRAGGLER,
            # (its figures, read since figures next to CJK characters are: the rule of times)
            "slowdown.step_time_rose",
        ),
    ],
)
def test_the_classes_hold_beyond_the_round_s_records(
    text: str, category: Category, rule: str
) -> None:
    found = first(text)
    assert found is not None, text
    assert found[:2] == (category, rule)


@pytest.mark.parametrize(
    "text",
    [
        # a bank without VAL holds nothing; counts of zero, and a few corrected errors
        "IA32_MC3_STATUS=0x0000000000000000",
        "Socket 0, Correctable 0, Uncorrectable 0",
        "Socket 1, Correctable 12, Uncorrectable 0",
        # gdb's frame in NCCL with real pointers: a waiting process, no crash
        "#0  0x00007f3b9a11b2c3 in ncclCommInitRank (comm=0x7f0c2c000b70, nranks=8) at "
        "init.cc:1290",
        # Fabric Manager started, and stopped on purpose
        "Dec 06 10:01:02 gpu-a17 systemd[1]: Started NVIDIA fabric manager service.",
        "Dec 06 10:05:40 gpu-a17 systemd[1]: nvidia-fabricmanager.service: Deactivated "
        "successfully.",
        # perftest's server waiting for its client
        "Waiting for client to connect... *",
        # a time that gradually decreases, and the latency said to be steady
        "the step time gradually decreases as the cache warms",
        "latency is steady at 41 ms per request",
        # a time normal now and then is the slowdown's gaps, but a normal time explained is not
        "训练速度正常，每个 step 0.4s，符合预期",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
