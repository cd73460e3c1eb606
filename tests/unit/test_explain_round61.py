"""Classes of the sixty-first round (fresh_95 to fresh_97), each read as a class: a job said to
work on one node and fail across nodes (the network; NCCL's timeouts follow from it), an NCCL
timeout told in words, a gradient norm or a divergence said to be NaN, df's row for a full
/dev/shm; and what is no fault: a kernel crash provoked on purpose (lkdtm, SysRq), a NaN grad norm
once before finite ones (a step fp16's loss scaler skipped), a slowness given as what a setting
may bring (`it may be slower`), a first inference slow from kernel initialisation, and a
question whether something is normal, which says nothing is (`Is this normal?`)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import first, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_95", "0004", Category.HANG, "said.nccl_timeout"),
        ("fresh_95", "0015", Category.HOST_MEMORY, "host.shm_full"),
        ("fresh_95", "0020", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_95", "0022", Category.NETWORK, "said.multinode_only"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "Training runs fine on a single node, but with 2 nodes it hangs at the first "
            "allreduce.\n[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed "
            "out.",
            Category.NETWORK,
        ),
        ("After about an hour we hit an NCCL timeout on rank 5.", Category.HANG),
        ("From step 3000 on the gradient norm is NaN on every step.", Category.NUMERICAL),
        ("shm             64M   64M     0 100% /dev/shm", Category.HOST_MEMORY),
        (
            "grad_norm: nan\ngrad_norm: nan\ngrad_norm: nan\ngrad_norm: 1.92",
            Category.NUMERICAL,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "[  757.732740] lkdtm: Performing direct entry HARDLOCKUP\n"
        "[  806.732804] NMI watchdog: Watchdog detected hard LOCKUP on cpu 87",
        "step 1 | loss: 2.31 | grad_norm: nan\nstep 2 | loss: 2.25 | grad_norm: 4.10\n"
        "step 3 | loss: 2.20 | grad_norm: 3.87",
        "The row split has so much overhead that it may be slower, depending on the interconnect.",
        "The first image is slow because of CUDA kernel initialization; run a few dummy inputs.",
        "tmpfs            24G  1.9G   22G   8% /dev/shm",
        "If the grad norm is NaN, the scaler skips the step and lowers the scale.",
    ]
)


def test_a_nan_grad_norm_that_repeats_stays_a_finding() -> None:
    """Only a NaN seen once before finite norms is a skipped step; one that repeats diverged."""
    once = "grad_norm: nan\ngrad_norm: 2.1"
    twice = "grad_norm: nan\ngrad_norm: nan\ngrad_norm: 2.1"
    assert first(once) is None
    found = first(twice)
    assert found is not None and found[0] == Category.NUMERICAL
