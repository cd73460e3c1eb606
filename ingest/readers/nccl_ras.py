"""NCCL RAS client (``ncclras``, NCCL >= 2.24) text output -> a report and CollectiveProgress.

The RAS client prints a job summary, a communicators table (``Group  Comms  Nodes ...
Status  Errors``) and, per problem, a block ``#<group>-<comm> (<comm hash>) MISMATCH`` with
``Communicator ranks have different <Op> operation counts``, ``N ranks have launched up to
operation K`` lines and the minority's ``Rank R -- GPU G managed by process P on node H``
(NCCL docs, "RAS"; real output in NVIDIA/nccl#1911). The listed ranks are the ones whose count
differs; each becomes a pending record at its count on the communicator named by the hash,
with its node, so a topology keyed by the same hash localizes who never launched the op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from ingest.schema import CollectiveProgress, CollectiveState

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
