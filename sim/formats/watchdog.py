"""PyTorch ProcessGroupNCCL watchdog output: collective timeouts, stuck watchdogs, the abort.

- PyTorch 2.5 sequence (public_lines watchdog-timeout-torch25, sgl-project/sglang#1693): c10
  glog lines ``[rankN]:[E1016 03:31:38.928463388 ProcessGroupNCCL.cpp:607] ...`` with the
  source lines of that build, then the C++ abort (``terminate called after throwing ...``,
  ``what():``, ``Exception raised from checkTimeout ...`` and the native frames) unprefixed.
- PyTorch 2.6+ labels process groups ``[PG ID 0 PG GUID 0(default_pg) Rank 1]``
  (public_lines watchdog-pg-guid; real_logs nccl-watchdog-heartbeat-stuck).
- PyTorch <= 2.1: ``[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught ...`` without Numel
  fields (real_logs nccl-timeout) and the old abort of real_logs nccl-remote-error, whose line
  breaks the issue page flattened; they are restored at each ``[E`` and sentence boundary.
- The heartbeat monitor's ``watchdog got stuck`` line (real_logs nccl-watchdog-heartbeat-stuck).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime

from sim.formats.cuda import cuda_error_lines

# Source lines of ProcessGroupNCCL.cpp in the PyTorch 2.5 build of sglang#1693.
_LINE_TIMEOUT, _LINE_EXCEPTION, _LINE_AT_WORK = 607, 1664, 1709
_LINE_FAILED, _LINE_TAKING_DOWN, _LINE_TERMINATED, _LINE_CHECK = 621, 627, 1515, 609

_ABORT_FRAMES: tuple[tuple[str, int, str, int], ...] = (
    ("c10::Error::Error(c10::SourceLocation, std::string)", 0x96, "libc10.so", 0x7F3B6D41DF86),
    (
        "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long,"
        " std::ratio<1l, 1000l> > >)",
        0x1D2,
        "libtorch_cuda.so",
        0x7F3B6E71A8D2,
    ),
    ("c10d::ProcessGroupNCCL::watchdogHandler()", 0x233, "libtorch_cuda.so", 0x7F3B6E721313),
    ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", 0x10C, "libtorch_cuda.so", 0x7F3B6E7236FC),
    ("<unknown function>", 0xD6DF4, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 0x7F3BCA9D5DF4),
    ("<unknown function>", 0x8609, "/usr/lib/x86_64-linux-gnu/libpthread.so.0", 0x7F3C74F76609),
    ("clone", 0x43, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7F3C750B0353),
)
"""Native frames of the watchdog abort: symbol, offset, library and the address recorded in
sglang#1693 (watchdogHandler's from its offset to checkTimeout in jpata/particleflow#390)."""


@dataclass(frozen=True)
class WorkNccl:
    """The collective a watchdog reports: ``WorkNCCL(SeqNum=..., OpType=..., ...)``."""

    seq: int
    op_type: str
    numel_in: int
    numel_out: int
    timeout_ms: int = 600_000

    def describe(self) -> str:
        """Return ``WorkNCCL(SeqNum=..., OpType=..., NumelIn=..., ..., Timeout(ms)=...)``."""
        return (
            f"WorkNCCL(SeqNum={self.seq}, OpType={self.op_type}, NumelIn={self.numel_in}, "
            f"NumelOut={self.numel_out}, Timeout(ms)={self.timeout_ms})"
        )


@dataclass(frozen=True)
class ProcessGroup:
    """How a watchdog names its process group: ``[PG 3 Rank 4]`` or, with a GUID, 2.6+'s form."""

    pg_id: int = 0
    guid: int | None = None
    desc: str = "default_pg"

    def label(self, rank: int) -> str:
        """Return the bracketed process-group label for `rank`."""
        if self.guid is None:
            return f"[PG {self.pg_id} Rank {rank}]"
        return f"[PG ID {self.pg_id} PG GUID {self.guid}({self.desc}) Rank {rank}]"


def glog_prefix(ts: datetime, line: int, rank: int, file: str = "ProcessGroupNCCL.cpp") -> str:
    """Return c10's ``[rankN]:[EMDD HH:MM:SS.nnnnnnnnn file:line] `` error-log prefix.

    c10 does not zero-pad the month: ``[E626 05:14:36...`` is June 26, ``[E1016 ...`` October 16
    (real_logs nccl-watchdog-heartbeat-stuck, public_lines watchdog-timeout-torch25).
    """
    nanos = ts.microsecond * 1000
    return f"[rank{rank}]:[E{ts.month}{ts.day:02d} {ts:%H:%M:%S}.{nanos:09d} {file}:{line}] "


def _caught(rank: int, work: WorkNccl, ran_for_ms: int) -> str:
    """Return the ``[Rank N] Watchdog caught collective operation timeout: ...`` sentence."""
    return (
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work.describe()} ran for "
        f"{ran_for_ms} milliseconds before timing out."
    )


