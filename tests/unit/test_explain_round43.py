"""Classes of the forty-third round's development misses (fresh_53), each read as a class: a
queue pair that would not move to its next state and Open MPI's help text on one that could not
be made, UCX's verbs call that failed with a space before its colon, a crash handler's SIGBUS
(`Caught signal 7 (Bus error: ...)`), GPFS said to have unmounted, and dcgmi's `Fail - All`
quoted by a person."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, record_read_as


@pytest.mark.parametrize(
    ("number", "category", "rule"),
    [
        ("0000", Category.NETWORK, "rdma.verbs_failed"),
        ("0001", Category.NETWORK, "rdma.verbs_failed"),
        ("0004", Category.NETWORK, "rdma.verbs_failed"),
        ("0006", Category.NETWORK, "rdma.verbs_failed"),
        ("0012", Category.HOST_STORAGE, "netfs.data_lost"),
        ("0019", Category.HOST_MEMORY, "process.sigbus"),
        ("0024", Category.GPU_HARDWARE, "gpu.dcgm_fail"),
    ],
)
def test_each_class_of_the_round_is_read(number: str, category: Category, rule: str) -> None:
    assert record_read_as("fresh_53", number) == (category, rule)


@pytest.mark.parametrize(
    "text",
    [
        # dcgmi's own table row on PCIe cards (DCGM's link-0 false alarm), a test that passed
        "| PCIe                      | Fail - All                                     |\n"
        "| Warning                   | GPU 0GPU 0's NvLink link 0 is currently down   |",
        "| PCIe | Pass - All |",
        # a queue pair moved to its state, GPFS mounted again
        "mlx5_0: modified UD QP to INIT, RTR, RTS",
        "GPFS: file system fs1 mounted on /gpfs/fs1",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
