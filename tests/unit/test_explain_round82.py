"""Classes of the eighty-second round (fresh_157 to fresh_159), scored blind at 5dbe836: a health
watch's finding the text calls a false positive (the development false alarm: an IMEX daemon not
ready on a single-node NVSwitch box) is no fault, XLA's failed GPU allocation, Apple Metal's
out-of-memory command buffer, the CUDA driver API's `CUDA_ERROR_OUT_OF_MEMORY`, zsh's report of a
killed job, a NaN loss in Chinese with a word between, and memtestG80's count of a GPU's memory
errors."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_157", "0000", Category.GPU_OOM, "cuda.oom"),
        ("fresh_157", "0010", Category.GPU_OOM, "cuda.oom"),
        ("fresh_157", "0017", Category.NUMERICAL, "training.nan_loss"),
        ("fresh_157", "0026", Category.GPU_OOM, "cuda.oom"),
        ("fresh_157", "0029", Category.HOST_MEMORY, "host.killed"),
        ("fresh_158", "0006", Category.GPU_HARDWARE, "gpu.memory_test_errors"),
        ("fresh_158", "0011", Category.BENIGN, "said.misread"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request "
            "for 2.00GiB (2147483648B) on device ordinal 3",
            Category.GPU_OOM,
        ),
        ("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY", Category.GPU_OOM),
        ("[2]  + 9911 killed     torchrun --nproc_per_node 8 train.py", Category.HOST_MEMORY),
        ("训练到第三个epoch时loss直接变成了nan", Category.NUMERICAL),
        ("Test iteration 12 (GPU 1, 256 MiB): 17 errors so far", Category.GPU_HARDWARE),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Test iteration 50 (GPU 0, 128 MiB): 0 errors so far",
        "ErrorCode:DCGM_FR_IMEX_UNHEALTHY GPU:0 IMEX daemon status is -3 (not READY)\nThis is a "
        "false positive: IMEX does not run on a single-node box.",
    ]
)

test_the_development_floors_hold = round_tests(
    [
        # (for the dist and storage-fs development floors this round took under 0.85)
        ("fresh_140", "0009", Category.HANG, "stalled.at_a_place"),
        ("fresh_116", "0004", Category.HOST_STORAGE, "storage.scsi_error"),
        ("fresh_126", "0019", Category.HOST_STORAGE, "monitor.filesystem_full"),
    ]
)

test_the_mends_keep_their_look_alikes_silent = silence_tests(
    ["ディスクがいっぱいではない。", "All GPUs are at 100% and none is at 0% any more."]
)

test_the_review_look_alikes_stay_silent = silence_tests(
    [
        # (a review of the session's classes found these; each raised an alarm before its mend)
        "poll_cq: wc status=0 (success) vendor_err=0x0",
        "nvidia-smi: GPU 0 fan speed 30%, no fan error reported.",
        "GPU fan failure detection is enabled in the exporter.",
        "如果磁盘空间不足，训练会失败。",
        "ディスクが一杯になる前に古いチェックポイントを削除してください。",
        "空き容量が不足している場合は古いチェックポイントを削除してください。",
        "Note: NVML is not available on macOS, so GPU metrics are disabled.",
        "This benchmark must be run on at least 2 nodes.",
        'UnkillableStepTimeout: the node is then drained with the reason "Kill task failed".',
    ]
)

test_an_unrelated_false_positive_leaves_the_finding = read_as_tests(
    [
        (
            "ErrorCode:DCGM_FR_IMEX_UNHEALTHY GPU:0 IMEX daemon status is -3 (not READY)\nOur CI "
            "lint flagged the pull request; that is a false positive.",
            Category.NETWORK,
        )
    ]
)
