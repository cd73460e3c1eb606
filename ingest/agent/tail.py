"""Follow log files: globs, new files, rotation, truncation, partial and over-long lines.

- Files present at the first poll start at their end (or at 0 with `from_start`); files that
  appear later are read from 0, since everything in them is new.
- Rotation (the path now names another inode): the old file is drained for `rotate_grace_s`
  (a writer may not have reopened yet), its last partial line is then flushed, and the new
  file is read from 0. Truncation (size < offset, copytruncate): read again from 0.
- A line is emitted only once its newline arrived; lines longer than `max_line_bytes` are cut
  there and the rest up to the newline is dropped, so memory per file stays bounded.
"""

from __future__ import annotations

import glob
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RawLine:
    """One complete line as read: bytes without the newline, and where it started."""

    path: str
    offset: int
    data: bytes
    truncated: bool = False


class LineAssembler:
    """Splits a byte stream into lines, holding the incomplete last line until it completes."""

    def __init__(self, path: str, max_line_bytes: int, offset: int = 0) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.line_start = offset
        self._pending = bytearray()
        self._truncated = False

    def feed(self, data: bytes, base: int) -> list[RawLine]:
        """Add bytes that start at stream offset `base`; return the lines they complete."""
        out = []
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            self._hold(data[start:newline])
            out.append(RawLine(self.path, self.line_start, bytes(self._pending), self._truncated))
            self._pending.clear()
            self._truncated = False
            self.line_start = base + newline + 1
            start = newline + 1
        self._hold(data[start:])
        return out

    def flush(self) -> RawLine | None:
        """Return the held partial line as a line (its file will not grow any more)."""
        if not self._pending and not self._truncated:
            return None
        line = RawLine(self.path, self.line_start, bytes(self._pending), self._truncated)
        self.reset(self.line_start + len(self._pending))
        return line

    def reset(self, offset: int) -> None:
        """Drop any partial line and continue at `offset`."""
        self._pending.clear()
        self._truncated = False
        self.line_start = offset

    def _hold(self, piece: bytes) -> None:
        room = self.max_line_bytes - len(self._pending)
        if len(piece) > room:
            self._truncated = True
            piece = piece[: max(room, 0)]
        self._pending += piece


class _OpenFile:
    """One open file being followed."""

    def __init__(self, path: str, max_line_bytes: int, at_end: bool) -> None:
        self.path = path
        self.fh = open(path, "rb", buffering=0)  # noqa: SIM115 (held open across polls)
        st = os.fstat(self.fh.fileno())
        self.identity = (st.st_dev, st.st_ino)
        self.offset = st.st_size if at_end else 0
        self.fh.seek(self.offset)
        self.lines = LineAssembler(path, max_line_bytes, self.offset)
        self.retire_at: float | None = None

    def read(self, budget: int, chunk: int = 1 << 20) -> tuple[list[RawLine], int]:
        """Read up to `budget` bytes; return the completed lines and the bytes read."""
        out: list[RawLine] = []
        read = 0
        while read < budget:
            data = self.fh.read(min(chunk, budget - read))
            if not data:
                break
            out += self.lines.feed(data, self.offset)
            self.offset += len(data)
            read += len(data)
        return out, read

    def restart(self) -> RawLine | None:
        """Start again at offset 0 (the file was truncated); return the flushed partial."""
        partial = self.lines.flush()
        self.offset = 0
        self.fh.seek(0)
        self.lines.reset(0)
        return partial

    def close(self) -> None:
        """Close the file."""
        self.fh.close()


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


class FileTailer:
    """Follows every file matching a set of paths and globs."""

    def __init__(
        self,
        patterns: Sequence[str],
        *,
        from_start: bool = False,
        max_line_bytes: int = 16 * 1024,
        rotate_grace_s: float = 5.0,
        max_bytes_per_poll: int = 8 << 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.patterns = tuple(patterns)
        self.from_start = from_start
        self.max_line_bytes = max_line_bytes
        self.rotate_grace_s = rotate_grace_s
        self.max_bytes_per_poll = max_bytes_per_poll
        self._clock = clock
        self._files: dict[str, _OpenFile] = {}
        self._retiring: list[_OpenFile] = []
        self._polled = False
        self._warned: set[str] = set()

    @property
    def paths(self) -> list[str]:
        """Return the paths followed now."""
        return sorted(self._files)

    def poll(self) -> list[RawLine]:
        """Return every line completed since the last poll, in file order per file."""
        first = not self._polled
        self._polled = True
        for path in self._expand():
            if path not in self._files:
                self._open(path, at_end=first and not self.from_start)
        budget = self.max_bytes_per_poll
        out: list[RawLine] = []
        for old in list(self._retiring):
            out += self._drain_retiring(old)
        for path in list(self._files):
            lines, used = self._follow(path, budget)
            out += lines
            budget = max(budget - used, 1 << 16)
        return out

    def close(self) -> None:
        """Close every file."""
        for f in [*self._files.values(), *self._retiring]:
            f.close()
        self._files.clear()
        self._retiring.clear()

    def _expand(self) -> list[str]:
        found: set[str] = set()
        for pattern in self.patterns:
            matches = [p for p in glob.glob(pattern) if os.path.isfile(p)]
            if not matches and not _is_glob(pattern) and pattern not in self._warned:
                self._warned.add(pattern)
                log.warning("log %s does not exist (yet); watching for it", pattern)
            found.update(matches)
        return sorted(found)

    def _open(self, path: str, at_end: bool) -> None:
        try:
            self._files[path] = _OpenFile(path, self.max_line_bytes, at_end)
        except OSError as exc:
            if path not in self._warned:
                self._warned.add(path)
                log.warning("cannot open log %s: %s", path, exc)

    def _follow(self, path: str, budget: int) -> tuple[list[RawLine], int]:
        current = self._files[path]
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != current.identity:
            # Rotated away (and maybe recreated): drain the old inode for a grace period.
            del self._files[path]
            current.retire_at = self._clock() + self.rotate_grace_s
            self._retiring.append(current)
            lines = self._drain_retiring(current)
            if st is not None:
                self._open(path, at_end=False)
                if path in self._files:
                    more, used = self._files[path].read(budget)
                    return lines + more, used
            return lines, 0
        lines = []
        if st.st_size < current.offset:
            log.info("log %s truncated at %d bytes; reading from 0", path, current.offset)
            partial = current.restart()
            lines = [partial] if partial else []
        more, used = current.read(budget)
        return lines + more, used

    def _drain_retiring(self, old: _OpenFile) -> list[RawLine]:
        lines, _ = old.read(self.max_bytes_per_poll)
        if old.retire_at is not None and self._clock() >= old.retire_at:
            partial = old.lines.flush()
            if partial:
                lines.append(partial)
            old.close()
            self._retiring.remove(old)
        return lines
