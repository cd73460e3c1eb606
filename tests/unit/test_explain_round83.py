"""Classes of the eighty-third round (fresh_160 to fresh_162), scored blind at e3e00da: Fabric
Manager's package of another version than the driver (the node's setup), perftest's buffer the NIC
would not register, a driver module that cannot be built without the kernel's headers, the
firmware's POST errors in a BMC's event log, multipathd's failed map of a new path, NVRM's
`NV_ERR_NO_MEMORY`, Cycles' illegal address in its CUDA queue, a reset connection quoted in lower
case; and the three development false alarms: a manual's list of verbs events, an OOM kill asked
for by hand (SysRq's `f`) and an explainer's sample Xid line."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_160", "0002", Category.NETWORK, "rdma.mr_failed"),
        ("fresh_160", "0003", Category.APPLICATION, "fabric.fm_version_mismatch"),
        ("fresh_160", "0018", Category.APPLICATION, "driver.module_headers_missing"),
        ("fresh_160", "0025", Category.NETWORK, "nccl.connection_closed"),
        ("fresh_161", "0002", Category.HOST_HARDWARE, "host.bmc_fault"),
        ("fresh_161", "0006", Category.HOST_STORAGE, "storage.multipath"),
        ("fresh_161", "0028", Category.BENIGN, "kernel.provoked_oom"),
        ("fresh_162", "0013", Category.GPU_OOM, "driver.nv_status"),
        ("fresh_162", "0019", Category.BENIGN, "gpu.xid_defined"),
        ("fresh_162", "0023", Category.GPU_APPLICATION, "cuda.illegal_address"),
        # (for the straggler development floor this round took under 0.85)
        ("fresh_162", "0012", Category.STRAGGLER, "slowdown.step_time_rose"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "Job for nvidia-fabricmanager.service failed because the control process exited.\n"
            "nv-fabricmanager[911]: fabric manager NVIDIA GPU driver interface version 550.54.14 "
            "don't match with driver version 550.90.07. Please update with matching NVIDIA driver "
            "package.",
            Category.APPLICATION,
        ),
        ("Couldn't allocate MR\nSegmentation fault (core dumped)", Category.NETWORK),
        (
            "Error! Your kernel headers for kernel 5.15.0-105-generic cannot be found at "
            "/lib/modules/5.15.0-105-generic/build or /lib/modules/5.15.0-105-generic/source.",
            Category.APPLICATION,
        ),
        (
            "7 | 11/02/2024 | 04:12:09 | System Firmware Progress #0x02 | No system memory "
            "installed | Asserted",
            Category.HOST_HARDWARE,
        ),
        (
            "[ 88.1] NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] "
            "(0x00000051) returned from _memdescAllocInternal(pMemDesc) @ mem_desc.c:1353",
            Category.GPU_OOM,
        ),
        ("We keep getting error: connection reset by peer on node 3.", Category.NETWORK),
        ("Step time is 1.2s at step 10. At step 500 it is already 3.5s.", Category.STRAGGLER),
        (
            "[btl_openib_async.c:123] Error event: IBV_EVENT_PORT_ERR (10) on port 1",
            Category.NETWORK,
        ),
        (
            "[  910.1] Out of memory: Killed process 4411 (python) total-vm:81234kB",
            Category.HOST_MEMORY,
        ),
        (
            "NVRM: Xid (PCI:0000:61:00): 43, pid=88121, name=python, Ch 00000008",
            Category.GPU_APPLICATION,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "IBV_EVENT_PORT_ERR Link became unavailable on a port",
        "IBV_EVENT_PATH_MIG_ERR A connection failed to migrate to the alternate path",
        "[ 12.3] sysrq: Manual OOM execution\n[ 12.4] Out of memory: Killed process 812 (stress)",
        "Xid 79 = GPU has fallen off the bus\nExample:\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
        "GPU has fallen off the bus.",
        "1 | 03/20/2021 | 00:58:40 | System Firmware Progress #0x11 | Motherboard initialization"
        " | Asserted",
        "The first epoch took 30s. By epoch 3 it is already 10s per epoch.",
        "Each step is already about 2s, and epoch time is 20s, which is fine.",
    ]
)


def test_a_manuals_list_of_verbs_events_raises_no_alarm() -> None:
    assert alarms(corpus_text("fresh_160", "0005")) == []
