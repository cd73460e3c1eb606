"""``py-spy dump`` text -> one stack per thread.

py-spy's src/dump.rs prints ``Process {pid}: {cmdline}``, ``Python v...``, then per thread
``Thread {id} ({active|idle|active+gil}): "{name}"`` and frames ``    {function} ({file}:{line})``
(see sim/formats/pyspy.py). Hand-aggregated dumps, like the BLOOM-176B one in the shared
samples, list several ``Thread`` headers above one stack: each of those threads gets it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROCESS = re.compile(r"^Process (\d+):")
THREAD = re.compile(r"^Thread (\S+) \(([\w+]+)\)(?:: \"(.*)\")?\s*$")
FRAME = re.compile(r"^\s{2,}(\S.*?) \((.+?)(?::(\d+))?\)\s*$")

Frame = tuple[str, str]
"""(function, file): line numbers left out so one code path is one stack across versions."""


@dataclass(frozen=True)
class PyThread:
    """One thread of one dumped process."""

    thread: str
    status: str
    name: str | None
    frames: tuple[Frame, ...]
    pid: int | None = None
    source: str = ""

    @property
    def top(self) -> Frame | None:
        """Return the innermost frame."""
        return self.frames[0] if self.frames else None


def parse_pyspy(text: str, source: str = "") -> list[PyThread]:
    """Return every thread of a dump (or of several concatenated dumps) with its stack."""
    out: list[PyThread] = []
    pid: int | None = None
    heads: list[tuple[str, str, str | None]] = []
    frames: list[Frame] = []

    def close() -> None:
        if heads and frames:
            out.extend(PyThread(t, s, n, tuple(frames), pid, source) for t, s, n in heads)
            heads.clear()
        frames.clear()

    for line in text.splitlines():
        if m := PROCESS.match(line):
            close()
            heads.clear()
            pid = int(m.group(1))
        elif m := THREAD.match(line):
            if frames:
                close()
            heads.append((m.group(1), m.group(2), m.group(3)))
        elif heads and (m := FRAME.match(line)):
            frames.append((m.group(1), m.group(2)))
        elif frames:
            close()
    close()
    return out
