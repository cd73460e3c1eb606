"""A reviewer's probes of session 27's classes (rounds 64 to 67): look-alikes the new rules
must leave alone (advice, purposes, denials inside the words, a cause given, a CPU-only node, a
statement of harmlessness beside a real fault) and variants they must read, kept where the
mended rules now read them right."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, silence_tests

test_look_alikes_stay_silent = silence_tests(
    [
        "I'm 10x slower at writing CUDA kernels than you, so could you review this PR for the "
        "fused attention op.",
        "Your throughput is better than ours because you use NVLink and we only have PCIe.",
        "Added nightly performance regression tests for the 8-GPU training job.",
        "To catch throughput regressions early we benchmark every nightly build.",
        "Make sure the GPUs are not idle between steps by prefetching batches with "
        "pin_memory=True.",
        "To keep the GPUs from sitting idle between steps, raise num_workers to 8.",
        "The GPUs are never idle between steps, utilization stays at 99%.",
        "The bandwidth you measure will always be lower than the theoretical link bandwidth "
        "because of protocol overhead.",
        "Our all_reduce busbw is 48 GB/s between the two nodes; the link speed should be 400 "
        "Gb/s, so we are basically at wire speed.",
        "busbw reaches 185 GB/s, theoretical is 200 GB/s, only a bit lower, which is fine.",
        "The GPU is not throttling, clocks stay at 1980 MHz the whole run.",
        "GPUs were never throttled during the benchmark.",
        "To avoid RAM OOMs, set pin_memory=False and use fewer workers.",
        "I0301 12:00:00 main.go:256] Retrieving plugins.\nI0301 12:00:00 factory.go:107] "
        "Detected non-NVML platform: could not load NVML library: libnvidia-ml.so.1: cannot "
        "open shared object file: No such file or directory\nE0301 12:00:00 factory.go:115] "
        "Incompatible platform detected\nE0301 12:00:00 factory.go:116] If this is a GPU "
        "node, did you configure the NVIDIA Container Toolkit?\nE0301 12:00:00 "
        "factory.go:121] If this is not a GPU node, you should set up a toleration or "
        "nodeSelector to only deploy this plugin on GPU nodes\nI0301 12:00:00 main.go:287] No "
        "devices found. Waiting indefinitely.",
        "Could the GPUs be idle between steps because the loader is slow, any ideas?",
        "GPU idle time between steps is about 5 ms, which is negligible.",
        "This is a CPU-only node; the GPU operator daemonset still schedules the plugin here "
        "and it logs No devices found. Waiting indefinitely.",
        "Your GPUs are H100s and ours are A100s, so of course your throughput is higher than ours.",
    ]
)

test_variants_are_read = read_as_tests(
    [
        (
            "GPU 3 keeps throttling during the run. If the problem persists we will drain the "
            "node tonight.",
            Category.GPU_DEGRADED,
        ),
        (
            "Our trainer was killed by the system at step 400. When you restart it, it picks up "
            "from the last checkpoint, but we lose an hour each time.",
            Category.HOST_MEMORY,
        ),
        (
            "With the same memory settings, your tokens/s is 40% higher than ours on identical "
            "H100 nodes.",
            Category.STRAGGLER,
        ),
        (
            "I am about 30 percent slower than the reference numbers on all benchmarks.",
            Category.STRAGGLER,
        ),
        (
            "Process 3 hangs when loading the model in parallel across 8 GPUs.",
            Category.HANG,
        ),
        (
            "The FutureWarning messages are harmless.\npcieport 0000:00:01.0: AER: Uncorrected "
            "(Non-Fatal) error received: 0000:01:00.0\npcieport 0000:00:01.0: PCIe Bus Error: "
            "severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)",
            Category.HOST_HARDWARE,
        ),
        (
            "The GPU is fine in nvidia-smi, but training crashes with RuntimeError: CUDA error: "
            "an illegal memory access was encountered",
            Category.GPU_APPLICATION,
        ),
        (
            "GPU 2 keeps throttling, its temperature went from 70 C to 89 C in ten minutes.",
            Category.GPU_DEGRADED,
        ),
        (
            "[836.709562] CPU7: Core temperature is above threshold, cpu clock is throttled "
            "(total events = 219)\n[836.709569] CPU3: Core temperature is above threshold, cpu "
            "clock is throttled (total events = 219)",
            Category.HOST_HARDWARE,
        ),
        (
            "We are about 2x slower on every benchmark, any ideas ?",
            Category.STRAGGLER,
        ),
        (
            "We are about 2x slower on every benchmark, any pointers?",
            Category.STRAGGLER,
        ),
        (
            "The NFS mount hangs on every node since this morning, any suggestion?",
            Category.HOST_STORAGE,
        ),
        (
            "[    1.20] pci 0000:41:00.0: [15b3:1021] type 00 class 0x020700\n[    1.21] pci "
            "0000:9a:00.0: [10de:2330] type 00 class 0x030200\n[    1.22] pci 0000:e1:00.0: "
            "[144d:a80a] type 00 class 0x010802\n[    6.50] mlx5_core 0000:41:00.0: firmware "
            "version: 28.39.1002\n[    6.51] mlx5_core 0000:41:00.0: 126.024 Gb/s available PCIe "
            "bandwidth, limited by 16.0 GT/s PCIe x8 link at 0000:40:01.1 (capable of 504.112 "
            "Gb/s with 32.0 GT/s PCIe x16 link)",
            Category.HOST_HARDWARE,
        ),
        (
            "The GPU is fine but we get torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 2.00 GiB",
            Category.GPU_OOM,
        ),
    ]
)
