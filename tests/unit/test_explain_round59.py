"""Classes of the fifty-ninth round (fresh_90, fresh_91), each read as a class: a node said to
come up short of GPUs or to show missing GPUs, an uncorrectable ECC error said of a GPU (the
GPU's, not the host's machine check), a hang whose clause ends before another thing is said
(`the training hangs and all GPUs show 99% utilization`)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_90", "0000", Category.GPU_HARDWARE, "said.gpu_lost"),
        ("fresh_90", "0001", Category.GPU_HARDWARE, "said.gpu_lost"),
        ("fresh_91", "0019", Category.HANG, "stalled.said"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("After the BIOS update node-4 came up short 2 GPUs.", Category.GPU_HARDWARE),
        ("dgx-07 has missing GPUs since the reboot, only 6 of 8 listed.", Category.GPU_HARDWARE),
        (
            "GPU 3 reports an Uncorrectable ECC Error and every job on it fails.",
            Category.GPU_HARDWARE,
        ),
        ("Memory #0x87 | Uncorrectable ECC | Asserted", Category.HOST_HARDWARE),
        ("the job hangs, and memory stays at 40 GiB on every rank", Category.HANG),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Are any GPUs missing on the new nodes, or is it the driver?",
        "accuracy has been stuck at 50% and loss too",
        "the loss plateaued, and GPU utilization stays at 99%",
    ]
)
