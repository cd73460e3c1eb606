"""PyTorch Flight Recorder dumps -> CollectiveProgress events.

The dump is the pickled dict of torch/csrc/distributed/c10d/FlightRecorder*.cpp (``version``,
``pg_config``, ``pg_status``, ``entries``; each entry has ``record_id``, ``pg_id``,
``process_group`` (name, desc), ``collective_seq_id``, ``p2p_seq_id``, ``profiling_name``
(``nccl:all_reduce``, ``gloo:all_reduce``), ``state`` (scheduled/started/completed),
``time_created_ns``, ``time_discovered_started_ns``, ``time_discovered_completed_ns``,
``retired``, ``timeout_ms``, ``input_sizes``/``input_dtypes``). It is what
``torch._C._distributed_c10d._dump_nccl_trace()`` / ``_dump_fr_trace()`` return and what
``TORCH_NCCL_DUMP_ON_TIMEOUT=1`` writes, one file per rank, to
``${TORCH_NCCL_DEBUG_INFO_TEMP_FILE:-/tmp/nccl_trace_rank_}<rank>``.

Gloo's recorder (PyTorch 2.15) never moves an entry past ``scheduled``: a finished gloo op
shows as ``retired`` and under ``pg_status[pg].last_completed_collective``; both count as
completed here.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest.schema import CollectiveProgress, CollectiveState

RANK_IN_NAME = re.compile(r"(\d+)(?:\.pkl|\.pickle)?$")
_DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Byte": 1}


class FlightRecorderError(ValueError):
    """A file that is not a Flight Recorder dump (the reason says why)."""


@dataclass(frozen=True)
class DumpContext:
    """Who the dump belongs to."""

    job_id: str
    rank: int
    node: str | None = None


def load_dump(raw: bytes) -> dict[str, Any]:
    """Unpickle one dump (trusted input: the job's own files) and check its shape."""
    try:
        data = pickle.loads(raw)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise FlightRecorderError(f"not a pickle: {exc}") from exc
    if not isinstance(data, dict) or "entries" not in data:
        raise FlightRecorderError("pickle has no 'entries': not a Flight Recorder dump")
    return data


def _ts(ns: object) -> datetime | None:
    if not isinstance(ns, int) or ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=UTC)


def _last_completed(dump: Mapping[str, Any]) -> dict[str, int]:
    status = dump.get("pg_status") or {}
    out: dict[str, int] = {}
    for pg_id, st in status.items():
        if isinstance(st, dict):
            out[str(pg_id)] = int(st.get("last_completed_collective", -1))
    return out


def entry_state(entry: Mapping[str, Any], last_completed: Mapping[str, int]) -> CollectiveState:
    """Return an entry's state, counting gloo's retired or pg_status-completed ops as completed."""
    state = str(entry.get("state", "scheduled"))
    if state == "completed" or entry.get("retired"):
        return CollectiveState.COMPLETED
    done = last_completed.get(str(entry.get("pg_id")), -1)
    if not entry.get("is_p2p") and int(entry.get("collective_seq_id", 0)) <= done:
        return CollectiveState.COMPLETED
    try:
        return CollectiveState(state)
    except ValueError:
        return CollectiveState.SCHEDULED


def _bytes(entry: Mapping[str, Any]) -> int | None:
    sizes, dtypes = entry.get("input_sizes") or [], entry.get("input_dtypes") or []
    total = 0
    for shape, dtype in zip(sizes, dtypes, strict=False):
        n = 1
        for d in shape:
            n *= int(d)
        total += n * _DTYPE_BYTES.get(str(dtype), 0)
    return total or None


def entry_progress(
    entry: Mapping[str, Any], ctx: DumpContext, state: CollectiveState, seen_at: datetime
) -> CollectiveProgress:
    """Return one entry as this rank's CollectiveProgress."""
    pg = entry.get("process_group") or (str(entry.get("pg_id", "0")), "")
    op = str(entry.get("profiling_name", "unknown")).split(":", 1)[-1] or "unknown"
    started = _ts(entry.get("time_discovered_started_ns"))
    completed = _ts(entry.get("time_discovered_completed_ns"))
    dtypes = entry.get("input_dtypes") or []
    return CollectiveProgress(
        ts=completed or started or seen_at,
        job_id=ctx.job_id,
        rank=ctx.rank,
        node=ctx.node,
        comm=str(pg[0]) or "0",
        op=op,
        seq=int(entry.get("collective_seq_id", 0)),
        p2p_seq=int(entry["p2p_seq_id"]) if entry.get("is_p2p") else None,
        state=state,
        bytes=_bytes(entry),
        dtype=str(dtypes[0]) if dtypes else None,
        time_created=_ts(entry.get("time_created_ns")),
        time_started=started,
        time_completed=completed,
        timeout_ms=float(entry["timeout_ms"]) if entry.get("timeout_ms") else None,
        reporter="flight_recorder",
    )


