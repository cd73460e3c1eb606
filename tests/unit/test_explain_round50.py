"""Classes of the fiftieth round's development misses (fresh_66, fresh_67), each read as a
class: one or two GPUs at 0 % beside the others at 100 %, only one of several GPUs working, a
utilisation that became low later on, NVMe timeouts under the PCI device's prefix (older
kernels), and the kernel NFS server that cannot start."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, round_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_66", "0006", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_66", "0016", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_66", "0024", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_67", "0002", Category.HOST_STORAGE, "storage.nfs"),
        ("fresh_67", "0019", Category.HOST_STORAGE, "storage.nvme"),
        ("fresh_67", "0020", Category.HOST_STORAGE, "storage.nvme"),
    ]
)


@pytest.mark.parametrize(
    "text",
    [
        # the speaker's setting, one GPU by design
        "GPU utilization became low when I reduced the batch size.",
        "I only use 1 GPU, so only 1 of 8 GPUs is working.",
        # the NFS server started, an NVMe controller that came up
        "Mar 06 16:46:45 pc8 systemd[1]: Started NFS server and services.",
        "nvme 0000:01:00.0: enabling device (0000 -> 0002)",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
