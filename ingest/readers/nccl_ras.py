"""NCCL RAS client (``ncclras``, NCCL >= 2.24) text output -> a report and CollectiveProgress.

The RAS client prints a job summary, a communicators table (``Group  Comms  Nodes ...
Status  Errors``) and, per problem, a block ``#<group>-<comm> (<comm hash>) MISMATCH`` with
``Communicator ranks have different <Op> operation counts``, ``N ranks have launched up to
operation K`` lines and the minority's ``Rank R -- GPU G managed by process P on node H``
(NCCL docs, "RAS"; real output in NVIDIA/nccl#1911). The listed ranks are the ones whose count
differs; each becomes a pending record at its count on the communicator named by the hash,
with its node, so a topology keyed by the same hash localizes who never launched the op.

``ncclras -f json`` (``--format=json``) prints one JSON document instead, nothing else on
stdout: ``nccl_version``, ``cuda_runtime_version``, ``cuda_driver_version``, ``timestamp``,
``communicators`` (each: ``hash`` "0x%lx", ``secondary_hash``, ``size``, ``ranks_count``,
``missing_ranks_count``, ``ranks`` with ``rank`` (in the communicator), ``host``, ``pid``,
``cuda_dev``, ``nvml_dev``, ``status`` and ``collective_counts`` per NCCL collective
(Broadcast, Reduce, AllGather, ReduceScatter, AllReduce), and ``missing_ranks`` with
``status.unresponsive`` / ``status.considered_dead``) and ``ras`` (``collection_time_sec``,
``timeouts_count``). Source: NVIDIA/nccl src/ras/client_support.cc (``jsonWriteHeader`` ...
``rasDumpCommsToJSON``, commit 12df1a11afad322be5a204a2db890161cbf8131d) and src/ras/client.cc
(``-f, --format=FMT``). See `parse_ras_json` for how it becomes progress.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ingest.schema import CollectiveProgress, CollectiveState, CommKind, Communicator

VERSION = re.compile(r"^NCCL version (\S+)", re.M)
BLOCK = re.compile(r"^#(\d+)-(\d+) \(([0-9a-f]+)\) (\w+)\s*$", re.M)
OP_COUNTS = re.compile(r"different (\w+) operation counts")
LAUNCHED = re.compile(r"(\d+) ranks? ha(?:ve|s) launched up to operation (\d+)")
RANK_LINE = re.compile(r"Rank (\d+) -- GPU (\d+) managed by process (\d+) on node (\S+)")


@dataclass(frozen=True)
class RasRank:
    """One rank the RAS client lists."""

    rank: int
    gpu: int
    pid: int
    node: str


@dataclass(frozen=True)
class RasProblem:
    """One ``#g-c (hash) STATUS`` block."""

    comm_hash: str
    status: str
    op: str | None
    counts: dict[int, int] = field(default_factory=dict)  # operation count -> ranks at it
    ranks: list[RasRank] = field(default_factory=list)

    @property
    def listed_at(self) -> int | None:
        """Return the operation count of the listed (minority) ranks."""
        if not self.counts:
            return None
        return min(self.counts, key=lambda k: (self.counts[k], -k))


@dataclass(frozen=True)
class RasReport:
    """What one RAS client run says."""

    nccl_version: str | None
    problems: list[RasProblem]


