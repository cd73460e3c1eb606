"""Which device a PCIe link finding belongs to: lspci's LnkSta line and the kernel's link lines
name no device, so the device header above them (lspci's, or the kernel's enumeration) decides:
a GPU's link degrades the GPU, a drive's link is its storage, any other the host's hardware.

The engine reads the headers as it visits the records (``LSPCI_DEVICE``, ``KERNEL_PCI_DEVICE``,
``device_kind``) and swaps the verdict of a link finding (``OWNED_BY_KIND``); with no header it
asks whether the input names a GPU anywhere (``GPU_OWNED``).
"""

from __future__ import annotations

import re

from diagnosis.explain.rules import host_storage, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

_DEGRADED = verdict(C.GPU_DEGRADED, B.INFRASTRUCTURE, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.5)
_DISK_LINK = host_storage(S.WARNING, A.HARDWARE_INSPECTION, 0.5)
GPU_OWNED = {"monitor.pcie_downgraded": _DEGRADED, "host.pcie_narrow_link": _DEGRADED}
"""A finding that is the GPU's, with this verdict, where the lspci device header above it is a
GPU's (``device_kind``), or, with no header, where the input names a GPU anywhere (a person's
`GPU 5 is at x4`, a note `# ca:00.0 = GPU 4`); else the host's hardware: lspci's LnkSta line
names no device (the engine decides)."""
DISK_OWNED = {"monitor.pcie_downgraded": _DISK_LINK, "host.pcie_narrow_link": _DISK_LINK}
"""The same findings where the device header above them is a disk's (an NVMe drive, a SATA, SAS
or RAID controller): the drive's link, its storage."""
OWNED_BY_KIND = {"gpu": GPU_OWNED, "disk": DISK_OWNED}
"""A PCIe link finding's verdict by the kind of device its header names (``device_kind``)."""
LSPCI_DEVICE = re.compile(
    r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] (?P<cls>[^:\n]+): (?P<dev>[^\n]*)"
)
"""lspci's device header (`ca:00.0 Infiniband controller: Mellanox ...`, numeric with -n:
`17:00.0 0302: 10de:20b5`)."""
KERNEL_PCI_DEVICE = re.compile(
    r"^pci (?P<addr>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): "
    r"\[[0-9a-f]{4}:[0-9a-f]{4}\] "
    r"type [0-9a-f]{2} class 0x(?P<cls>[0-9a-f]{4})"
)
"""The kernel's enumeration of a PCI device (drivers/pci/probe.c: `pci 0000:9a:00.0:
[10de:2330] type 00 class 0x030200`): a device header as lspci's is (class 03xx: a GPU)."""
_GPU_CLASS = re.compile(r"VGA|3D controller|Display controller|^03[0-9a-f]{2}$", re.IGNORECASE)
_DISK_CLASS = re.compile(
    r"Non-Volatile memory controller|SATA controller|RAID bus controller|Mass storage controller"
    r"|SCSI storage controller|Serial Attached SCSI controller|^01[0-9a-f]{2}$",
    re.IGNORECASE,
)


def device_kind(cls: str) -> str:
    """The kind of device an lspci or kernel device header's class names: `gpu` for a display
    controller (VGA, 3D, class 03xx), `disk` for mass storage (NVMe, SATA, SAS, RAID, class
    01xx), else `host`."""
    cls = cls.strip()
    if _GPU_CLASS.search(cls):
        return "gpu"
    return "disk" if _DISK_CLASS.search(cls) else "host"