def dump_progress(
    dump: Mapping[str, Any], ctx: DumpContext, seen_at: datetime
) -> list[CollectiveProgress]:
    """Return every entry of a dump as CollectiveProgress, in record order."""
    last = _last_completed(dump)
    entries = sorted(dump.get("entries") or [], key=lambda e: int(e.get("record_id", 0)))
    return [entry_progress(e, ctx, entry_state(e, last), seen_at) for e in entries]


def latest_per_comm(progress: Iterable[CollectiveProgress]) -> list[CollectiveProgress]:
    """Keep what diagnosis needs: every pending op and the last completed one per communicator."""
    done: dict[str, CollectiveProgress] = {}
    pending: list[CollectiveProgress] = []
    for p in progress:
        if p.state == CollectiveState.COMPLETED:
            cur = done.get(p.comm)
            if cur is None or p.seq >= cur.seq:
                done[p.comm] = p
        else:
            pending.append(p)
    return [*done.values(), *pending]


def rank_of(path: Path) -> int:
    """Return the rank a dump file is for, from its name (``nccl_trace_rank_3``)."""
    m = RANK_IN_NAME.search(path.name)
    if m is None:
        raise FlightRecorderError(f"{path.name}: no rank number at the end of the file name")
    return int(m.group(1))


def read_dump_dir(
    directory: Path, job_id: str, nodes: Mapping[int, str] | None = None
) -> Iterator[CollectiveProgress]:
    """Yield the progress of every per-rank dump file in a directory (dump-on-timeout output)."""
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        rank = rank_of(path)
        dump = load_dump(path.read_bytes())
        seen = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        ctx = DumpContext(job_id, rank, (nodes or {}).get(rank))
        yield from latest_per_comm(dump_progress(dump, ctx, seen))


# --------------------------------------------------------------------------- fr_trace text

_ANALYZER = {
    "seq": re.compile(r"^Not all ranks joining collective: sequence number: (\d+)", re.M),
    "group": re.compile(r"^group info: (\S+)", re.M),
    "op": re.compile(r"^collective: (\S+)", re.M),
    "missing": re.compile(r"^missing ranks: \{([\d, ]*)\}", re.M),
    "expected": re.compile(r"^expected ranks: \{([\d, ]*)\}", re.M),
    "state": re.compile(r"^collective state: (\w+)", re.M),
}


@dataclass(frozen=True)
class NotAllJoined:
    """fr_trace's "Not all ranks joining collective" finding."""

    seq: int
    group: str
    op: str
    missing: frozenset[int]
    expected: frozenset[int]
    state: CollectiveState


def _ranks(text: str) -> frozenset[int]:
    return frozenset(int(r) for r in text.split(",") if r.strip())


def parse_fr_analysis(text: str) -> list[NotAllJoined]:
    """Parse the PyTorch Flight Recorder analyzer's (``fr_trace``) missing-rank reports."""
    out = []
    for block in re.split(r"(?=^Not all ranks joining collective)", text, flags=re.M):
        found = {k: p.search(block) for k, p in _ANALYZER.items()}
        if any(m is None for m in found.values()):
            continue
        g = {k: m.group(1) for k, m in found.items() if m is not None}
        out.append(
            NotAllJoined(
                seq=int(g["seq"]),
                group=g["group"].split(":", 1)[0],  # "0:default_pg": pg name, then desc
                op=g["op"].split(":", 1)[-1],
                missing=_ranks(g["missing"]),
                expected=_ranks(g["expected"]),
                state=CollectiveState(g["state"]),
            )
        )
    return out


def analysis_progress(
    report: NotAllJoined, job_id: str, seen_at: datetime, nodes: Mapping[int, str] | None = None
) -> list[CollectiveProgress]:
    """Return the joined ranks' pending records; the missing ranks report nothing, as in life."""
    return [
        CollectiveProgress(
            ts=seen_at,
            job_id=job_id,
            rank=rank,
            node=(nodes or {}).get(rank),
            comm=report.group,
            op=report.op,
            seq=report.seq,
            state=report.state,
            time_created=seen_at,
            reporter="flight_recorder",
        )
        for rank in sorted(report.expected - report.missing)
    ]
