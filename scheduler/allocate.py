"""Allocation: shortest-job-first admission and extra workers as a multiple-choice knapsack."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Choice = tuple[int, float]
"""One option of a knapsack item: (GPUs it takes, JCT reduction in seconds)."""


def speedup(gpus: int, requested: int, exponent: float) -> float:
    """Return throughput on `gpus` relative to the requested size (linear when exponent is 1)."""
    return float((gpus / requested) ** exponent)


def remaining_time(work_left: float, gpus: int, requested: int, exponent: float) -> float:
    """Return seconds to finish `work_left` GPU-seconds (at the requested size) on `gpus`."""
    return work_left / (requested * speedup(gpus, requested, exponent))


@dataclass(frozen=True, slots=True)
class ElasticItem:
    """An elastic job's knapsack item: its base GPUs, worker size and how many extras fit."""

    job_id: int
    work_left: float
    requested: int
    base: int
    step: int
    max_extra: int


def choices(item: ElasticItem, exponent: float) -> list[Choice]:
    """Return the options of adding 0..max_extra workers and the JCT each saves."""
    now = remaining_time(item.work_left, item.base, item.requested, exponent)
    out: list[Choice] = []
    for k in range(item.max_extra + 1):
        gpus = item.base + k * item.step
        saved = now - remaining_time(item.work_left, gpus, item.requested, exponent)
        out.append((k * item.step, saved))
    return out


def mckp(items: Sequence[Sequence[Choice] | np.ndarray], capacity: int) -> list[int]:
    """Return the option index per item maximising total value within `capacity` (exact DP).

    Every item must offer a zero-weight option; an item is a list of (weight, value) or an
    array of such rows. Weights are divided by their common divisor first so the table stays
    small; ties keep the lighter option.
    """
    if not items:
        return []
    tables = [np.asarray(opts, dtype=float).reshape(-1, 2) for opts in items]
    weights = [t[:, 0].astype(np.int64) for t in tables]
    unit = math.gcd(*(int(w) for ws in weights for w in ws if w > 0)) or 1
    cap = max(0, capacity // unit)
    cap = min(cap, sum(int(ws.max()) for ws in weights) // unit)
    best = np.zeros(cap + 1)
    picks = np.zeros((len(items), cap + 1), dtype=np.int16)
    cols = np.arange(cap + 1)
    for i, table in enumerate(tables):
        src = cols - (weights[i] // unit)[:, None]  # the column each option builds on
        cand = np.where(src >= 0, best[np.maximum(src, 0)] + table[:, 1:2], -np.inf)
        pick = np.argmax(cand, axis=0)  # the first maximum: the lightest option on ties
        best, picks[i] = cand[pick, cols], pick
    out = [0] * len(items)
    c = int(np.argmax(best))
    for i in range(len(items) - 1, -1, -1):
        k = int(picks[i, c])
        out[i] = k
        c -= int(weights[i][k]) // unit
    return out


def _option_table(item: ElasticItem, exponent: float) -> np.ndarray:
    """Return `choices(item, exponent)` as an array of (GPUs, seconds saved) rows."""
    extra = np.arange(item.max_extra + 1) * item.step
    gpus = item.base + extra
    now = remaining_time(item.work_left, item.base, item.requested, exponent)
    left = item.work_left / (item.requested * (gpus / item.requested) ** exponent)
    return np.column_stack((extra, now - left))


def extra_targets(items: Sequence[ElasticItem], capacity: int, exponent: float) -> dict[int, int]:
    """Return the extra GPUs per elastic job that maximise total JCT reduction.

    When every job's largest option fits the capacity together, that is the optimum (each
    job's saving grows with its GPUs while it has work left): no table is needed. Otherwise
    the jobs are grouped by worker size (`by_worker_size`), which gives the table's answer
    whenever that answer is unique; the full table (`mckp`) decides the rest.
    """
    if exponent > 0 and sum(i.max_extra * i.step for i in items) <= capacity:
        return {i.job_id: i.max_extra * i.step if i.work_left > 0 else 0 for i in items}
    grouped = by_worker_size(items, capacity, exponent)
    if grouped is not None:
        return grouped
    options = [_option_table(item, exponent) for item in items]
    picked = mckp(options, capacity)
    return {item.job_id: int(item.step * k) for item, k in zip(items, picked, strict=True)}


def by_worker_size(
    items: Sequence[ElasticItem], capacity: int, exponent: float
) -> dict[int, int] | None:
    """Return `mckp`'s extra GPUs per job through one small table per worker size, or None.

    With linear or sublinear scaling every job's saving is concave in its workers: each added
    worker saves no more than the one before. Among the jobs whose workers have the same size,
    the best use of m workers is then the m largest savings of single workers, wherever they
    fall, so each worker size is one knapsack item (0..all its workers) and the knapsack has
    as many items as there are worker sizes (at most four for 8-GPU servers) instead of one
    per job. That is the same optimum as the table over jobs. Returns None (use the full
    table) when scaling is superlinear, a saving is not concave, or two workers save exactly
    as much at a cut (a tie the full table would break its own way).
    """
    if not items or exponent <= 0 or exponent > 1:
        return None
    ranked: dict[int, list[tuple[float, int, int]]] = {}
    for n, item in enumerate(items):
        workers = ranked.setdefault(item.step, [])
        before = remaining_time(item.work_left, item.base, item.requested, exponent)
        last = math.inf
        for k in range(1, item.max_extra + 1):
            gpus = item.base + k * item.step
            left = remaining_time(item.work_left, gpus, item.requested, exponent)
            saved = max(before - left, 0.0)
            if saved > last:
                return None
            if saved > 0:
                workers.append((-saved, n, k))
            before, last = left, saved
    sizes = sorted(ranked)
    tables = []
    for size in sizes:
        workers = ranked[size]
        workers.sort()
        table = np.zeros((len(workers) + 1, 2))
        table[:, 0] = np.arange(len(workers) + 1) * size
        table[1:, 1] = np.cumsum([-w[0] for w in workers])
        tables.append(table)
    if len(tables) == 1:
        picked = [min(len(ranked[sizes[0]]), capacity // sizes[0])]
    else:
        picked = mckp(tables, capacity)
    count = [0] * len(items)
    for size, m in zip(sizes, picked, strict=True):
        workers = ranked[size]
        if 0 < m < len(workers) and workers[m - 1][0] == workers[m][0]:
            return None  # the m-th and the next worker save as much: a tie at the cut
        for _, n, _ in workers[:m]:
            count[n] += 1
    return {item.job_id: item.step * k for item, k in zip(items, count, strict=True)}


def sjf_key(submit_time: float, work_left: float) -> tuple[float, float]:
    """Return the shortest-job-first order key: least remaining GPU-time, then oldest."""
    return (work_left, submit_time)


def fifo_key(submit_time: float, work_left: float) -> tuple[float, float]:
    """Return the first-in-first-out order key."""
    return (submit_time, work_left)
