"""Hang localization: follow who waits on whom across communicators to the rank(s) that stopped.

Works from the latest record per (rank, communicator), so a long window costs one pass. A
communicator is stalled when a member's pending collective (scheduled or started, never
completed) is older than `stall_after`. Its members that have not joined that collective
are either waiting in another stalled communicator (follow them) or the root of the hang.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

import networkx as nx

from diagnosis.graph import CommGraph, comm_key, rank_key
from diagnosis.localize.suspects import Blamed, rank_suspects
from diagnosis.model import Suspect
from ingest.schema import CollectiveProgress, CollectiveState

STALL_AFTER = timedelta(seconds=30)
MAX_TRACED_ROOTS = 32
_ORDER = {CollectiveState.SCHEDULED: 0, CollectiveState.STARTED: 1, CollectiveState.COMPLETED: 2}
Latest = dict[tuple[int, str], CollectiveProgress]


@dataclass(frozen=True)
class Stall:
    """One communicator stuck on one collective."""

    comm: str
    seq: int
    op: str
    since: datetime
    waiting: tuple[int, ...]
    missing: tuple[int, ...]

    @property
    def everyone_joined(self) -> bool:
        """Return whether every member joined (the collective itself is stuck: transport)."""
        return not self.missing


def latest_records(progress: Iterable[CollectiveProgress], job_id: str) -> Latest:
    """Return the latest record per (rank, communicator) of one job."""
    out: Latest = {}
    for p in progress:
        if p.job_id != job_id:
            continue
        key = (p.rank, p.comm)
        cur = out.get(key)
        if cur is None or (p.seq, _ORDER[p.state]) > (cur.seq, _ORDER[cur.state]):
            out[key] = p
    return out


def find_stalls(
    graph: CommGraph,
    progress: Iterable[CollectiveProgress],
    now: datetime,
    stall_after: timedelta = STALL_AFTER,
) -> list[Stall]:
    """Return every stalled communicator of the job, with who waits and who has not joined."""
    return _stalls(graph, latest_records(progress, graph.job_id), now, stall_after)


def _stalls(graph: CommGraph, latest: Latest, now: datetime, stall_after: timedelta) -> list[Stall]:
    by_comm: dict[str, dict[int, CollectiveProgress]] = defaultdict(dict)
    stuck: dict[str, CollectiveProgress] = {}
    for (rank, comm), rec in latest.items():
        if comm not in graph.comm_members:
            continue
        by_comm[comm][rank] = rec
        if _pending(rec) and now - _since(rec) >= stall_after:
            prev = stuck.get(comm)
            if prev is None or rec.seq > prev.seq:
                stuck[comm] = rec
    out = []
    for comm, pending in stuck.items():
        seen = by_comm[comm]
        k = pending.seq
        waiting = tuple(r for r, rec in seen.items() if rec.seq == k and _pending(rec))
        missing = tuple(r for r in graph.members(comm) if r not in seen or seen[r].seq < k)
        since = min(_since(seen[r]) for r in waiting)
        out.append(Stall(comm, k, pending.op, since, waiting, missing))
    return out


def _pending(rec: CollectiveProgress) -> bool:
    return rec.state != CollectiveState.COMPLETED


def _since(rec: CollectiveProgress) -> datetime:
    return rec.time_started or rec.time_created or rec.ts


def localize_hang(
    graph: CommGraph,
    progress: Iterable[CollectiveProgress],
    now: datetime,
    stall_after: timedelta = STALL_AFTER,
) -> list[Suspect]:
    """Return the rank(s) a hung job waits on, as GPU (or node) suspects, best first.

    Scores are each root's share of the ranks that wait on it, directly or through others.
    No stall, or stalls in which every member joined (a transport problem, see
    `localize_network`), yield no suspect.
    """
    latest = latest_records(progress, graph.job_id)
    stalls = _stalls(graph, latest, now, stall_after)
    if not any(s.missing for s in stalls):
        return []
    waits = _wait_for(stalls)
    roots, cycle = _roots(waits)
    by_comm = {s.comm: s for s in stalls}
    blamed = [_blame(graph, waits, latest, by_comm, r, now, cycle) for r in _traced(waits, roots)]
    return rank_suspects(graph, blamed, sum(b.weight for b in blamed))


def _wait_for(stalls: list[Stall]) -> nx.DiGraph:
    """Return rank -> stalled comm (waits in it) -> rank (has not joined it) edges."""
    g = nx.DiGraph()
    g.add_edges_from((rank_key(r), comm_key(s.comm)) for s in stalls for r in s.waiting)
    g.add_edges_from((comm_key(s.comm), rank_key(r)) for s in stalls for r in s.missing)
    return g


def _roots(waits: nx.DiGraph) -> tuple[list[int], bool]:
    """Return the ranks nothing else holds up; in a wait cycle, the ranks of the sink cycles."""
    missing = [n for n in waits if n[0] == "rank" and waits.in_degree(n) > 0]
    roots = [n[1] for n in missing if waits.out_degree(n) == 0]
    if roots:
        return sorted(roots), False
    dag = nx.condensation(waits)
    sinks = [c for c in dag if dag.out_degree(c) == 0]
    members = (n for c in sinks for n in dag.nodes[c]["members"])
    ranks = {n[1] for n in members if n[0] == "rank" and waits.in_degree(n) > 0}
    return sorted(ranks), True


def _traced(waits: nx.DiGraph, roots: list[int]) -> list[int]:
    """Return the roots to trace, the most directly waited-on first (bounded for huge hangs)."""
    direct = {r: sum(waits.in_degree(c) for c in waits.predecessors(rank_key(r))) for r in roots}
    return sorted(roots, key=lambda r: -direct[r])[:MAX_TRACED_ROOTS]


def _blame(
    graph: CommGraph,
    waits: nx.DiGraph,
    latest: Latest,
    by_comm: dict[str, Stall],
    root: int,
    now: datetime,
    cycle: bool,
) -> Blamed:
    """Weigh one root by the ranks that wait on it and say why in one sentence."""
    upstream = nx.ancestors(waits, rank_key(root))
    ranks = sum(1 for n in upstream if n[0] == "rank" and n[1] != root)
    comms = sum(1 for n in upstream if n[0] == "comm")
    direct = [by_comm[c[1]] for c in waits.predecessors(rank_key(root))]
    first = max(direct, key=lambda s: len(s.waiting))
    own = latest.get((root, first.comm))
    if own is None:
        last = "no record on it"
    elif own.state == CollectiveState.COMPLETED:
        last = f"last completed #{own.seq}"
    else:
        last = f"last {own.state} #{own.seq}"
    more = f" and {_count(len(direct) - 1, 'more communicator')}" if len(direct) > 1 else ""
    stuck = (now - first.since).total_seconds()
    why = (
        f"{graph.describe(root)} has not joined {first.op} #{first.seq} on {first.comm}{more}"
        f" ({last}; stalled {stuck:.0f} s); {_count(ranks, 'rank')} in"
        f" {_count(comms, 'communicator')} wait on it"
    )
    if cycle:
        why += " (ranks wait on each other in a cycle: a mismatched collective order)"
    return Blamed(root, float(ranks + 1), why)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
