"""Follow a long-running command's stdout (dmesg, journalctl): argv lists only, never a shell.

A reader thread splits stdout into lines (same rules as files: partial lines held, long lines
cut) into a bounded queue; when the queue is full the reader blocks, so the command blocks on
its pipe instead of the agent buffering without bound. When the command exits it is started
again with exponential backoff. `offset` is the byte offset in the current run's stdout.
"""

from __future__ import annotations

import logging
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, Any

from ingest.agent.tail import LineAssembler, RawLine

log = logging.getLogger(__name__)

_PUT_TIMEOUT_S = 0.5
_STABLE_RUN_S = 60.0
"""A run this long resets the restart backoff."""


class CommandStream:
    """Lines from a command's stdout, restarted with backoff whenever it exits."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        max_line_bytes: int = 16 * 1024,
        restart_min_s: float = 1.0,
        restart_max_s: float = 60.0,
        max_queued_lines: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
        popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
    ) -> None:
        if not argv:
            raise ValueError("CommandStream needs a non-empty argv")
        self.argv = tuple(argv)
        self.max_line_bytes = max_line_bytes
        self.restart_min_s = restart_min_s
        self.restart_max_s = restart_max_s
        self.restarts = 0
        self._clock = clock
        self._popen = popen
        self._queue: queue.Queue[RawLine] = queue.Queue(max_queued_lines)
        self._proc: subprocess.Popen[bytes] | None = None
        self._threads: list[threading.Thread] = []
        self._stderr: deque[str] = deque(maxlen=20)
        self._closing = threading.Event()
        self._next_start = 0.0
        self._backoff = restart_min_s
        self._started_at = 0.0

    @property
    def label(self) -> str:
        """Return the command as one string (for logs)."""
        return " ".join(self.argv)

    def poll(self, max_lines: int = 50_000) -> list[RawLine]:
        """Start the command if due; return the lines it printed since the last poll."""
        if self._proc is None and self._clock() >= self._next_start and not self._closing.is_set():
            self._start()
        out: list[RawLine] = []
        while len(out) < max_lines:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                break
        if self._proc is not None and self._finished():
            self._on_exit()
        return out

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the command and the reader threads."""
        self._closing.set()
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout_s)
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads = []

    def _start(self) -> None:
        try:
            proc = self._popen(
                list(self.argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
            )
        except OSError as exc:
            log.warning("cannot start %s: %s; retrying in %.0f s", self.label, exc, self._backoff)
            self._schedule_restart()
            return
        self._proc = proc
        self._started_at = self._clock()
        self._stderr.clear()
        assert proc.stdout is not None and proc.stderr is not None  # PIPE above
        self._threads = [
            threading.Thread(
                target=self._pump,
                args=(proc.stdout,),
                daemon=True,
                name=f"tg-agent-{self.argv[0]}-out",
            ),
            threading.Thread(
                target=self._pump_stderr,
                args=(proc.stderr,),
                daemon=True,
                name=f"tg-agent-{self.argv[0]}-err",
            ),
        ]
        for thread in self._threads:
            thread.start()

    def _pump(self, stdout: IO[bytes]) -> None:
        lines = LineAssembler(self.argv[0], self.max_line_bytes)
        offset = 0
        read1: Any = getattr(stdout, "read1", stdout.read)
        while not self._closing.is_set():
            data = read1(65536)
            if not data:
                break
            for line in lines.feed(data, offset):
                self._put(line)
            offset += len(data)
        partial = lines.flush()
        if partial is not None:
            self._put(partial)

    def _pump_stderr(self, stderr: IO[bytes]) -> None:
        for raw in iter(stderr.readline, b""):
            self._stderr.append(raw.decode("utf-8", errors="replace").rstrip())

    def _put(self, line: RawLine) -> None:
        while not self._closing.is_set():
            try:
                self._queue.put(line, timeout=_PUT_TIMEOUT_S)
                return
            except queue.Full:
                continue

    def _finished(self) -> bool:
        assert self._proc is not None
        return self._proc.poll() is not None and not any(t.is_alive() for t in self._threads)

    def _on_exit(self) -> None:
        assert self._proc is not None
        rc = self._proc.returncode
        ran_s = self._clock() - self._started_at
        self._proc = None
        self._threads = []
        self.restarts += 1
        if ran_s >= _STABLE_RUN_S:
            self._backoff = self.restart_min_s
        log.warning(
            "%s exited (rc=%s after %.1f s)%s; restarting in %.0f s",
            self.label,
            rc,
            ran_s,
            f": {' | '.join(self._stderr)}" if self._stderr else "",
            self._backoff,
        )
        self._schedule_restart()

    def _schedule_restart(self) -> None:
        self._next_start = self._clock() + self._backoff
        self._backoff = min(self._backoff * 2, self.restart_max_s)
