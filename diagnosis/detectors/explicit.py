"""Explicit faults read straight off node telemetry: a GPU NVML cannot read, a NIC port that
went down, a full disk. Pure functions over one sample; callers keep the 'first time' state."""

from __future__ import annotations

from typing import Protocol

from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from ingest.schema import DiskSample

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


def nic_went_down(node: str, nic: str, before: str | None, state: str) -> Finding | None:
    """Return a finding when a NIC port's state goes from up to down."""
    if before is None or before.upper() in LINK_DOWN or state.upper() not in LINK_DOWN:
        return None
    return Finding(
        category=Category.NETWORK,
        blame=Blame.INFRASTRUCTURE,
        component=ComponentKind.NIC,
        severity=Severity.CRITICAL,
        action=Action.CHECK_NETWORK,
        line=f"{node} {nic}: port state went {state}",
        confidence=0.95,
        rule="telemetry.nic_down",
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
