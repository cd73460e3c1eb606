"""Classes of the eightieth round (fresh_151 to fresh_153), scored blind at 3f279fc: a constant's
value in code said against another (`defined as 20GB/s instead of 25GB/s`, the development false
alarm) is no slowdown, PaddlePaddle's out-of-memory error in Chinese, the block layer's `device
offline error` of a request, PyTorch's `failure detected by watchdog at work sequence id`, a hang
said in a collective whoever says it, and a store-based barrier that counted more workers than
the world (the launch's set-up)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_151", "0003", Category.GPU_OOM, "cuda.oom"),
        ("fresh_152", "0005", Category.HOST_STORAGE, "storage.scsi_error"),
        ("fresh_153", "0004", Category.HANG, "hang.ops_failed"),
        ("fresh_153", "0012", Category.HANG, "stalled.at_a_place"),
        ("fresh_153", "0022", Category.APPLICATION, "dist.barrier_overcounted"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("无法在GPU 1上分配128.000000MB内存", Category.GPU_OOM),
        (
            "blk_update_request: recoverable transport error, dev sdc, sector 2048 op 0x0:(READ)",
            Category.HOST_STORAGE,
        ),
        ("The job is stuck in the all_gather after the first eval.", Category.HANG),
        (
            "Timed out initializing process group in store based barrier on rank: 3, for key: "
            "store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)",
            Category.APPLICATION,
        ),
        ("the step takes 20 s instead of 5 s since yesterday", Category.STRAGGLER),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "The timeout is set to 600 s instead of 1800 s in our launcher.",
        "To avoid hangs in allreduce, set NCCL_ASYNC_ERROR_HANDLING=1.",
        "Timed out initializing process group in store based barrier on rank: 0, for key: "
        "store_based_barrier_key:1 (world_size=4, worker_count=4, timeout=0:02:00)",
    ]
)


def test_the_false_alarm_of_the_round_is_silent() -> None:
    """NCCL's NVLink bandwidth constant asked about (`defined as 20GB/s instead of 25GB/s. Why is
    this?`) raises no alarm."""
    assert alarms(corpus_text("fresh_151", "0023")) == []
