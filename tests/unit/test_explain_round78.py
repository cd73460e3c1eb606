"""Classes of the seventy-eighth round (fresh_145 to fresh_147), scored blind at a864209: a BMC's
severity sensor in a non-recoverable or critical state (`Processor CPU Machine Chk | Transition
to Non-recoverable`), a node health check's GPU copy bandwidth under its floor, a GPU's fan said
to fail, a GPU's memory said exhausted in a sentence, the NIC's vendor code of a failed work
completion however the library words it, T-Rex's NVML query that returns 15 (GPU lost), a NaN
said to appear in a grad norm (and the others said normal judge nothing), a `name value`
metrics line with a NaN grad norm, multipath -ll's older `[failed][ready]` path, a rate said
several times lower, and a program that refuses its command line (`Unknown option: ...`)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_145", "0010", Category.GPU_HARDWARE, "nvml.gpu_lost"),
        ("fresh_145", "0013", Category.GPU_OOM, "said.gpu_oom"),
        ("fresh_145", "0016", Category.GPU_DEGRADED, "monitor.gpu_bandwidth_check"),
        ("fresh_145", "0022", Category.APPLICATION, "process.bad_arguments"),
        ("fresh_145", "0027", Category.GPU_HARDWARE, "monitor.gpu_fan_failed"),
        ("fresh_146", "0009", Category.HOST_HARDWARE, "host.bmc_fault"),
        ("fresh_146", "0011", Category.HOST_STORAGE, "storage.multipath"),
        ("fresh_146", "0013", Category.NETWORK, "rdma.completion_error"),
        ("fresh_147", "0005", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_147", "0006", Category.NUMERICAL, "training.nonfinite_grad_norm"),
        ("fresh_147", "0016", Category.STRAGGLER, "straggler.slowness_in_words"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "12 | 03/02/2024 | 11:04:51 | Processor #0x01 | Transition to Critical from less "
            "severe | Asserted",
            Category.HOST_HARDWARE,
        ),
        ("We hit a CUDA OOM at step 300 after raising the batch size.", Category.GPU_OOM),
        ("The fan failure on GPU 2 made it overheat within minutes.", Category.GPU_HARDWARE),
        (
            "[2023-05-01 10:00:00] [kv-worker:1] UCX  ERROR send completion with error on "
            "mlx5_0:1/IB: remote access error, vendor_err 0x88",
            Category.NETWORK,
        ),
        ("step 900 | reward_loss 0.3 | critic_grad_norm inf | lr 1e-5", Category.NUMERICAL),
        ("We see Xid 79 on GPU 3, the other GPUs are normal.", Category.GPU_HARDWARE),
        ("train.py: error: unrecognized arguments: --grad-acum-steps 8", Category.APPLICATION),
        ("The throughput on 4 nodes is 3 times lower than on one node.", Category.STRAGGLER),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "42 | 03/02/2024 | 11:04:51 | Processor #0x01 | Transition to OK | Asserted",
        "12 | 03/02/2024 | 11:04:51 | Processor #0x01 | Transition to Non-recoverable | Deasserted",
        "If a CUDA out of memory occurs, lower the batch size.",
        "SUCCESS:  nhc:  Health check passed:  check_gpu_bw: P2P test on GPU 1 to GPU 0 passed.",
        "step 900 | reward_loss 0.3 | critic_grad_norm 1.27 | lr 1e-5",
        "The loss is lower than that of the baseline run.",
    ]
)
