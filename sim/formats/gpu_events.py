"""The kernel lines NVIDIA's driver prints around an Xid, as sequences from real excerpts.

Bodies only (``NVRM: ...``); put them behind a prefix with ``kernel.kernel_log_lines``. A body
with embedded newlines is one printk message whose continuation lines dmesg indents.
"""

from __future__ import annotations

from sim.formats.xid import UNKNOWN, parse_pci, recovery_action_detail, xid_detail, xid_line

H100_SXM_PCI_ID = "10de:2330"
"""PCI vendor:device of an H100 80GB HBM3 SXM (nvidia-smi -q ``Device Id : 0x233010DE``)."""

CRASH_DUMP_NOTICE = (
    "NVRM: A GPU crash dump has been created. If possible, please run\n"
    "NVRM: nvidia-bug-report.sh as root to collect this data before\n"
    "NVRM: the NVIDIA kernel module is unloaded."
)
"""Printed after an Xid 79 (real_logs xid-79, akash-network/support#209)."""

_BANNER = "*" * 33 + " GSP Timeout " + "*" * 34


def gpu_identity_lines(pci_bus_id: str, uuid: str, serial: str | None = None) -> list[str]:
    """Return the UUID (and board serial) lines the driver logs before a GPU's first Xid."""
    lines = [f"NVRM: GPU at PCI:{parse_pci(pci_bus_id).xid}: {uuid}"]
    if serial is not None:
        lines.append(f"NVRM: GPU Board Serial Number: {serial}")
    return lines


def fallen_off_bus_lines(
    pci_bus_id: str, uuid: str, serial: str | None = None, attributed: bool = True
) -> list[str]:
    """Return an Xid 79 with its companions (real_logs xid-79).

    ``attributed=False`` gives the newer drivers' ``79, GPU has fallen off the bus.`` without
    ``pid=`` (public_lines xid-79-154-os-reboot).
    """
    pci = parse_pci(pci_bus_id)
    process = UNKNOWN if attributed else None
    return [
        *gpu_identity_lines(pci_bus_id, uuid, serial),
        xid_line(pci.xid, 79, None, process, xid_detail(79)),
        f"NVRM: GPU {pci.kernel}: GPU has fallen off the bus.",
        CRASH_DUMP_NOTICE,
    ]


def fallen_off_bus_at_probe_lines(
    pci_bus_id: str, pci_id: str = H100_SXM_PCI_ID, failed: int = 1
) -> list[str]:
    """Return the driver's probe-time off-the-bus notice (real_logs gpu-fallen-off-bus-no-xid)."""
    kernel = parse_pci(pci_bus_id).kernel
    return [
        f"NVRM: The NVIDIA GPU {kernel}\n"
        f"NVRM: (PCI ID: {pci_id}) installed in this system has\n"
        "NVRM: fallen off the bus and is not responding to commands.",
        f"NVRM: The NVIDIA probe routine failed for {failed} device(s).",
    ]


def graphics_exception_lines(
    pci_bus_id: str, gpc: int, tpc: int, sm: int, warp_error: str = "Illegal Instruction Parameter"
) -> list[str]:
    """Return an Xid 13 burst: warp, global and ESR lines (public_lines xid-13-sm, gpud#46)."""
    pci = parse_pci(pci_bus_id).xid
    where = f"(GPC {gpc}, TPC {tpc}, SM {sm})"
    return [
        xid_line(pci, 13, None, UNKNOWN, f"Graphics SM Warp Exception on {where}: {warp_error}"),
        xid_line(
            pci, 13, None, UNKNOWN, f"Graphics SM Global Exception on {where}: Multiple Warp Errors"
        ),
        xid_line(pci, 13, None, UNKNOWN, xid_detail(13)),
    ]


def preemptive_cleanup_detail(
    channel: int, previous_xid: int | None = None, hex_channel: bool = False
) -> str:
    """Return an Xid 45 detail: ``Ch 00000001 caused by previous Xid 149`` or ``channel 0x...``.

    Both spellings are real (real_logs xid-45 on a 590 driver, xid-62 on a 570+ driver).
    """
    text = f"channel 0x{channel:08x}" if hex_channel else f"Ch {channel:08x}"
    return text if previous_xid is None else f"{text} caused by previous Xid {previous_xid}"


def pmu_halt_lines(pci_bus_id: str, gpu: int, pid: int, process: str, channel: int) -> list[str]:
    """Return an Xid 62 PMU halt, the GSP notice, recovery action and cleanup (real_logs xid-62)."""
    pci = parse_pci(pci_bus_id).xid
    return [
        xid_line(pci, 62, None, None, xid_detail(62)),
        f"NVRM: GPU{gpu} _kgspRpcGspEventPmuHalted: Received signal from GSP that PMU has halted.",
        xid_line(pci, 154, None, None, recovery_action_detail(0, 1)),
        xid_line(pci, 45, pid, process, preemptive_cleanup_detail(channel, hex_channel=True)),
    ]


def gsp_heartbeat_timeout_line(
    gpu: int, current_ms: int, heartbeat: int, diff_ms: int = 6070, timeout_ms: int = 5200
) -> str:
    """Return the GSP heartbeat-timeout line (real_logs gsp-timeout, GH100)."""
    return (
        f"NVRM: GPU{gpu} _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs {current_ms}"
        f" heartbeat {heartbeat} heartbeatWithOffsetMs {current_ms - diff_ms} diff {diff_ms}"
        f" timeout {timeout_ms}"
    )


def gsp_timeout_lines(gpu: int, current_ms: int, heartbeat: int, sysmembar_count: int) -> list[str]:
    """Return the GSP timeout sequence of real_logs gsp-timeout (heartbeat to banner).

    The excerpt stops at the banner; where the Xid 119 line falls relative to it is not
    recorded, so this sequence does not add one (use ``xid_event(pci, 119, ...)``).
    """
    return [
        gsp_heartbeat_timeout_line(gpu, current_ms, heartbeat),
        f"NVRM: GPU{gpu} kbusSendSysmembarSingle_GH100: - timeout error waiting for startToken "
        f"= 0x3 cnt={sysmembar_count}",
        f"NVRM: GPU{gpu} kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. "
        "kbusSendSysmembarSingle failed.",
        f"NVRM: GPU{gpu} _kgspLogRpcTimeout: {_BANNER}",
    ]


def gsp_exception_lines(pci_bus_id: str, new_action: int = 1) -> list[str]:
    """Return an Xid 120 GSP exception and the Xid 154 that follows (real_logs xid-120)."""
    pci = parse_pci(pci_bus_id).xid
    return [
        xid_line(pci, 120, None, None, xid_detail(120)),
        xid_line(pci, 154, None, None, recovery_action_detail(0, new_action)),
    ]
