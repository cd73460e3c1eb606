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
    ]
)
