"""NVIDIA Xid kernel messages and the PCI addresses they name.

The line shape is the driver's own format string (NVIDIA/open-gpu-kernel-modules
``src/nvidia/src/kernel/gpu/rc/kernel_rc.c``, ``krcReportXid_IMPL``)::

    NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s

where an unknown process prints ``pid='<unknown>', name=<unknown>`` (the driver's defaults), older
drivers print ``pid=N,`` without ``name=`` (real_logs xid-63, xid-31), and events raised outside a
channel (GSP, PMU, NVLink5 and recovery-action events: real_logs xid-62, xid-120, xid-145) carry
no attribution at all. Each detail template below names the real line it was copied from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

HGX_H100_BUSES: tuple[int, ...] = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
"""PCI buses of GPUs 0-7 on an 8x H100 SXM HGX board (recorded nvidia-smi, driver 565.57.01,
thamada/nvidia-smi nvsim/H100SXMx8_smi.py; GPUs 0-1 also in NVIDIA/nccl#1264)."""

UNKNOWN = "<unknown>"
"""The driver's name for a process it cannot attribute (``name=<unknown>``)."""

Attribution = Literal["process", "unknown", "pid", "none"]

_PCI = re.compile(
    r"^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?$",
)


@dataclass(frozen=True)
class PciAddress:
    """One GPU's PCI address in the spellings each tool uses."""

    domain: int
    bus: int
    device: int = 0
    function: int = 0

    @property
    def nvml(self) -> str:
        """Return NVML's / nvidia-smi's bus id, e.g. ``00000000:2A:00.0``."""
        return f"{self.domain:08X}:{self.bus:02X}:{self.device:02X}.{self.function}"

    @property
    def xid(self) -> str:
        """Return the driver's Xid spelling, e.g. ``0000:2a:00``."""
        return f"{self.domain:04x}:{self.bus:02x}:{self.device:02x}"

    @property
    def kernel(self) -> str:
        """Return the kernel's device name, e.g. ``0000:2a:00.0`` (``NVRM: GPU 0000:a1:00.0:``)."""
        return f"{self.xid}.{self.function}"

    @property
    def nccl(self) -> str:
        """Return NCCL's busId as printed in ``Init COMPLETE`` and ``Channel`` lines (``2a000``)."""
        return f"{(self.domain << 20) | (self.bus << 12) | (self.device << 4) | self.function:x}"


def pci_bus_id(gpu_index: int, domain: int = 0) -> PciAddress:
    """Return the PCI address of GPU `gpu_index` on an 8-GPU H100 HGX node."""
    if not 0 <= gpu_index < len(HGX_H100_BUSES):
        raise ValueError(f"an HGX node has GPUs 0-{len(HGX_H100_BUSES) - 1}, not {gpu_index}")
    return PciAddress(domain=domain, bus=HGX_H100_BUSES[gpu_index])


def parse_pci(text: str) -> PciAddress:
    """Return the address spelled in any of the NVML, Xid or kernel forms."""
    m = _PCI.match(text.strip())
    if m is None:
        raise ValueError(f"not a PCI address: {text!r}")
    domain, bus, device, function = m.groups()
    return PciAddress(int(domain or "0", 16), int(bus, 16), int(device, 16), int(function or 0))


@dataclass(frozen=True)
class XidDetail:
    """How the driver words one Xid code, copied from a real line."""

    template: str
    defaults: Mapping[str, object] = field(default_factory=dict)
    attribution: Attribution = "process"
    source: str = ""


XID_DETAILS: Mapping[int, XidDetail] = {
    13: XidDetail(
        "Graphics Exception: ESR 0x{esr0:x}=0x{val0:x} 0x{esr1:x}=0x{val1:x} "
        "0x{esr2:x}=0x{val2:x} 0x{esr3:x}=0x{val3:x}",
        {
            "esr0": 0x52E7B0,
            "val0": 0x101000E,
            "esr1": 0x52E7B4,
            "val1": 0x4,
            "esr2": 0x52E7A8,
            "val2": 0xC81EB60,
            "esr3": 0x52E7AC,
            "val3": 0x1174,
        },
        "unknown",
        "real_logs xid-13 (vllm#5901, A800, 535.129.01)",
    ),
    31: XidDetail(
        "Ch {ch:08x}, intr {intr:08x}. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_{client} faulted "
        "@ 0x{va_hi:x}_{va_lo:08x}. Fault is of type {fault} {access}",
        {
            "ch": 0x10,
            "intr": 0,
            "client": 11,
            "va_hi": 0x7F95,
            "va_lo": 0x4AFFF000,
            "fault": "FAULT_PDE",
            "access": "ACCESS_TYPE_VIRT_READ",
        },
        "pid",
        "real_logs xid-31 (pytorch#21819, 8x V100)",
    ),
    43: XidDetail("Ch {ch:08x}", {"ch": 8}, "process", "public_lines xid-43"),
    45: XidDetail("Ch {ch:08x}", {"ch": 1}, "process", "real_logs xid-45 (without the cause)"),
    48: XidDetail(
        "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
        "physAddr 0x{phys:x} partition {partition}, subpartition {subpartition}.",
        {"phys": 0x7FFFA8860, "partition": 7, "subpartition": 1},
        "unknown",
        "public_lines xid-48 (NVIDIA/gpu-operator#1146)",
    ),
    61: XidDetail(
        "{w0:04x}({w1:04x}) {w2:08x} {w3:08x}",
        {"w0": 0x1927, "w1": 0x16E4, "w2": 0, "w3": 0},
        "none",
        "public_lines xid-61 (driver 384.11)",
    ),
    62: XidDetail(
        "{w0:08x} {w1:08x} {w2:08x} {w3:08x} {w4:08x} {w5:08x} {w6:08x} {w7:08x}",
        {
            "w0": 0x223B6A66,
            "w1": 0x2100,
            "w2": 0,
            "w3": 0x20662342,
            "w4": 0x20662BA6,
            "w5": 0x20664272,
            "w6": 0x2065F7CA,
            "w7": 0x2063F48C,
        },
        "none",
        "real_logs xid-62 (RTX PRO 6000, NVIDIA forum)",
    ),
    63: XidDetail(
        "Row Remapper: New row marked for remapping, reset gpu to activate.",
        {},
        "pid",
        "real_logs xid-63 (A100-SXM4-80GB, 510.73.08)",
    ),
    64: XidDetail(
        "Row Remapper Error: (0x{addr:016x}) - All reserved rows for bank are remapped",
        {"addr": 0x7FFFA8860},
        "unknown",
        "driver format ECC_ROW_REMAPPING_FAILURE_BANK_FULL_XID_MESSAGE_FMT (open-gpu-kernel-modules"
        " ras_events.c); no recorded A100/H100 line found, pre-Ampere wording in public_lines",
    ),
    74: XidDetail(
        "NVLink: fatal error detected on link {link}(0x{r0:x}, 0x{r1:x}, 0x{r2:x}, 0x{r3:x}, "
        "0x{r4:x}, 0x{r5:x}, 0x{r6:x})",
        {"link": 14, "r0": 0, "r1": 0, "r2": 0x10000, "r3": 0, "r4": 0, "r5": 0, "r6": 0},
        "unknown",
        "public_lines xid-74 (NVSentinel NVLink workflow doc)",
    ),
    79: XidDetail("GPU has fallen off the bus.", {}, "unknown", "real_logs xid-79 (535.161.07)"),
    92: XidDetail(
        "Disabling ECC single-bit error interrupts in framebuffer at logical partition "
        "{partition}, due to high error rate",
        {"partition": 3},
        "unknown",
        "driver format ECC_DRAM_ECC_INTR_STORM_XID_MESSAGE_FMT (ras_events.c); no recorded line",
    ),
    94: XidDetail(
        "Contained: {unit} (0x{code:x}). RST: {rst}, D-RST: {drst}",
        {"unit": "SM", "code": 1, "rst": "No", "drst": "No"},
        "unknown",
        "real_logs xid-94 (akash#244)",
    ),
    95: XidDetail(
        "Uncontained: {unit}. RST: {rst}, D-RST: {drst}",
        {"unit": "FBHUB", "rst": "Yes", "drst": "No"},
        "pid",
        "public_lines xid-95 (vendor repair ticket)",
    ),
    109: XidDetail(
        "Ch {ch:08x}, errorString CTX SWITCH TIMEOUT, Info 0x{info:x}",
        {"ch": 8, "info": 0x58005},
        "process",
        "real_logs xid-109 (gpud#46)",
    ),
    119: XidDetail(
        "Timeout after {timeout_s}s of waiting for RPC response from GPU{gpu} GSP! Expected "
        "function {function} ({function_name}) (0x{data0:x} 0x{data1:x}).",
        {
            "timeout_s": 45,
            "gpu": 4,
            "function": 76,
            "function_name": "GSP_RM_CONTROL",
            "data0": 0x20801702,
            "data1": 0x4,
        },
        "process",
        "public_lines xid-119-modern (gpud#500); older drivers: see GSP_TIMEOUT_LEGACY",
    ),
    120: XidDetail(
        "GSP kernel exception: store access page fault (cause:0x{cause:x}) @ pc:0x{pc:x}, "
        "partition:{partition}",
        {"cause": 0xF, "pc": 0xFFFFFFFF93003D42, "partition": "4#0"},
        "none",
        "real_logs xid-120 (RTX PRO 6000, NVIDIA forum)",
    ),
    145: XidDetail(
        "RLW_RXPIPE Nonfatal XC0 i0 Link {link} (0x{r0:08x} 0x{r1:08x} 0x{r2:08x} 0x{r3:08x} "
        "0x{r4:08x} 0x{r5:08x})",
        {"link": 13, "r0": 0x0409A0C2, "r1": 8, "r2": 1, "r3": 0, "r4": 0x100000, "r5": 4},
        "none",
        "real_logs xid-145 (gpud#1174)",
    ),
    149: XidDetail(
        "NETIR_LINK_EVT Fatal XC0 i0 Link {link:02d} (0x{r0:08x} 0x{r1:08x} 0x{r2:08x} "
        "0x{r3:08x} 0x{r4:08x} 0x{r5:08x})",
        {"link": 0, "r0": 0x025001C6, "r1": 0, "r2": 0, "r3": 0, "r4": 0, "r5": 0},
        "none",
        "public_lines xid-149 (gpud#1160)",
    ),
    154: XidDetail(
        "GPU recovery action changed from 0x{old:x} ({old_name}) to 0x{new:x} ({new_name})",
        {"old": 0, "old_name": "None", "new": 1, "new_name": "GPU Reset Required"},
        "none",
        "real_logs xid-120 / xid-62; 0x2 in public_lines xid-154-node-reboot",
    ),
}

GSP_TIMEOUT_LEGACY = (
    "Timeout waiting for RPC from GSP! Expected function {function} ({function_name}) "
    "(0x{data0:x} 0x{data1:x})."
)
"""Xid 119 wording of R525-era drivers (real_logs xid-119, nvidia-docker#1648)."""

RECOVERY_ACTIONS: Mapping[int, str] = {
    0: "None",
    1: "GPU Reset Required",
    2: "Node Reboot Required",
    3: "Drain P2P",
    4: "Drain and Reset",
}
"""Xid 154 action names: 0x0-0x2 from real lines; 0x3/0x4 are NVIDIA's documented names
(Drain P2P, Drain and Reset), not seen in a recorded line."""


def xid_detail(xid: int, **fields: object) -> str:
    """Return the detail text of Xid `xid`, the real line's values overridden by `fields`."""
    detail = XID_DETAILS[xid]
    return detail.template.format(**{**detail.defaults, **fields})


def recovery_action_detail(old: int, new: int) -> str:
    """Return the Xid 154 detail for a change of recovery action."""
    return xid_detail(
        154, old=old, old_name=RECOVERY_ACTIONS[old], new=new, new_name=RECOVERY_ACTIONS[new]
    )


def _attribution(pid: int | None, process: str | None) -> str:
    """Return the ``pid=..., name=..., `` part the driver prints."""
    if pid is None and process is None:
        return ""
    pid_text = "'<unknown>'" if pid is None else str(pid)
    name = "" if process is None else f" name={process},"
    return f"pid={pid_text},{name} "


def xid_line(
    pci_bus_id: str,
    xid: int,
    pid: int | None,
    process: str | None,
    detail: str,
    gpu_instance: int | None = None,
) -> str:
    """Return the ``NVRM: Xid (PCI:...): N, ...`` kernel message body.

    `pid` and `process` both None: no attribution (GSP/PMU/NVLink5 events). `pid` None with a
    `process` (use UNKNOWN): ``pid='<unknown>', name=<unknown>``. A `pid` without `process`:
    the ``pid=N,`` form of older drivers. `gpu_instance` adds the MIG ``GPU-I:NN`` tag.
    """
    pci = parse_pci(pci_bus_id).xid
    mig = "" if gpu_instance is None else f" GPU-I:{gpu_instance:02d}"
    return f"NVRM: Xid (PCI:{pci}{mig}): {xid}, {_attribution(pid, process)}{detail}"


def xid_event(
    pci_bus_id: str, xid: int, pid: int | None = None, process: str | None = None, **fields: object
) -> str:
    """Return an Xid line with the table's detail, attributed as the real line was."""
    style = XID_DETAILS[xid].attribution
    if style == "none":
        pid, process = None, None
    elif style == "pid":
        process = None
    elif process is None:
        process = UNKNOWN
    return xid_line(pci_bus_id, xid, pid, process, xid_detail(xid, **fields))
