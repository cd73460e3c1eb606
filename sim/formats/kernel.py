"""Kernel-log line prefixes, as dmesg, journalctl and syslog print them.

Every style is copied from a recording or a real excerpt:

- ``dmesg_T`` (``dmesg -T``): ``[Fri Aug 30 11:43:14 2024] `` (real_logs xid-109, xid-79; the day
  is space-padded as in ``[Mon Mar  6 21:36:46 2023]``, real_logs xid-119).
- ``raw`` (plain ``dmesg``): ``[93297.027938] `` and ``[   24.302465] ``, seconds since boot,
  ``%5lu.%06lu`` (real_logs xid-13, gsp-timeout).
- ``iso`` (``dmesg --time-format iso``): ``2026-12-01T06:44:28,304964+00:00 `` -- no host name and
  no ``kernel:`` tag (recorded with util-linux 2.38.1: tests/fixtures/agent/dmesg_iso_sandbox.txt).
- ``journal_iso`` (``journalctl -k -o short-iso``): ``2026-12-01T07:02:06+0000 vm kernel: ``
  (recorded with systemd 252: tests/fixtures/agent/journalctl-k-short-iso_sandbox.txt).
- ``syslog`` (rsyslog ``/var/log/kern.log``): ``Dec  2 11:38:47 worker4 kernel: `` and, when the
  kernel's own time is forwarded, ``... kernel: [  219.470994] `` (NVIDIA/gpu-operator#1146);
  without a host name ``Mar 29 15:38:59 kernel: `` as in real_logs xid-120.

Multi-line messages (the Xid 79 crash-dump notice, the probe failure) continue on lines indented
to the prefix width, as dmesg prints them (real_logs xid-79, gpu-fallen-off-bus-no-xid). For the
syslog style each continuation gets its own prefix instead: rsyslog writes one record per line
there, and no real multi-line kern.log excerpt was available (a documented choice).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

KernelStyle = Literal["dmesg_T", "raw", "iso", "journal_iso", "syslog"]
KERNEL_STYLES: tuple[KernelStyle, ...] = ("dmesg_T", "raw", "iso", "journal_iso", "syslog")


def _offset(ts: datetime, colon: bool) -> str:
    """Return the UTC offset of an aware time as +HH:MM (or +HHMM)."""
    offset = ts.utcoffset()
    if offset is None:
        raise ValueError("kernel timestamps need a timezone-aware datetime")
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}" if colon else f"{sign}{hours:02d}{mins:02d}"


def printk_time(ts: datetime, boot_time: datetime) -> str:
    """Return the raw printk stamp ``[ 1843.308145]`` of `ts` on a node booted at `boot_time`."""
    micros = round((ts - boot_time).total_seconds() * 1_000_000)
    if micros < 0:
        raise ValueError("a kernel line cannot precede the boot")
    seconds, fraction = divmod(micros, 1_000_000)
    return f"[{seconds:5d}.{fraction:06d}]"


def kernel_prefix(
    ts: datetime,
    style: KernelStyle,
    boot_time: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """Return the prefix a kernel line carries in `style`, in `ts`'s own timezone."""
    if style == "dmesg_T":
        return f"[{ts:%a %b} {ts.day:2d} {ts:%H:%M:%S %Y}] "
    if style == "raw":
        if boot_time is None:
            raise ValueError("the raw style needs boot_time")
        return printk_time(ts, boot_time) + " "
    if style == "iso":
        return f"{ts:%Y-%m-%dT%H:%M:%S},{ts.microsecond:06d}{_offset(ts, colon=True)} "
    if style == "journal_iso":
        host = hostname or "localhost"
        return f"{ts:%Y-%m-%dT%H:%M:%S}{_offset(ts, colon=False)} {host} kernel: "
    host_part = f"{hostname} " if hostname else ""
    stamp = f"{ts:%b} {ts.day:2d} {ts:%H:%M:%S} {host_part}kernel: "
    if boot_time is not None:
        stamp += printk_time(ts, boot_time) + " "
    return stamp


def kernel_log(
    ts: datetime,
    style: KernelStyle,
    body: str,
    boot_time: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """Return one kernel message (possibly multi-line) as the log shows it."""
    prefix = kernel_prefix(ts, style, boot_time, hostname)
    first, *rest = body.split("\n")
    joiner = prefix if style == "syslog" else " " * len(prefix)
    return "\n".join([prefix + first, *(joiner + line for line in rest)])


def kernel_log_lines(
    ts: datetime,
    style: KernelStyle,
    bodies: Sequence[str],
    boot_time: datetime | None = None,
    hostname: str | None = None,
) -> list[str]:
    """Return several kernel messages logged at the same instant, one text line each."""
    text = "\n".join(kernel_log(ts, style, body, boot_time, hostname) for body in bodies)
    return text.split("\n")
