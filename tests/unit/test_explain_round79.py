"""Classes of the seventy-ninth round (fresh_148 to fresh_150), scored blind at ad0eccb: a job
cancelled at its own time limit is no fault (the development false alarm: `slurm.time_limit` is
benign at info), HAMi's vGPU allocator past its limit, CUDA's 802 told with its number, libibverbs'
provider that refuses the kernel's ABI (the version mismatch explains the missing RDMA device),
mlx5 out of firmware command slots, LBNL NHC's InfiniBand check, NVMe's failed Identify
Descriptors, Ray's low-memory status and a rate said to reduce to a lower figure."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_148", "0007", Category.GPU_OOM, "cuda.oom"),
        ("fresh_148", "0022", Category.APPLICATION, "fabric.cuda_not_ready"),
        ("fresh_149", "0002", Category.APPLICATION, "software.version_mismatch"),
        ("fresh_149", "0003", Category.NETWORK, "nic.mlx5_cmd_timeout"),
        ("fresh_149", "0004", Category.NETWORK, "nic.mlx5_cmd_timeout"),
        ("fresh_149", "0006", Category.NETWORK, "monitor.fabric_port_check"),
        ("fresh_149", "0009", Category.HOST_STORAGE, "storage.nvme"),
        ("fresh_150", "0007", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_150", "0008", Category.HOST_MEMORY, "monitor.host_memory_low"),
        ("fresh_150", "0013", Category.BENIGN, "slurm.time_limit"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "[HAMI-core ERROR (pid:77 thread=1 allocator.c:53)]: Device 1 OOM 24000000000 / "
            "16000000000",
            Category.GPU_OOM,
        ),
        ("On the p5 nodes CUDA init fails with error 802 after the reboot.", Category.APPLICATION),
        (
            "libibverbs: Warning: Driver mlx5 does not support the kernel ABI of 7 (supports 1 "
            "to 1) for device /sys/class/infiniband/mlx5_0",
            Category.APPLICATION,
        ),
        (
            "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_2:1 is ACTIVE "
            "(LinkUp 400 Gb/sec).",
            Category.NETWORK,
        ),
        ("nvme nvme3: Identify Namespace failed (-5)", Category.HOST_STORAGE),
        (
            "The throughput reduces to about 40 samples/s once a second node joins.",
            Category.STRAGGLER,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "SUCCESS:  nhc:  Health check passed:  check_hw_ib:  IB port mlx5_2:1 is ACTIVE.",
        "Memory usage on this node: 2.1/62.5 GiB",
        "slurmstepd: error: *** JOB 77 ON gpu-a01 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME "
        "LIMIT ***",
    ]
)
