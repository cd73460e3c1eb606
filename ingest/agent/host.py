"""Host sampler: CPU, load, memory, swap, disks and NIC ports from /proc, /sys and statvfs.

Everything is read under `host_root`, so an agent in a container reads the host's /proc and
/sys mounted at e.g. /host, and a test reads a fake tree in a temporary directory.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from ingest.agent.nic import ethernet_ports, infiniband_ports
from ingest.schema import DiskSample, HostMetrics

log = logging.getLogger(__name__)

T = TypeVar("T")

_CPU_FIELDS = 8
"""user nice system idle iowait irq softirq steal; guest time is already inside user/nice."""


def read_cpu_times(proc: Path) -> tuple[int, int] | None:
    """Return (busy, total) jiffies from the aggregate `cpu` line of /proc/stat."""
    with open(proc / "stat", encoding="ascii") as fh:
        first = fh.readline().split()
    if not first or first[0] != "cpu":
        return None
    times = [int(v) for v in first[1 : 1 + _CPU_FIELDS]]
    times += [0] * (_CPU_FIELDS - len(times))
    idle = times[3] + times[4]
    total = sum(times)
    return total - idle, total


def read_meminfo(proc: Path) -> dict[str, int]:
    """Return /proc/meminfo as {key: bytes} (values are kB in the file)."""
    out: dict[str, int] = {}
    with open(proc / "meminfo", encoding="ascii") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
                out[key.strip()] = int(parts[0]) * scale
    return out


def read_load1(proc: Path) -> float:
    """Return the 1-minute load average from /proc/loadavg."""
    return float((proc / "loadavg").read_text(encoding="ascii").split()[0])


def boot_time(host_root: Path) -> datetime | None:
    """Return the boot time (`btime` in /proc/stat), or None when it cannot be read."""
    try:
        with open(host_root / "proc" / "stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return datetime.fromtimestamp(int(line.split()[1]), UTC)
    except (OSError, ValueError) as exc:
        log.warning("cannot read boot time under %s: %s", host_root, exc)
    return None


def disk_usage(host_root: Path, mount: str) -> DiskSample:
    """Return the usage of one mount point (df's used = blocks - free blocks)."""
    st = os.statvfs(host_root / mount.lstrip("/"))
    return DiskSample(
        mount=mount,
        used_bytes=(st.f_blocks - st.f_bfree) * st.f_frsize,
        total_bytes=st.f_blocks * st.f_frsize,
    )


class HostSampler:
    """Produces one `HostMetrics` per scrape; CPU busy % is the delta since the last scrape."""

    name = "host"

    def __init__(
        self,
        node: str,
        host_root: Path = Path("/"),
        *,
        mounts: Sequence[str] = ("/",),
        net_interfaces: Sequence[str] = (),
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.node = node
        self.host_root = host_root
        self.mounts = tuple(mounts)
        self.net_interfaces = tuple(net_interfaces)
        self._now = now
        self._proc = host_root / "proc"
        self._sys = host_root / "sys"
        self._last_cpu: tuple[int, int] | None = None
        self._warned: set[str] = set()

    def collect(self) -> list[HostMetrics]:
        """Return this scrape's event."""
        return [self.sample()]

    def close(self) -> None:
        """Nothing to release."""

    def sample(self) -> HostMetrics:
        """Read everything once; a part that cannot be read is left empty."""
        ts = self._now()
        memory = self._guard("meminfo", lambda: read_meminfo(self._proc)) or {}
        total = memory.get("MemTotal")
        return HostMetrics(
            node=self.node,
            ts=ts,
            cpu_util=self._cpu_util(),
            load1=self._guard("loadavg", lambda: read_load1(self._proc)),
            mem_used_bytes=_mem_used(memory),
            mem_total_bytes=total,
            swap_used_bytes=_swap_used(memory),
            disks=self._disks(),
            nics=(self._guard("infiniband", lambda: infiniband_ports(self._sys)) or [])
            + (self._guard("net", lambda: ethernet_ports(self._sys, self.net_interfaces)) or []),
        )

    def _cpu_util(self) -> float | None:
        now = self._guard("stat", lambda: read_cpu_times(self._proc))
        last, self._last_cpu = self._last_cpu, now
        if now is None or last is None:
            return None
        busy, total = now[0] - last[0], now[1] - last[1]
        if total <= 0:
            return None
        return min(100.0, max(0.0, 100.0 * busy / total))

    def _disks(self) -> list[DiskSample]:
        out = []
        for mount in self.mounts:
            disk = self._guard(f"mount {mount}", partial(disk_usage, self.host_root, mount))
            if disk is not None:
                out.append(disk)
        return out

    def _guard(self, what: str, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except (OSError, ValueError, IndexError) as exc:
            if what not in self._warned:
                self._warned.add(what)
                log.warning(
                    "node %s: cannot read %s under %s: %s", self.node, what, self.host_root, exc
                )
            return None


def _mem_used(memory: dict[str, int]) -> int | None:
    total = memory.get("MemTotal")
    if total is None:
        return None
    available = memory.get("MemAvailable")
    if available is None:
        available = sum(memory.get(k, 0) for k in ("MemFree", "Buffers", "Cached"))
    return max(0, total - available)


def _swap_used(memory: dict[str, int]) -> int | None:
    if "SwapTotal" not in memory or "SwapFree" not in memory:
        return None
    return max(0, memory["SwapTotal"] - memory["SwapFree"])
