"""Classes of the sixty-fourth round (fresh_103 to fresh_105), each read as a class: another's
figures said better than the speaker's, errno 107 quoted as a mount's files are read, tasks that
hang as they write to a shared filesystem, Lustre's own LNet lines (no Python exception), a PCIe
link of an NVMe drive (the disk's, by the lspci header above it), and the CPU's thermal throttle
that the same input says ended (the machine checks logged beside it are the throttle's)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_103", "0005", Category.STRAGGLER, "told.others_faster"),
        ("fresh_104", "0009", Category.HOST_STORAGE, "said.mount_disconnected"),
        ("fresh_104", "0010", Category.HOST_STORAGE, "said.netfs_hung"),
        ("fresh_104", "0011", Category.HOST_STORAGE, "netfs.server_wait"),
        ("fresh_104", "0019", Category.HOST_STORAGE, "monitor.pcie_downgraded"),
        ("fresh_105", "0005", Category.BENIGN, "host.cpu_cooled"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "Your published samples/s are far better than mine on the same A100s.",
            Category.STRAGGLER,
        ),
        ("We are about 2x slower on every benchmark, any ideas?", Category.STRAGGLER),
        (
            "Since the upgrade the pods get 'Transport endpoint is not connected' when listing "
            "the mount point.",
            Category.HOST_STORAGE,
        ),
        ("The ranks hang while saving checkpoints to the NFS share.", Category.HOST_STORAGE),
        (
            "pci 0000:59:00.0: [144d:a808] type 00 class 0x010802\n"
            "pci 0000:59:00.0: 7.876 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x1 "
            "link at 0000:00:1d.0 (capable of 31.504 Gb/s with 8.0 GT/s PCIe x4 link)",
            Category.HOST_STORAGE,
        ),
        (
            "3b:00.0 Ethernet controller: Mellanox Technologies MT28908 Family [ConnectX-6]\n"
            "\tLnkSta: Speed 16GT/s, Width x8 (downgraded)",
            Category.HOST_HARDWARE,
        ),
        # a throttle the input does not say ended stays a cooling problem
        (
            "[14334.860099] CPU3: Core temperature above threshold, cpu clock throttled (total "
            "events = 57536)\n[14334.860117] mce: [Hardware Error]: Machine check events logged",
            Category.HOST_HARDWARE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        # higher is not faster for a loss, a time or an accuracy
        "Your validation accuracy is much higher than mine.",
        "Your step time is higher than ours.",
        "Our cluster's throughput is higher than yours: 1200 samples/s.",
        # a condition, not an event
        "If the mount daemon dies you will see Transport endpoint is not connected when "
        "accessing files.",
    ]
)
