"""Straggler localization: who arrives last at collectives, and whose own work made it late.

For every (communicator, seq) the member that arrived last (latest start; it also waits
least) made the others wait. It is late either through its own work (its busy time since
its previous collective on that communicator, not counting time spent waiting inside other
collectives, is longer than its peers') or because its previous collective finished late,
and then the blame follows that collective back to where it started. Waits are summed per
origin rank over TP, PP and DP groups and steps; an origin is blamed only when its excess
is beyond healthy jitter and it recurs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from diagnosis.graph import CommGraph
from diagnosis.localize.suspects import Blamed, rank_suspects
from diagnosis.model import Suspect
from ingest.schema import CollectiveProgress, CollectiveState

REL_JITTER = 0.10  # busy-time excess over peers' that is still healthy jitter
MIN_EXCESS_S = 0.001
MIN_PERSISTENCE = 0.5
MIN_SCORE = 0.05  # smallest share of the traced waiting worth naming
MAX_SUSPECTS = 5


@dataclass(frozen=True)
class _Records:
    """Completed collectives as arrays, one row per (rank, comm, seq)."""

    rank: np.ndarray
    comm: np.ndarray
    seq: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class _Groups:
    """Per (comm, seq): its last arrival, the others' wait and where the lateness came from."""

    comm: np.ndarray
    last: np.ndarray  # record index of the last arrival
    wait: np.ndarray  # seconds the other members waited for it, summed
    margin: np.ndarray  # seconds it arrived after the next-latest member
    excess: np.ndarray  # its own busy time minus its peers' mean (s)
    peer_busy: np.ndarray  # its peers' mean busy time (s)
    origin: np.ndarray  # group where the lateness started; -1 unknown
    significant: np.ndarray  # own lateness beyond healthy jitter (meaningful where origin == g)


def localize_straggler(
    graph: CommGraph,
    progress: Iterable[CollectiveProgress],
    rel_jitter: float = REL_JITTER,
    min_persistence: float = MIN_PERSISTENCE,
) -> list[Suspect]:
    """Return the rank(s) that slow the job's collectives, as GPU (or node) suspects.

    Scores are each suspect's share of the waiting traced to a rank that is slow on its own.
    """
    rec = _records(graph, progress)
    if rec.rank.size < 2:
        return []
    groups = _groups(rec, rel_jitter)
    blamed, total = _blamed(graph, rec, groups, min_persistence)
    return rank_suspects(graph, blamed, total)[:MAX_SUSPECTS]


def _records(graph: CommGraph, progress: Iterable[CollectiveProgress]) -> _Records:
    """Return the job's completed collectives with start and end times, deduplicated."""
    index = graph.comm_index
    rows: list[tuple[int, int, int, float, float]] = []
    for p in progress:
        if p.state != CollectiveState.COMPLETED or p.job_id != graph.job_id:
            continue
        c = index.get(p.comm)
        if c is None:
            continue
        dur = None if p.duration_ms is None else p.duration_ms / 1000
        start = None if p.time_started is None else p.time_started.timestamp()
        end = None if p.time_completed is None else p.time_completed.timestamp()
        if start is None and end is not None and dur is not None:
            start = end - dur
        if end is None and start is not None and dur is not None:
            end = start + dur
        if start is not None and end is not None:
            rows.append((p.rank, c, p.seq, start, end))
    if not rows:
        empty = np.zeros(0)
        return _Records(empty.astype(np.int64), empty.astype(np.int64), empty, empty, empty)
    ranks, comms, seqs, starts, ends = (np.array(col) for col in zip(*rows, strict=True))
    order = np.lexsort((seqs, comms, ranks))
    keep = np.ones(order.size, bool)
    same = (np.diff(ranks[order]) == 0) & (np.diff(comms[order]) == 0)
    keep[1:] = ~(same & (np.diff(seqs[order]) == 0))  # at-least-once: a redelivery counts once
    sel = order[keep]
    base = starts[sel].min()
    return _Records(ranks[sel], comms[sel], seqs[sel], starts[sel] - base, ends[sel] - base)


