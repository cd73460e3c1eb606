"""Classes of the fifty-seventh round (fresh_85, fresh_86), each read as a class: a bare
`Killed` in a paste's emphasis, a GPU driver's own hardware-error report (amdgpu), three GPUs
busy and one at 0 %, and, silent, a run slow only in its first epoch (a warm-up); with
review41's classes: TensorFlow's and XLA's GPU OOM, lspci's GPU at `rev ff`, and, silent, an
input whose first lines announce a change (a pull request, release notes, a closing comment)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_85", "0009", Category.HOST_MEMORY, "host.killed"),
        ("fresh_85", "0016", Category.GPU_HARDWARE, "host.gpu_hardware_error"),
        ("fresh_86", "0004", Category.STRAGGLER, "straggler.one_member_idle"),
    ]
)


def test_the_round_s_warm_up_stays_silent() -> None:
    assert alarms(corpus_text("fresh_86", "0022")) == []


test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("step 900 loss 2.1\n__Killed__", Category.HOST_MEMORY),
        (
            "amdgpu 0000:c1:00.0: {2}[Hardware Error]: aca entry[01].STATUS=0x98000800003e0000",
            Category.GPU_HARDWARE,
        ),
        ("Two GPUs at 100% and one at 0% for the rest of the run.", Category.STRAGGLER),
        # (review41's classes) TensorFlow's and XLA's GPU OOM, lspci's GPU at rev ff
        (
            "ResourceExhaustedError: OOM when allocating tensor with shape[8,512,512] and type "
            "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
            Category.GPU_OOM,
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
            "to allocate 8589934592 bytes.",
            Category.GPU_OOM,
        ),
        (
            "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev ff)",
            Category.GPU_HARDWARE,
        ),
        # a bug report's template quoting its error is a report
        (
            "## Describe the bug\nTraining dies after 2 h:\n"
            "[   88.2] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.",
            Category.GPU_HARDWARE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Only the first epoch is very slow (the cache is built), the others take 40 s each.",
        "Training is slower only during the first few steps while cudnn benchmarks kernels.",
        # (review41's class) an input whose first lines announce a change quotes history
        "## PR #12: retry on transient IB errors\n### Motivation\nJobs failed with:\n"
        "NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4012> with status=12 opcode=0",
        "# Release notes - agent 2.0\n### Resolved issues\n- Nodes no longer stop when the kernel "
        "logs `nfs: server x not responding, still trying` after a remount.",
        "Closing this: verified fixed on main.\nBefore the fix, rank 0 printed:\n"
        "[E ProcessGroupNCCL.cpp:1182] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=BARRIER) ran for 600043 milliseconds before timing out.",
        # TensorFlow's allocator warning it recovers from
        "W bfc_allocator.cc:290] Allocator (GPU_0_bfc) ran out of memory trying to allocate "
        "2.1GiB with freed_by_count=0. The caller indicates that this is not a failure, but may "
        "mean that there could be performance gains if more memory were available.",
    ]
)
