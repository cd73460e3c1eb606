"""Classes of the sixty-seventh round (fresh_112 to fresh_114), each read as a class: a trainer's
anomaly check on a loss that became infinite or NaN, GPT-NeoX's overflow monitor, NaNs that take
over a run, CTranslate2's CUDA out of memory, CUDA's invalid configuration argument, a fabric
said to drop packets or pause (the cause a slowdown beside it follows from), slurmd that will
not start on its configuration or a prolog path that is not there, a device plugin that cannot
register with the kubelet, one of the GPUs said to fail, a CUDA runtime newer than the driver,
and the firmware commands a monitor sends to NIC functions a note says are restricted."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_112", "0001", Category.NUMERICAL, "training.loss_nonfinite"),
        ("fresh_112", "0002", Category.NUMERICAL, "training.loss_nonfinite"),
        ("fresh_112", "0006", Category.NUMERICAL, "training.loss_scale_min"),
        ("fresh_112", "0007", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_112", "0013", Category.GPU_APPLICATION, "cuda.launch_failure"),
        ("fresh_112", "0018", Category.GPU_OOM, "cuda.oom"),
        ("fresh_113", "0007", Category.NETWORK, "said.lossy_fabric"),
        ("fresh_113", "0008", Category.NETWORK, "said.lossy_fabric"),
        ("fresh_113", "0022", Category.BENIGN, "nic.pf_access_restricted"),
        ("fresh_114", "0001", Category.APPLICATION, "slurm.slurmd_fatal"),
        ("fresh_114", "0002", Category.APPLICATION, "slurm.prolog_missing"),
        ("fresh_114", "0009", Category.APPLICATION, "slurm.slurmd_fatal"),
        ("fresh_114", "0013", Category.APPLICATION, "cuda.driver_too_old"),
        ("fresh_114", "0016", Category.APPLICATION, "k8s.plugin_unregistered"),
        ("fresh_114", "0019", Category.GPU_HARDWARE, "said.gpu_lost"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("FloatingPointError: Loss became infinite or NaN at iteration=12!", Category.NUMERICAL),
        ("After the warmup the gradient norm blew up and training diverged.", Category.NUMERICAL),
        ("RuntimeError: CUDA failed with error out of memory", Category.GPU_OOM),
        ("Our switch ports keep dropping packets under all-reduce load.", Category.NETWORK),
        ("Two of our GPUs are failing on node 12.", Category.GPU_HARDWARE),
        (
            "mlx5_core 0000:05:00.0: mlx5_cmd_out_err:835:(pid 18360): ACCESS_REG(0x805) "
            "op_mod(0x1) failed, status bad operation(0x2), syndrome (0x9a6171), err(-22)",
            Category.NETWORK,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "iperf3 node-3 -> node-7: 0% packet loss, 94.1 Gbits/sec, matches line rate.",
        "100000 packets transmitted, 100000 received, 0% packet loss, time 5123ms",
        "We enabled PFC on all switch ports last week.",
    ]
)
