"""Classes of the sixty-ninth round (fresh_118 to fresh_120), each read as a class: a module a
kernel under Secure Boot will not load (not the network's, even for nvidia-peermem), tasks hung
beside a disk whose commands the kernel aborted (the disk's, not the host's), Compute Engine
refusing a GPU instance set to live-migrate, a kernel panic told in words, smartctl's JSON
health bits, VMware ESXi's machine checks, and a job said to slow when it moves to more nodes
(a change of the work that is no excuse)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_118", "0000", Category.APPLICATION, "driver.module_unsigned"),
        ("fresh_119", "0000", Category.HOST_STORAGE, "host.scsi_abort"),
        ("fresh_119", "0001", Category.HOST_STORAGE, "host.scsi_abort"),
        ("fresh_119", "0006", Category.APPLICATION, "cloud.gpu_live_migration"),
        ("fresh_119", "0008", Category.HOST_STORAGE, "storage.smart_failed"),
        ("fresh_119", "0017", Category.HOST_HARDWARE, "host.mce_uncorrected"),
        ("fresh_119", "0022", Category.HOST_HARDWARE, "said.kernel_panic"),
        ("fresh_120", "0020", Category.STRAGGLER, "straggler.slowness_in_words"),
    ]
)

_HUNG = (
    "INFO: task jbd2/sda1-8:434 blocked for more than 120 seconds.\n"
    '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.'
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "insmod: ERROR: could not insert 'nvidia': Key was rejected by service",
            Category.APPLICATION,
        ),
        (
            "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7",
            Category.APPLICATION,
        ),
        # a peermem module that does not load for another reason stays the network's
        ("modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument", Category.NETWORK),
        (
            "sd 0:0:0:0: [sdb] tag#7 task abort on host 0, 00000000deadbeef\n" + _HUNG,
            Category.HOST_STORAGE,
        ),
        # a hung task alone stays the host's, as the corpus files it
        (_HUNG, Category.HOST_HARDWARE),
        (
            'err="googleapi: Error 400: Instances with guest accelerators do not support live '
            'migration., badRequest"',
            Category.APPLICATION,
        ),
        ("Since the BIOS update the node gets a kernel panic every night.", Category.HOST_HARDWARE),
        ('  "reliability_degraded": true,', Category.HOST_STORAGE),
        (
            "2024-01-01T00:00:00Z cpu3:1234)ALERT: MCA: 200: SRAR Excp G7 B1 Cache",
            Category.HOST_HARDWARE,
        ),
        ("Training gets slower when we move from one node to 4 nodes.", Category.STRAGGLER),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        '  "reliability_degraded": false,\n  "media_read_only": false,',
        "Throughput drops when we increase the batch size to 64.",
        "Could a bad DIMM cause a kernel panic?",
        "nvidia_peermem: module verification failed: signature and/or required key missing - "
        "tainting kernel",
    ]
)
