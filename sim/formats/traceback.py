"""Python tracebacks as training stderr shows them: per-rank prefixes and torchrun's summary.

- Python's own shape (``Traceback (most recent call last):``, ``  File "...", line N, in f``,
  four-space source line, ``Type: message``), without 3.11's ``^^^`` markers, as the Python 3.10
  excerpt real_logs host-fs-io-error prints it.
- PyTorch's per-rank prefix: ``[rank3]: `` on each Python traceback line (real_logs
  host-fs-io-error, nccl-unhandled-cuda-error) but ``[rank2]:`` with no space before the
  ``[E626 ...]`` of C++ log lines (real_logs nccl-watchdog-heartbeat-stuck).
- torchrun's ``ChildFailedError`` block (public_lines torchrun-child-failed) and the
  elastic agent's ``failed (exitcode: ...)`` line (two real spellings quoted in public issues).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

ELASTIC_ERRORS_URL = "https://pytorch.org/docs/stable/elastic/errors.html"
_RULE = "=" * 60
_THIN_RULE = "-" * 60
_SIGNALS = {6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}


@dataclass(frozen=True)
class PyFrame:
    """One traceback entry; `source` None when Python cannot read the file (no source line)."""

    file: str
    line: int
    function: str
    source: str | None = None


def python_traceback(frames: Sequence[PyFrame], exception: str) -> list[str]:
    """Return a traceback ending in `exception` (``KeyError: 'input_ids'``), oldest frame first."""
    lines = ["Traceback (most recent call last):"]
    for frame in frames:
        lines.append(f'  File "{frame.file}", line {frame.line}, in {frame.function}')
        if frame.source is not None:
            lines.append(f"    {frame.source}")
    lines.extend(exception.split("\n"))
    return lines


def rank_prefixed(lines: Sequence[str], rank: int) -> list[str]:
    """Return Python-side lines with PyTorch's ``[rankN]: `` prefix."""
    return [f"[rank{rank}]: {line}" for line in lines]


def rank_prefixed_cpp(lines: Sequence[str], rank: int) -> list[str]:
    """Return C++-log lines (``[E1016 ...]``) with PyTorch's ``[rankN]:`` prefix."""
    return [f"[rank{rank}]:{line}" for line in lines]


def user_exception_lines(
    rank: int, frames: Sequence[PyFrame], exc_type: str, message: str
) -> list[str]:
    """Return a user-code exception as a torchrun rank prints it."""
    return rank_prefixed(python_traceback(frames, f"{exc_type}: {message}"), rank)


def elastic_failed_line(
    ts: datetime,
    local_rank: int,
    pid: int,
    exitcode: int,
    binary: str,
    agent_pid: int,
    style: Literal["bracket", "glog"] = "glog",
) -> str:
    """Return the elastic agent's ``failed (exitcode: N) local_rank: ...`` line."""
    tail = (
        f"failed (exitcode: {exitcode}) local_rank: {local_rank} (pid: {pid}) of binary: {binary}"
    )
    if style == "bracket":
        stamp = f"{ts:%Y-%m-%d %H:%M:%S},{ts.microsecond // 1000:03d}"
        return f"[{stamp}] torch.distributed.elastic.multiprocessing.api: [ERROR] {tail}"
    stamp = f"E{ts:%m%d %H:%M:%S}.{ts.microsecond:06d}"
    source = "torch/distributed/elastic/multiprocessing/api.py:984"
    return f"{stamp} {agent_pid} {source}] {tail}"


def _failure_record(
    index: int, ts: datetime, host: str, rank: int, local_rank: int, exitcode: int, pid: int
) -> list[str]:
    """Return one ``[i]:`` failure record of the ChildFailedError block."""
    if exitcode < 0:
        signal = -exitcode
        name = _SIGNALS.get(signal, f"SIG{signal}")
        trace = f"Signal {signal} ({name}) received by PID {pid}"
    else:
        trace = f"To enable traceback see: {ELASTIC_ERRORS_URL}"
    return [
        f"[{index}]:",
        f"  time      : {ts:%Y-%m-%d_%H:%M:%S}",
        f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {local_rank})",
        f"  exitcode  : {exitcode} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {trace}",
    ]


def child_failed_lines(
    script: str, ts: datetime, host: str, rank: int, local_rank: int, exitcode: int, pid: int
) -> list[str]:
    """Return torchrun's ChildFailedError summary for the first failed rank."""
    return [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        _RULE,
        f"{script} FAILED",
        _THIN_RULE,
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        _THIN_RULE,
        "Root Cause (first observed failure):",
        *_failure_record(0, ts, host, rank, local_rank, exitcode, pid),
        _RULE,
    ]