def _busy(rec: _Records) -> tuple[np.ndarray, np.ndarray]:
    """Return each record's previous record on its rank (-1: none) and the rank's own busy time.

    Busy time is the time since the rank's previous collective on the same communicator,
    less what it spent inside other collectives in between (waiting there is not its work).
    """
    order = np.lexsort((rec.start, rec.rank))
    prev = np.full(rec.rank.size, -1)
    same = rec.rank[order[1:]] == rec.rank[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    gap = np.where(prev >= 0, np.maximum(rec.start - rec.end[np.maximum(prev, 0)], 0.0), 0.0)
    spent = np.empty(rec.rank.size)
    spent[order] = np.cumsum(gap[order])
    by_comm = np.lexsort((rec.start, rec.comm, rec.rank))
    again = (rec.rank[by_comm[1:]] == rec.rank[by_comm[:-1]]) & (
        rec.comm[by_comm[1:]] == rec.comm[by_comm[:-1]]
    )
    busy = np.full(rec.rank.size, np.nan)
    here, before = by_comm[1:][again], by_comm[:-1][again]
    busy[here] = spent[here] - spent[before]
    return prev, busy


def _groups(rec: _Records, rel_jitter: float) -> _Groups:
    """Summarise every (comm, seq) group and trace where its lateness started."""
    prev, busy = _busy(rec)
    order = np.lexsort((rec.start, rec.seq, rec.comm))
    c, s = rec.comm[order], rec.seq[order]
    new = np.ones(order.size, bool)
    new[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
    first = np.flatnonzero(new)
    size = np.diff(np.append(first, order.size))
    group_of = np.empty(order.size, np.int64)
    group_of[order] = np.cumsum(new) - 1
    last = order[first + size - 1]
    second = order[first + np.maximum(size - 2, 0)]
    a = rec.start
    wait = size * a[last] - np.add.reduceat(a[order], first)
    margin = a[last] - a[second]
    known = ~np.isnan(busy[order])
    busy_sum = np.add.reduceat(np.where(known, busy[order], 0.0), first)
    busy_n = np.add.reduceat(known.astype(np.int64), first)
    own_busy = busy[last]
    peers_n = busy_n - (~np.isnan(own_busy)).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        peer_busy = (busy_sum - np.nan_to_num(own_busy)) / peers_n
    excess = own_busy - peer_busy
    judged = (size > 1) & ~np.isnan(excess) & (peers_n > 0)
    own = judged & (excess >= 0.5 * margin)
    significant = own & (excess >= rel_jitter * peer_busy) & (excess >= MIN_EXCESS_S)
    # A group with nobody to compare against (one reporter) passes its lateness through.
    step = np.where(own, np.arange(first.size), group_of[np.maximum(prev[last], 0)])
    origin = _follow(np.where(prev[last] >= 0, step, -1), own)
    return _Groups(rec.comm[last], last, wait, margin, excess, peer_busy, origin, significant)


def _follow(step: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Follow each group's lateness back to the group it started in (pointer jumping)."""
    ptr = step
    for _ in range(64):
        nxt = np.where(ptr >= 0, ptr[np.maximum(ptr, 0)], -1)
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    return np.where((ptr >= 0) & own[np.maximum(ptr, 0)], ptr, -1)


def _blamed(
    graph: CommGraph, rec: _Records, g: _Groups, min_persistence: float
) -> tuple[list[Blamed], float]:
    """Return the origin ranks whose own lateness recurs, and the waiting traced to any origin."""
    known = g.origin >= 0
    hits = known & g.significant[np.maximum(g.origin, 0)]
    culprit = rec.rank[g.last[g.origin[hits]]]
    weight = np.bincount(culprit, weights=g.wait[hits], minlength=1)
    total = float(weight.sum())
    own = np.flatnonzero(g.significant & (g.origin == np.arange(g.origin.size)))
    judged = np.bincount(g.comm[known], minlength=len(graph.comm_index))
    comm_ids = list(graph.comm_index)
    out = []
    for r in np.flatnonzero(weight > MIN_SCORE * total).tolist():
        mine = own[rec.rank[g.last[own]] == r]
        comms, counts = np.unique(g.comm[mine], return_counts=True)
        share = counts / judged[comms]
        if comms.size == 0 or share.max() < min_persistence:
            continue
        best = int(np.argmax(share))
        mine = mine[g.comm[mine] == comms[best]]
        comm = comm_ids[int(comms[best])]
        why = _why(graph, r, comm, int(counts[best]), int(judged[comms[best]]), g, mine)
        out.append(
            Blamed(r, float(weight[r]), f"{why}; ranks waited {weight[r]:.1f} s for it in all")
        )
    return out, total


def _why(
    graph: CommGraph, rank: int, comm: str, late: int, of: int, g: _Groups, mine: np.ndarray
) -> str:
    """Say in one sentence how late a rank is and why it is its own doing."""
    margin_ms = float(np.median(g.margin[mine])) * 1000
    slower = float(np.median(g.excess[mine] / np.maximum(g.peer_busy[mine], 1e-9)))
    kind = graph.comm_kind[comm].value
    return (
        f"{graph.describe(rank)} arrives last at {late} of {of} collectives on {comm} ({kind}),"
        f" {margin_ms:.0f} ms after the next member, taking {slower:+.0%} longer than its peers"
        " between collectives on it"
    )


def busy_profile(graph: CommGraph, progress: Iterable[CollectiveProgress]) -> dict[int, float]:
    """Return each rank's busy time relative to its communicator peers' (log ratio, averaged).

    Per (communicator, seq) a member's busy time is divided by the mean of the other members'
    and the log of that ratio (clipped to +-0.5, so one odd record cannot dominate) is averaged
    per rank over every record. A rank whose own work got slower shows a larger value than it
    had before; its peers, who only wait longer inside the collectives, do not.
    """
    rec = _records(graph, progress)
    if rec.rank.size < 2:
        return {}
    _, busy = _busy(rec)
    order = np.lexsort((rec.seq, rec.comm))
    c, s, b = rec.comm[order], rec.seq[order], busy[order]
    new = np.ones(order.size, bool)
    new[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
    first = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    known = ~np.isnan(b)
    total = np.add.reduceat(np.where(known, b, 0.0), first)[group]
    count = np.add.reduceat(known.astype(np.int64), first)[group]
    with np.errstate(invalid="ignore", divide="ignore"):
        peers = (total - np.where(known, b, 0.0)) / (count - 1)
        ratio = np.log(b / peers)
    good = known & (count > 1) & np.isfinite(ratio) & (peers > 0)
    ranks = rec.rank[order][good]
    clipped = np.clip(ratio[good], -0.5, 0.5)
    sums = np.bincount(ranks, weights=clipped)
    counts = np.bincount(ranks)
    return {int(r): float(sums[r] / counts[r]) for r in np.flatnonzero(counts)}
