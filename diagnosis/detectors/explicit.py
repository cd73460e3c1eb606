"""Explicit faults read straight off node telemetry: a GPU NVML cannot read, a NIC port that
went down or whose link dropped between scrapes, a full disk. Pure functions over one sample
(and, for ports, the one before it); callers keep the 'first time' and 'before' state."""

from __future__ import annotations

from typing import Protocol

from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from ingest.schema import DiskSample, PortSeen

LINK_DOWN = frozenset({"DOWN", "DISABLED", "POLLING"})
DISK_FULL = 0.99  # used share at which a filesystem counts as full


class GpuReading(Protocol):
    """What diagnosis reads of one GPU sample (`GpuSample`, or the fast decoder's struct)."""

    @property
    def gpu(self) -> int: ...

    @property
    def pci_bus_id(self) -> str | None: ...

    @property
    def nvml_error(self) -> str | None: ...


def gpu_unreadable(node: str, sample: GpuReading) -> Finding | None:
    """Return a finding when NVML could not read a GPU (lost, timed out, reset required)."""
    if sample.nvml_error is None:
        return None
    return Finding(
        category=Category.GPU_HARDWARE,
        blame=Blame.INFRASTRUCTURE,
        component=ComponentKind.GPU,
        severity=Severity.CRITICAL,
        action=Action.RESET_GPU,
        line=f"{node} GPU {sample.gpu}: NVML query failed with {sample.nvml_error}",
        confidence=0.9,
        rule="telemetry.nvml_error",
        node=node,
        gpu=sample.gpu,
        pci_bus_id=sample.pci_bus_id,
    )


def nic_went_down(node: str, nic: str, before: PortSeen | None, now: PortSeen) -> Finding | None:
    """Return a finding when a NIC port's state goes from up to down."""
    if before is None or before.state in LINK_DOWN or now.state not in LINK_DOWN:
        return None
    return _port_finding(node, nic, f"port state went {now.state}", "telemetry.nic_down", 0.95)


def nic_link_dropped(node: str, nic: str, before: PortSeen | None, now: PortSeen) -> Finding | None:
    """Return a finding when a port's link_downed counter rose since the scrape before: the
    link went down (and, if the port is up now, came back) between two scrapes. A flapping
    link stalls every transfer on its rail for seconds at a time, however short each outage
    is against the scrape interval. A counter that fell was reset (driver reload, reboot)."""
    if before is None or before.link_downed is None or now.link_downed is None:
        return None
    drops = now.link_downed - before.link_downed
    if drops <= 0:
        return None
    times = "once" if drops == 1 else f"{drops} times"
    line = (
        f"link went down {times} since the last scrape (link_downed {now.link_downed}), "
        f"port {now.state} now"
    )
    return _port_finding(node, nic, line, "telemetry.nic_link_dropped", 0.9)


def _port_finding(node: str, nic: str, what: str, rule: str, confidence: float) -> Finding:
    return Finding(
        category=Category.NETWORK,
        blame=Blame.INFRASTRUCTURE,
        component=ComponentKind.NIC,
        severity=Severity.CRITICAL,
        action=Action.CHECK_NETWORK,
        line=f"{node} {nic}: {what}",
        confidence=confidence,
        rule=rule,
        node=node,
    )


def disk_full(node: str, disk: DiskSample) -> Finding | None:
    """Return a finding when a filesystem is full."""
    if disk.total_bytes <= 0 or disk.used_bytes / disk.total_bytes < DISK_FULL:
        return None
    return Finding(
        category=Category.HOST_STORAGE,
        blame=Blame.INFRASTRUCTURE,
        component=ComponentKind.NODE,
        severity=Severity.ERROR,
        action=Action.FREE_DISK,
        line=f"{node}: {disk.mount} is {disk.used_bytes / disk.total_bytes:.0%} full",
        confidence=0.9,
        rule="telemetry.disk_full",
        node=node,
    )
