"""Classes of the sixty-second round (fresh_98 to fresh_100), each read as a class: cuda-gdb's
exceptions and compute-sanitizer's reports (the kernel's own code), a job that works once NCCL
or UCX is told to avoid InfiniBand or to pin its GID index (the fabric's path), a process said
to be killed by the system (the host's memory), an ECC error said to be the machine's problem,
a NaN loss told as a noun or of several losses at once, a drive said to lack space, a job at a
fraction of its speed, a hang in Chinese told with no error and no progress."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_98", "0015", Category.NETWORK, "said.network_setting_fixes"),
        ("fresh_98", "0016", Category.NETWORK, "said.network_setting_fixes"),
        ("fresh_99", "0009", Category.GPU_HARDWARE, "said.ecc_is_hardware"),
        ("fresh_99", "0015", Category.GPU_APPLICATION, "cuda.debugger_exception"),
        ("fresh_99", "0016", Category.GPU_APPLICATION, "cuda.debugger_exception"),
        ("fresh_100", "0000", Category.HANG, "stalled.said_elsewhere"),
        ("fresh_100", "0005", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_100", "0006", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_100", "0007", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_100", "0011", Category.HOST_MEMORY, "said.killed_by_system"),
        ("fresh_100", "0013", Category.HOST_STORAGE, "said.disk_trouble"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "Program received signal CUDA_EXCEPTION_14, Warp Illegal Address.",
            Category.GPU_APPLICATION,
        ),
        ("========= Invalid __shared__ write of size 4 bytes", Category.GPU_APPLICATION),
        (
            "With NCCL_IB_DISABLE=1 our all-reduce runs fine, with IB it fails after init.",
            Category.NETWORK,
        ),
        ("It worked once we set NCCL_IB_GID_INDEX=3 on every node.", Category.NETWORK),
        ("The trainer was terminated by the OOM killer at epoch 3.", Category.HOST_MEMORY),
        ("We ran out of disk space while writing the step-4000 checkpoint.", Category.HOST_STORAGE),
        ("NaN loss appeared at step 12000 on the 7B run.", Category.NUMERICAL),
        ("Since Monday the jobs run at a fraction of their usual throughput.", Category.STRAGGLER),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "========= ERROR SUMMARY: 0 errors",
        "How do I avoid a NaN loss?",
        "If the disk has not enough space, the checkpoint is skipped with a warning.",
        "Set NCCL_IB_DISABLE=1 only if your nodes have no InfiniBand.",
    ]
)
