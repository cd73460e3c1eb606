"""Classes of the fifty-fifth round (fresh_79, fresh_80, fresh_81) and of the development misses
left before it, each read as a class: NVML's library that the loader cannot open, in any
program's message and in any case; perftest's queue pair it could not make; rdma_cm's connect
rejected; GlusterFS' own log of a lost brick; a network filesystem's client service that failed
to mount; a misspelt verb of a speed that fell; and, silent, a time that rises for some inputs
only (work that depends on the input)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_49", "0006", Category.APPLICATION, "nvml.library_missing"),
        ("fresh_81", "0008", Category.APPLICATION, "nvml.library_missing"),
        ("fresh_80", "0010", Category.NETWORK, "rdma.verbs_failed"),
        ("fresh_80", "0013", Category.NETWORK, "rdma.unreachable"),
        ("fresh_80", "0017", Category.HOST_STORAGE, "storage.nfs"),
        ("fresh_80", "0020", Category.HOST_STORAGE, "netfs.data_lost"),
        ("fresh_79", "0011", Category.STRAGGLER, "straggler.slowness_in_words"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "Error: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
            Category.APPLICATION,
        ),
        (
            "RuntimeError: nvml: libnvidia-ml.so: cannot open shared object file: "
            "No such file or directory (is the NVIDIA runtime configured?)",
            Category.APPLICATION,
        ),
        (
            "Cannot init NVML: Failed to initialize NVML: error_driver_not_loaded",
            Category.APPLICATION,
        ),
        ("Couldn't create IB resources", Category.NETWORK),
        ("rdma_connect: got RDMA_CM_EVENT_REJECTED, status 28", Category.NETWORK),
        (
            "E [MSGID: 114031] [client-rpc-fops_v2.c:2540:client4_0_lookup_cbk] 0-gv0-client-1: "
            "remote operation failed. [Transport endpoint is not connected]",
            Category.HOST_STORAGE,
        ),
        (
            "Mar 02 10:11:12 gpu-17 systemd[1]: lustre-client.service: Failed with result "
            "'exit-code'.",
            Category.HOST_STORAGE,
        ),
        ("Generation speed plumetted after the first hour of the run.", Category.STRAGGLER),
        # (review38's classes) an uncorrectable AER a GPU reported, fatal or not
        (
            "nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
            "type=Transaction Layer, (Receiver ID)",
            Category.GPU_HARDWARE,
        ),
        # a narrow link of a device the kernel's enumeration names a GPU (class 03xx)
        (
            "[    3.1] pci 0000:9a:00.0: [10de:2330] type 00 class 0x030200\n"
            "[    3.2] pci 0000:9a:00.0: 63.012 Gb/s available PCIe bandwidth, limited by 16.0 "
            "GT/s PCIe x4 link at 0000:98:01.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 "
            "link)",
            Category.GPU_DEGRADED,
        ),
        # ... and of a NIC's (class 0207): the host's hardware
        (
            "[    3.1] pci 0000:9a:00.0: [15b3:1021] type 00 class 0x020700\n"
            "[    3.2] pci 0000:9a:00.0: 63.012 Gb/s available PCIe bandwidth, limited by 16.0 "
            "GT/s PCIe x4 link at 0000:98:01.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 "
            "link)",
            Category.HOST_HARDWARE,
        ),
        # a corrected AER on a GPU stays a warning of the host's hardware
        (
            "nvidia 0000:18:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer",
            Category.HOST_HARDWARE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        # the device plugin on a node without GPUs says so and goes on
        "I0819 07:02:54.757556       1 factory.go:44] Detected non-NVML platform: could not load "
        "NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or "
        "directory",
        "Sep 17 15:08:01 gnode01 systemd[1]: beegfs-client.service: Deactivated successfully.",
        "Mar 02 10:11:12 gpu-17 systemd[1]: Started beegfs-client.service - Start BeeGFS Client.",
        # a time that rises for some inputs only: work that depends on the input
        "This explains why the transcription time can suddenly increase for specific segments.",
        "Step time increases for some batches with very long sequences, then drops back.",
        # (review39's classes) only the first epoch slow, asked in Japanese: a warm-up
        "エポック1だけ遅いのは正常ですか？",
    ]
)
