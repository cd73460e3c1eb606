"""The kernel log: where it comes from, and the event time of each of its lines.

Recognised line prefixes (the first that matches wins):
- ISO 8601, from `dmesg --time-format iso` ("2024-03-29T15:38:59,123456+00:00 ..."), from
  `journalctl -o short-iso` ("2024-03-29T15:38:59+0000 host kernel: ...") and from rsyslog's
  high-precision files ("2024-03-29T15:38:59.123456+00:00 host kernel: ...");
- `dmesg -T` ("[Fri Aug 30 11:43:14 2024] ..."), in the node's local time;
- raw printk time ("[ 1843.308145] ..."), seconds since boot, added to /proc/stat btime;
- classic syslog ("Mar 29 15:38:59 host kernel: ..."), local time, year inferred.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}
_MON = "(" + "|".join(_MONTHS) + ")"

_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?\s"
)
_DMESG_T = re.compile(
    r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + _MON + r" +(\d{1,2}) "
    r"(\d{2}):(\d{2}):(\d{2}) (\d{4})\]"
)
_RAW = re.compile(r"^\[\s*(\d+)\.(\d{1,9})\]")
_SYSLOG = re.compile(r"^" + _MON + r" +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})\s")

DEFAULT_KERN_LOG = "/var/log/kern.log"


def _micros(fraction: str | None) -> int:
    return int((fraction or "0").ljust(6, "0")[:6])


def _offset(text: str | None, local_tz: tzinfo) -> tzinfo:
    if text is None:
        return local_tz
    if text == "Z":
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def parse_kernel_time(
    line: str, *, boot: datetime | None, now: datetime, local_tz: tzinfo
) -> datetime | None:
    """Return the UTC event time a kernel log line carries, or None when it carries none."""
    if m := _ISO.match(line):
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        tz = _offset(m.group(8), local_tz)
        return datetime(y, mo, d, h, mi, s, _micros(m.group(7)), tz).astimezone(UTC)
    if m := _DMESG_T.match(line):
        month, rest = _MONTHS[m.group(1)], [int(g) for g in m.groups()[1:]]
        day, hour, minute, second, year = rest
        local = datetime(year, month, day, hour, minute, second, tzinfo=local_tz)
        return local.astimezone(UTC)
    if m := _RAW.match(line):
        if boot is None:
            return None
        return boot + timedelta(seconds=int(m.group(1)), microseconds=_micros(m.group(2)))
    if m := _SYSLOG.match(line):
        return _syslog_time(_MONTHS[m.group(1)], [int(g) for g in m.groups()[1:]], now, local_tz)
    return None


def _syslog_time(month: int, rest: list[int], now: datetime, local_tz: tzinfo) -> datetime:
    """Return the time of a year-less syslog stamp: this year, unless that is in the future."""
    day, hour, minute, second = rest
    local_now = now.astimezone(local_tz)
    stamp = datetime(local_now.year, month, day, hour, minute, second, tzinfo=local_tz)
    if stamp - local_now > timedelta(days=1):
        stamp = stamp.replace(year=local_now.year - 1)  # December's lines read in January
    return stamp.astimezone(UTC)


@dataclass(frozen=True)
class KernelSource:
    """A resolved kernel-log source: a file to follow, or a command whose stdout to follow."""

    path: str | None = None
    argv: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """Return the `path` recorded on each LogLine."""
        return self.path or os.path.basename(self.argv[0])


def dmesg_argv(from_start: bool) -> tuple[str, ...]:
    """Return the dmesg command: ISO times; the ring buffer first only with `from_start`."""
    return ("dmesg", "--follow" if from_start else "--follow-new", "--time-format", "iso")


def journal_argv(from_start: bool) -> tuple[str, ...]:
    """Return the journalctl command for the kernel log of this boot."""
    return ("journalctl", "-k", "-f", "-o", "short-iso", "-n", "all" if from_start else "0")


def kmsg_readable(path: str = "/dev/kmsg") -> bool:
    """Return whether the kernel ring buffer can be read (dmesg needs this)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True


def resolve_kernel_source(setting: str, *, from_start: bool = False) -> KernelSource | None:
    """Turn the `kernel_log` setting into a source; None for "off"."""
    if setting == "off":
        return None
    if setting == "dmesg":
        return KernelSource(argv=dmesg_argv(from_start))
    if setting == "journal":
        return KernelSource(argv=journal_argv(from_start))
    if setting != "auto":
        return KernelSource(path=setting)
    if shutil.which("dmesg") and kmsg_readable():
        return KernelSource(argv=dmesg_argv(from_start))
    if shutil.which("journalctl"):
        return KernelSource(argv=journal_argv(from_start))
    return KernelSource(path=DEFAULT_KERN_LOG)
