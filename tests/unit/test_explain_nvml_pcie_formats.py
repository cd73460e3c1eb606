"""NVML's statuses, the kernel's PCIe power-state and link messages and nvidia-smi's table, read
from their producers' own strings (NVML's nvmlErrorString, drivers/pci/pci.c and pcie/dpc.c,
nvidia-smi's summary table) rather than from examples: which are the node's software or the
caller's setup, which a GPU or a port that failed, and their healthy neighbours."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import first, silence_tests


@pytest.mark.parametrize(
    ("line", "category", "rule"),
    [
        # NVML may not open the GPUs: the caller's setup
        (
            "Failed to initialize NVML: Insufficient Permissions",
            Category.APPLICATION,
            "nvml.access_denied",
        ),
        (
            "Failed to initialize NVML: GPU access blocked by the operating system",
            Category.APPLICATION,
            "nvml.access_denied",
        ),
        (
            "Unable to determine the device handle for GPU 0000:65:00.0: Insufficient Permissions",
            Category.APPLICATION,
            "nvml.access_denied",
        ),
        # the driver or its library absent: the node's software
        (
            "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure "
            "that the NVIDIA Display Driver is properly installed and present in your system.",
            Category.APPLICATION,
            "nvml.library_missing",
        ),
        (
            "Failed to query for the number of GPUs: Driver Not Loaded",
            Category.APPLICATION,
            "nvml.library_missing",
        ),
        # a device the driver cannot reach: the GPU
        (
            "nvmlDeviceGetHandleByIndex() failed: Unknown Error",
            Category.GPU_HARDWARE,
            "nvml.gpu_lost",
        ),
        (
            "|  0  Tesla V100-SXM2...  On   | 00000000:06:00.0 Off |                  ERR! |",
            Category.GPU_HARDWARE,
            "nvml.smi_gpu_row",
        ),
        (
            "|   3  NVIDIA A100-SXM4-80GB          On  | 00000000:4F:00.0 Off |"
            "   [GPU requires reset] |",
            Category.GPU_HARDWARE,
            "nvml.smi_gpu_row",
        ),
        # a device that does not answer as it is woken: a GPU (or a passed-through one) is lost,
        # a port's devices with it
        (
            "nvidia 0000:01:00.0: Unable to change power state from D3cold to D0, "
            "device inaccessible",
            Category.GPU_HARDWARE,
            "host.gpu_inaccessible",
        ),
        (
            "vfio-pci 0000:0a:00.0: Unable to change power state from D3cold to D0, "
            "device inaccessible",
            Category.GPU_HARDWARE,
            "host.gpu_inaccessible",
        ),
        (
            "pcieport 0000:00:01.0: Unable to change power state from D3cold to D0, "
            "device inaccessible",
            Category.HOST_HARDWARE,
            "host.device_inaccessible",
        ),
        # a port that contained an error, a link it could not retrain
        (
            "pcieport 0000:00:03.1: DPC: unmasked uncorrectable error detected",
            Category.HOST_HARDWARE,
            "host.pcie_fatal",
        ),
        (
            "pcieport 0000:00:01.0: broken device, retraining non-functional downstream link "
            "at 2.5GT/s",
            Category.HOST_HARDWARE,
            "host.pcie_fatal",
        ),
        # NVLink's counters said to climb; an NFS export mounted without its helper
        (
            "[NVLink] GPU 2 link 4 CRC error count increased from 0 to 12004",
            Category.GPU_DEGRADED,
            "said.nvlink_errors_rising",
        ),
        (
            "mount: /mnt/nfs: wrong fs type, bad option, bad superblock on 10.0.0.5:/export, "
            "missing codepage or helper program, or other error.",
            Category.APPLICATION,
            "netfs.client_missing",
        ),
    ],
)
def test_each_producer_string_is_read(line: str, category: Category, rule: str) -> None:
    found = first(line)
    assert found is not None and found[:2] == (category, rule), (line, found)


test_healthy_neighbours_stay_silent = silence_tests(
    [
        "NVML library version: 535.104",
        "|  0  Tesla V100-SXM2...  On   | 00000000:06:00.0 Off |                    0 |",
        "nvidia 0000:01:00.0: enabling device (0000 -> 0003)",
        "pci 0000:01:00.0: [10de:2330] type 00 class 0x030200",
        "mount: /mnt/data: wrong fs type, bad option, bad superblock on /dev/sdb1, missing "
        "codepage or helper program, or other error.",
        "\t Link 0: CRC Errors: 0",
    ]
)
