"""Classes of the seventieth round (fresh_121 to fresh_123), each read as a class: NVML's GPU
lost by its status number, a miner's GPU without the memory it needs, the CUDA driver API's
illegal address, JuiceFS' object-store timeouts, a shared filesystem said to fail on a
cluster's status page, a published speed the speaker cannot reach, more GPUs named by their
model and slower, and the two evaluation false alarms read as classes: a port down beside an
active port of the same HCA (a spare port, `unknown` as the corpus files it) and a slowdown
counter that reads zero."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_121", "0015", Category.STRAGGLER, "slowdown.more_devices_slower"),
        ("fresh_121", "0016", Category.STRAGGLER, "told.below_published"),
        ("fresh_122", "0001", Category.HOST_STORAGE, "said.netfs_failed"),
        ("fresh_122", "0008", Category.HOST_STORAGE, "netfs.server_wait"),
        ("fresh_122", "0016", Category.HOST_STORAGE, "said.netfs_failed"),
        ("fresh_122", "0022", Category.HOST_STORAGE, "said.netfs_failed"),
        ("fresh_122", "0023", Category.HOST_STORAGE, "said.netfs_failed"),
        ("fresh_123", "0010", Category.GPU_HARDWARE, "nvml.gpu_lost"),
        ("fresh_123", "0012", Category.GPU_OOM, "cuda.oom"),
        ("fresh_123", "0022", Category.GPU_APPLICATION, "cuda.illegal_address"),
    ]
)

_PORTS = "CA '{ca}'\n\tPort 1:\n\t\tState: {one}\n\t\tPhysical state: {phys}\n"

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("pynvml: NVML call failed with error 15 on GPU 3", Category.GPU_HARDWARE),
        ("GPU #2: not enough free memory to mine ethash", Category.GPU_OOM),
        ("CUDA_ERROR_ILLEGAL_ADDRESS in cuMemcpyDtoH", Category.GPU_APPLICATION),
        (
            "2024/05/01 10:00:00.000000 juicefs[12] <ERROR>: flush 1234 timeout after waited 5m0s",
            Category.HOST_STORAGE,
        ),
        (
            "Our Lustre file system is down since this morning, jobs cannot start.",
            Category.HOST_STORAGE,
        ),
        (
            "There are issues with the GPFS storage system, expect slow file access.",
            Category.HOST_STORAGE,
        ),
        ("We are unable to reach the MFU reported in the paper on 64 H100s.", Category.STRAGGLER),
        (
            "With one H100 it runs at 2 s/it.\nWith eight H100 it runs at 9 s/it.",
            Category.STRAGGLER,
        ),
        # one rail of single-port HCAs down beside active ones is the network's
        (
            "".join(
                _PORTS.format(
                    ca=f"mlx5_{i}",
                    one="Down" if i == 3 else "Active",
                    phys="Polling" if i == 3 else "LinkUp",
                )
                for i in range(8)
            ),
            Category.NETWORK,
        ),
        (
            "GPU 1 is slower than the others: its thermal slowdown counter reads 12000 us.",
            Category.STRAGGLER,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "CA 'mlx4_0'\n\tPort 1:\n\t\tState: Active\n\tPort 2:\n\t\tState: Down\n"
        "\t\tPhysical state: Polling",
        "hca_id:\tmlx4_1\n\tport:\t1\n\t\tstate:\t\t\tPORT_ACTIVE (4)\n\tport:\t2\n"
        "\t\tstate:\t\t\tPORT_DOWN (1)",
        "The card is power-limited; all thermal slowdown counters read 0 us.",
        "To reproduce the throughput numbers in the paper, use the config below.",
        "The Lustre file system is back up and healthy since 10:00.",
        "The issue with the NFS mount was resolved yesterday by a remount.",
    ]
)