def watchdog_timeout_lines(
    ts: datetime,
    rank: int,
    work: WorkNccl,
    ran_for_ms: int,
    last_enqueued: int,
    last_completed: int,
    group: ProcessGroup | None = None,
) -> list[str]:
    """Return one rank's watchdog timeout report, as PyTorch 2.5 logs it."""
    pg = (group or ProcessGroup()).label(rank)
    works = f"last enqueued NCCL work: {last_enqueued}, last completed NCCL work: {last_completed}."
    entries = (
        (_LINE_TIMEOUT, _caught(rank, work, ran_for_ms)),
        (
            _LINE_EXCEPTION,
            f"{pg} Exception (either an error or timeout) detected by watchdog at "
            f"work: {work.seq}, {works}",
        ),
        (_LINE_AT_WORK, f"{pg} Timeout at NCCL work: {work.seq}, {works}"),
        (
            _LINE_FAILED,
            f"[Rank {rank}] Some NCCL operations have failed or timed out. Due to the "
            "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
        ),
        (
            _LINE_TAKING_DOWN,
            f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        ),
        (
            _LINE_TERMINATED,
            f"{pg} Process group watchdog thread terminated with exception: "
            f"{_caught(rank, work, ran_for_ms)}",
        ),
    )
    return [glog_prefix(ts, line, rank) + text for line, text in entries]


def native_frames(rng: random.Random, torch_lib: str) -> list[str]:
    """Return the watchdog's native stack, each library shifted by an ASLR-like page offset."""
    shifts: dict[str, int] = {}
    lines = []
    for i, (symbol, offset, lib, address) in enumerate(_ABORT_FRAMES):
        path = lib if lib.startswith("/") else f"{torch_lib}/{lib}"
        shift = shifts.setdefault(lib, rng.randrange(-(2**24), 2**24) << 12)
        lines.append(f"frame #{i}: {symbol} + 0x{offset:x} (0x{address + shift:x} in {path})")
    return lines


def watchdog_abort_lines(
    rank: int,
    work: WorkNccl,
    ran_for_ms: int,
    rng: random.Random,
    group: ProcessGroup | None = None,
    torch_lib: str = "/usr/local/lib/python3.10/dist-packages/torch/lib",
) -> list[str]:
    """Return the C++ abort that ends a timed-out rank (stderr, no rank prefix)."""
    pg = (group or ProcessGroup()).label(rank)
    return [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: "
        f"{_caught(rank, work, ran_for_ms)}",
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
        f"ProcessGroupNCCL.cpp:{_LINE_CHECK} (most recent call first):",
        *native_frames(rng, torch_lib),
    ]


def watchdog_cuda_error_lines(
    ts: datetime, rank: int, kind: str, line: int = 1895, group: ProcessGroup | None = None
) -> list[str]:
    """Return the watchdog dying on a sticky CUDA error (ECC, Xid 79: illegal address etc.)."""
    pg = (group or ProcessGroup()).label(rank)
    first, *suffix = cuda_error_lines(kind)
    message = first.split(": ", 1)[1]
    return [
        f"{glog_prefix(ts, line, rank)}{pg} Process group watchdog thread terminated with "
        f"exception: {message}",
        *suffix,
        "Exception raised from c10_cuda_check_implementation at "
        "/pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):",
    ]


def heartbeat_stuck_line(
    ts: datetime, rank: int, stuck_s: int, line: int = 1743, group: ProcessGroup | None = None
) -> str:
    """Return the heartbeat monitor's report of a watchdog stuck inside a CUDA/NCCL call."""
    pg = (group or ProcessGroup(guid=0)).label(rank)
    return (
        f"{glog_prefix(ts, line, rank)}{pg} ProcessGroupNCCL's watchdog got stuck for {stuck_s} "
        "seconds without making progress in monitoring enqueued collectives. This typically "
        "indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and "
        "could be triggered by another thread holding the GIL inside a CUDA api (for example, "
        "CudaEventDestroy), or other deadlock-prone behaviors.If you suspect the watchdog is not "
        "actually stuck and a longer timeout would help, you can either increase the timeout "
        "(TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value or disable the heartbeat monitor "
        "(TORCH_NCCL_ENABLE_MONITORING=0).If either of aforementioned helps, feel free to file an "
        "issue to PyTorch about the short timeout or false positive abort; otherwise, please "
        "attempt to debug the hang. "
    )


def legacy_watchdog_timeout_line(
    rank: int, seq: int, op_type: str, timeout_ms: int, ran_for_ms: int, line: int = 458
) -> str:
    """Return PyTorch <= 2.1's one-line watchdog timeout (real_logs nccl-timeout)."""
    return (
        f"[E ProcessGroupNCCL.cpp:{line}] [Rank {rank}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType={op_type}, Timeout(ms)={timeout_ms}) ran for "
        f"{ran_for_ms} milliseconds before timing out."
    )


def legacy_nccl_abort_lines(nccl_version: str, last_error: str) -> list[str]:
    """Return PyTorch <= 2.1's abort on an ncclRemoteError (real_logs nccl-remote-error)."""
    return [
        "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.",
        "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire "
        "process down.",
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  NCCL error: remote process exited or there was a network error, NCCL version "
        f"{nccl_version}",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.",
        "Last error:",
        last_error,
    ]