def parse_ras(text: str) -> RasReport:
    """Parse ncclras text output."""
    version = VERSION.search(text)
    starts = list(BLOCK.finditer(text))
    problems = []
    for i, m in enumerate(starts):
        body = text[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        op = OP_COUNTS.search(body)
        problems.append(
            RasProblem(
                comm_hash=m.group(3),
                status=m.group(4),
                op=op.group(1) if op else None,
                counts={int(k): int(n) for n, k in LAUNCHED.findall(body)},
                ranks=[
                    RasRank(int(r), int(g), int(p), node)
                    for r, g, p, node in RANK_LINE.findall(body)
                ],
            )
        )
    return RasReport(version.group(1) if version else None, problems)


def ras_progress(report: RasReport, job_id: str, seen_at: datetime) -> list[CollectiveProgress]:
    """Return a pending record per listed rank of every operation-count mismatch."""
    out = []
    for problem in report.problems:
        seq = problem.listed_at
        if problem.op is None or seq is None:
            continue
        for r in problem.ranks:
            out.append(
                CollectiveProgress(
                    ts=seen_at,
                    job_id=job_id,
                    rank=r.rank,
                    node=r.node,
                    comm=problem.comm_hash,
                    op=problem.op.lower(),
                    seq=seq,
                    state=CollectiveState.STARTED,
                    time_started=seen_at,
                    reporter="nccl_ras",
                )
            )
    return out


# --------------------------------------------------------------------------- JSON


class RasFormatError(ValueError):
    """Text that is not ncclras JSON output (the reason says why)."""


@dataclass(frozen=True)
class RasCommRank:
    """One rank of a communicator in ncclras JSON (``rank`` is its rank in the communicator)."""

    rank: int
    host: str
    pid: int
    cuda_dev: int
    nvml_dev: int
    counts: dict[str, int] = field(default_factory=dict)  # collective -> operations launched
    unresponsive: bool = False
    dead: bool = False

    @property
    def launched(self) -> int:
        """Return how many collectives this rank launched on the communicator (all kinds)."""
        return sum(self.counts.values())


@dataclass(frozen=True)
class RasComm:
    """One communicator of ncclras JSON."""

    comm_hash: str  # as the text output prints it: 16 hex digits, no 0x
    size: int
    ranks: list[RasCommRank]
    missing: list[RasCommRank]


@dataclass(frozen=True)
class RasStatus:
    """What one ``ncclras -f json`` run says."""

    nccl_version: str | None
    timestamp: str | None
    comms: list[RasComm]
    timeouts: int = 0


def looks_like_ras_json(text: str) -> bool:
    """Return whether ncclras output is the JSON document (its first line starting with ``{``)."""
    return any(line.startswith("{") for line in text.splitlines())


def _json_start(text: str) -> int:
    """Return where the document starts: the first line that opens it (stderr may precede it)."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.startswith("{"):
            return offset
        offset += len(line)
    raise RasFormatError("no JSON document (a line starting with '{')")


def _comm_hash(value: object) -> str:
    text = str(value).lower().removeprefix("0x")
    try:
        return f"{int(text, 16):016x}"
    except ValueError as exc:
        raise RasFormatError(f"communicator hash {value!r} is not hex") from exc


def _rank(entry: dict[str, Any], missing: bool) -> RasCommRank:
    status = entry.get("status") or {}
    counts = entry.get("collective_counts") or {}
    if not isinstance(status, dict) or not isinstance(counts, dict):
        raise RasFormatError(f"rank entry {entry.get('rank')!r}: status/counts not objects")
    try:
        return RasCommRank(
            rank=int(entry["rank"]),
            host=str(entry.get("host", "unknown")),
            pid=int(entry.get("pid", -1)),
            cuda_dev=int(entry.get("cuda_dev", -1)),
            nvml_dev=int(entry.get("nvml_dev", -1)),
            counts={str(k): int(v) for k, v in counts.items()},
            unresponsive=missing and bool(status.get("unresponsive")),
            dead=missing and bool(status.get("considered_dead")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RasFormatError(f"rank entry {entry!r}: {exc}") from exc


def parse_ras_json(text: str) -> RasStatus:
    """Parse ``ncclras -f json`` output (anything before the document, e.g. stderr, is skipped)."""
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, _json_start(text))
    except json.JSONDecodeError as exc:
        raise RasFormatError(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("communicators"), list):
        raise RasFormatError("no 'communicators' array: not ncclras JSON")
    try:
        comms = [_comm(c) for c in doc["communicators"]]
        ras = doc["ras"] if isinstance(doc.get("ras"), dict) else {}
        timeouts = int(ras.get("timeouts_count", 0))
    except (TypeError, ValueError) as exc:
        raise RasFormatError(f"unexpected value: {exc}") from exc
    return RasStatus(
        nccl_version=doc.get("nccl_version"),
        timestamp=doc.get("timestamp"),
        comms=comms,
        timeouts=timeouts,
    )


def _comm(c: object) -> RasComm:
    if not isinstance(c, dict) or "hash" not in c:
        raise RasFormatError(f"communicator without a hash: {c!r}")
    entries = [*(c.get("ranks") or []), *(c.get("missing_ranks") or [])]
    if not all(isinstance(e, dict) for e in entries):
        raise RasFormatError(f"communicator {c['hash']}: a rank entry is not an object")
    return RasComm(
        comm_hash=_comm_hash(c["hash"]),
        size=int(c.get("size", 0)),
        ranks=[_rank(r, missing=False) for r in c.get("ranks") or []],
        missing=[_rank(r, missing=True) for r in c.get("missing_ranks") or []],
    )


Process = tuple[str, int, int]  # host, pid, CUDA device: one rank's process and GPU


def global_ranks(status: RasStatus) -> dict[Process, int]:
    """Return each (host, pid, GPU)'s global rank: its rank in the largest communicator.

    The largest communicator is the job's world (PyTorch's default group), whose ranks are the
    global ranks; a rank of any other communicator is the process and GPU it runs on.
    """
    if not status.comms:
        return {}
    world = max(status.comms, key=lambda c: c.size)
    return {(r.host, r.pid, r.cuda_dev): r.rank for r in [*world.ranks, *world.missing]}


def ras_communicators(status: RasStatus) -> list[Communicator]:
    """Return every communicator RAS saw, keyed by its hash, members as global ranks.

    A topology with these ids lets the hang analysis read RAS progress; the largest
    communicator is the world. Members whose process the world does not list are left out.
    """
    to_global = global_ranks(status)
    world = max(status.comms, key=lambda c: c.size) if status.comms else None
    out = []
    for comm in status.comms:
        members = sorted(
            [*comm.ranks, *comm.missing], key=lambda r: r.rank
        )  # comm-rank order, as torch lists a group's ranks
        ranks = [
            g for r in members if (g := to_global.get((r.host, r.pid, r.cuda_dev))) is not None
        ]
        if ranks:
            kind = CommKind.WORLD if comm is world else CommKind.OTHER
            out.append(Communicator(comm=comm.comm_hash, kind=kind, ranks=ranks))
    return out


def _differing_op(ranks: Iterable[RasCommRank]) -> str | None:
    ranks = list(ranks)
    for op in sorted({op for r in ranks for op in r.counts}):
        if len({r.counts.get(op, 0) for r in ranks}) > 1:
            return op
    return None


def ras_json_progress(
    status: RasStatus, job_id: str, seen_at: datetime
) -> list[CollectiveProgress]:
    """Return the progress of every communicator whose ranks disagree or that lacks ranks.

    ``seq`` is the number of collectives a rank launched on the communicator (all kinds
    together: every member launches them in the same order). The ranks at the highest count
    wait in that collective (started); a rank below it has not launched it, so its record is
    completed at its own count and the hang analysis names it missing, as it does the ranks
    RAS could not reach (``missing_ranks``, which report nothing). Healthy communicators
    yield nothing, as in the text output.
    """
    to_global = global_ranks(status)
    out = []
    for comm in status.comms:
        op = _differing_op(comm.ranks)
        if not comm.ranks or (op is None and not comm.missing):
            continue
        head = max(r.launched for r in comm.ranks)
        if head == 0:
            continue  # no collective ever ran on it (p2p only): nothing to compare
        for r in comm.ranks:
            rank = to_global.get((r.host, r.pid, r.cuda_dev))
            if rank is None:
                continue  # a process the world communicator does not list: no global rank
            ahead = r.launched == head
            out.append(
                CollectiveProgress(
                    ts=seen_at,
                    job_id=job_id,
                    rank=rank,
                    node=r.host,
                    comm=comm.comm_hash,
                    op=(op or "unknown").lower(),
                    seq=r.launched,
                    state=CollectiveState.STARTED if ahead else CollectiveState.COMPLETED,
                    time_started=seen_at if ahead else None,
                    time_completed=None if ahead else seen_at,
                    reporter="nccl_ras",
                )
            )
    return out
