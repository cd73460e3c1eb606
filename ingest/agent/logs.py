"""Log collector: kernel log and training logs as `LogLine` events.

Kernel lines get the event time their prefix carries (see `ingest.agent.kernel`); a
continuation line (indented, no prefix) inherits the time of the line it continues; anything
else is stamped with the read time. Training-log lines are stamped with the read time and get
source `nccl` when they carry NCCL's `host:pid:tid [dev] ... NCCL INFO|WARN` prefix.
Bytes that are not UTF-8 are replaced (U+FFFD), never fatal.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Protocol

from ingest.agent.host import boot_time
from ingest.agent.kernel import KernelSource, parse_kernel_time
from ingest.agent.stream import CommandStream
from ingest.agent.tail import FileTailer, RawLine
from ingest.schema import LogLine, LogSource

log = logging.getLogger(__name__)

NCCL_LINE = re.compile(
    r"[\w.\-]+:\d+:\d+ \[\d+\] (?:\S+ )?NCCL (?:INFO|WARN|ERROR|TRACE|ABORT)\b|^NCCL version \d"
)
"""NCCL_DEBUG output: `gpu004:2200689:2200706 [3] misc/socket.cc:49 NCCL WARN ...`."""

_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:")
"""PyTorch's per-rank prefix on distributed errors: `[rank3]:   File ...`."""


class LineSource(Protocol):
    """Something that yields raw lines when polled (files or a command)."""

    def poll(self) -> list[RawLine]:
        """Return the lines completed since the last poll."""

    def close(self) -> None:
        """Release files or processes."""


def decode_line(raw: RawLine) -> str:
    """Return the text of a raw line: UTF-8 with replacement, without a trailing CR."""
    return raw.data.decode("utf-8", errors="replace").rstrip("\r")


def train_source(path: str, text: str) -> LogSource:
    """Return the LogSource of a training-log line (nccl, train_stderr or train_stdout)."""
    if NCCL_LINE.search(text):
        return LogSource.NCCL
    name = os.path.basename(path).lower()
    if name.endswith(".err") or "stderr" in name:
        return LogSource.TRAIN_STDERR
    return LogSource.TRAIN_STDOUT


class LogCollector:
    """Polls the kernel-log source and the training-log tailer, returning LogLine events."""

    name = "logs"

    def __init__(
        self,
        node: str,
        kernel: KernelSource | None,
        train_patterns: Sequence[str] = (),
        *,
        host_root: Path = Path("/"),
        from_start: bool = False,
        max_line_bytes: int = 16 * 1024,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        local_tz: tzinfo | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.node = node
        self.kernel = kernel
        self.host_root = host_root
        self._now = now
        self._local_tz = local_tz
        self._boot: datetime | None = None
        self._boot_read = False
        self._last_kernel_ts: datetime | None = None
        self._kernel_lines: LineSource | None = None
        if kernel is not None and kernel.path is not None:
            self._kernel_lines = FileTailer(
                [kernel.path], from_start=from_start, max_line_bytes=max_line_bytes, clock=clock
            )
        elif kernel is not None:
            self._kernel_lines = CommandStream(kernel.argv, max_line_bytes=max_line_bytes)
        self._train = FileTailer(
            train_patterns, from_start=from_start, max_line_bytes=max_line_bytes, clock=clock
        )

    def collect(self) -> list[LogLine]:
        """Return the log lines read since the last call."""
        now = self._now()
        out: list[LogLine] = []
        if self._kernel_lines is not None:
            out += [self._kernel_line(raw, now) for raw in self._kernel_lines.poll()]
        for raw in self._train.poll():
            text = decode_line(raw)
            out.append(self._event(raw, text, train_source(raw.path, text), now))
        return out

    def close(self) -> None:
        """Close files and stop the kernel-log command."""
        if self._kernel_lines is not None:
            self._kernel_lines.close()
        self._train.close()

    def _kernel_line(self, raw: RawLine, now: datetime) -> LogLine:
        text = decode_line(raw)
        ts = parse_kernel_time(text, boot=self._boot_time(), now=now, local_tz=self._tz())
        if ts is None and text[:1].isspace() and self._last_kernel_ts is not None:
            ts = self._last_kernel_ts
        if ts is not None:
            self._last_kernel_ts = ts
        label = self.kernel.label if self.kernel is not None else raw.path
        return self._event(raw, text, LogSource.KERNEL, ts or now, path=label)

    def _event(
        self, raw: RawLine, text: str, source: LogSource, ts: datetime, path: str | None = None
    ) -> LogLine:
        rank = _RANK_PREFIX.match(text)
        return LogLine(
            node=self.node,
            ts=ts,
            source=source,
            line=text,
            path=path or raw.path,
            seq=raw.offset,
            rank=int(rank.group(1)) if rank else None,
        )

    def _boot_time(self) -> datetime | None:
        if not self._boot_read:
            self._boot_read = True
            self._boot = boot_time(self.host_root)
        return self._boot

    def _tz(self) -> tzinfo:
        if self._local_tz is None:
            self._local_tz = datetime.now().astimezone().tzinfo or UTC
        return self._local_tz
