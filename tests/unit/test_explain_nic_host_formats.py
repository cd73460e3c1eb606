"""EFA, machine-check, SMART and NVMe-over-fabrics faults read from their producers' format
strings (issue 21, "whole families, not lines").

The lines are built from the formats in the sources named per case (the kernel's efa driver,
libfabric's efa provider, aws-ofi-nccl, mce/core.c, mcelog, rasdaemon, smartmontools'
nvmeprint.cpp, nvme-cli, the kernel's nvme rdma.c and fc.c) with their arguments filled in,
nothing else. The negative controls are the start-up, healthy and recovered lines of the same
sources.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

FAULTS = [
    # efa_com.c / efa_main.c (ibdev_err: `efa <BDF> efa_N: `; dev_err: `efa <BDF>: `)
    (
        "efa 0000:00:06.0 efa_0: The device didn't send any completion for admin cmd "
        "CREATE_QP(1) status 0 (ctx 0x00000000a1b2c3d4, sq producer: 57, sq consumer: 56, cq "
        "consumer: 56)",
        Category.NETWORK,
    ),
    (
        "efa 0000:00:06.0 efa_0: Reading register timed out. expected: req id[3] offset[0x8] "
        "actual: req id[2] offset[0x4]",
        Category.NETWORK,
    ),
    ("efa 0000:00:06.0: EFA device init failed", Category.NETWORK),
    # libfabric's efa provider (log.c prefix with an empty log prefix, efa_errno.h texts)
    (
        "libfabric:4711:1733353500::efa:cq:efa_rdm_txe_handle_error():2108<warn> err: 103, "
        "message: Unresponsive receiver (connection previously established) My EFA addr: "
        "fi_addr_efa://[fe80::4a5:aaff:fe00:1]:0:1234 (4124)",
        Category.NETWORK,
    ),
    (
        "The peer of address fi_addr_efa://[fe80::4a5:aaff:fe12:3456]:1:43981 becomes unresponsive",
        Category.NETWORK,
    ),
    # aws-ofi-nccl (NCCL WARN NET/OFI ...)
    (
        "ip-10-0-1-5:4711:4790 [3] NCCL WARN NET/OFI Request 0x7f3a2c0012a0 completed with "
        "error. RC: 113. Error: 15 (Unreachable remote (never received a response)). Completed "
        "length: 0, Request: { dev: 3, size: 0, state: PENDING, type: SEND }",
        Category.NETWORK,
    ),
    # mce/core.c, mcelog, rasdaemon
    (
        "mce: [Hardware Error]: CPU 12: Machine Check Exception: 5 Bank 7: be00000000800400",
        Category.HOST_HARDWARE,
    ),
    ("mce: [Hardware Error]: Machine check: Processor context corrupt", Category.HOST_HARDWARE),
    (
        "Hardware event. This is not a software error.\nCPU 3 BANK 7 TSC 2bfc83b1b8\n"
        "MCi status:\nUncorrected error\nError enabled\nProcessor context corrupt",
        Category.HOST_HARDWARE,
    ),
    (
        "2026-12-04 23:05:00.123456 +0000 1 Uncorrected error: memory read error on "
        "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (mc: 0 location: 0:1:0 address: 0x3f0d2c000)",
        Category.HOST_HARDWARE,
    ),
    # smartctl -a /dev/nvme0 and nvme smart-log
    (
        "SMART overall-health self-assessment test result: FAILED!\n"
        "- NVM subsystem reliability has been degraded",
        Category.HOST_STORAGE,
    ),
    ("Critical Warning:                   0x04", Category.HOST_STORAGE),
    ("Media and Data Integrity Errors:    12", Category.HOST_STORAGE),
    ("critical_warning\t\t\t: 0x4", Category.HOST_STORAGE),
    # NVMe over RDMA and over Fibre Channel
    ("nvme nvme1: rdma connection establishment failed (-110)", Category.HOST_STORAGE),
    (
        "nvme nvme2: NVME-FC{0}: controller connectivity lost. Awaiting Reconnect",
        Category.HOST_STORAGE,
    ),
    (
        "nvme nvme2: NVME-FC{0}: dev_loss_tmo (60) expired while waiting for remoteport "
        "connectivity.",
        Category.HOST_STORAGE,
    ),
]

HEALTHY = [
    "efa 0000:00:06.0 efa_0: IB device registered",
    "efa 0000:00:06.0: Setup irq:0x000000004f2a1c3b vector:37 name:efa-mgmnt@pci:0000:00:06.0",
    "libfabric:4711:1733353500::efa:av:efa_av_insert():300<info> Recovered fi_addr for peer",
    "ip-10-0-1-5:4711:4711 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
    "No uncorrected errors were found on this host.",
    "SMART overall-health self-assessment test result: PASSED",
    "Critical Warning:                   0x00",
    "Media and Data Integrity Errors:    0",
    "critical_warning\t\t\t: 0",
    "media_errors\t\t\t\t: 0",
    "nvme nvme1: Successfully reconnected (3 attempts)",
    "nvme nvme2: NVME-FC{0}: controller connect complete",
    'nvme nvme1: new ctrl: NQN "nqn.2014-08.org.nvmexpress:uuid:1b4e28ba", addr 10.0.0.2:4420',
]


@pytest.mark.parametrize(("text", "category"), FAULTS)
def test_each_catalogued_fault_has_its_category(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


@pytest.mark.parametrize("line", HEALTHY)
def test_healthy_and_recovered_lines_stay_silent(line: str) -> None:
    assert alarms(line) == [], line
