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


@dataclass(frozen=True)
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


def mckp(items: Sequence[Sequence[Choice]], capacity: int) -> list[int]:
    """Return the option index per item maximising total value within `capacity` (exact DP).

    Every item must offer a zero-weight option. Weights are divided by their common divisor
    first so the table stays small; ties keep the lighter option.
    """
    if not items:
        return []
    weights = [w for opts in items for w, _ in opts if w > 0]
    unit = math.gcd(*weights) if weights else 1
    cap = max(0, capacity // unit)
    cap = min(cap, sum(max(w for w, _ in opts) for opts in items) // unit)
    best = np.zeros(cap + 1)
    picks = np.zeros((len(items), cap + 1), dtype=np.int16)
    for i, opts in enumerate(items):
        cand = np.full((len(opts), cap + 1), -np.inf)
        for k, (w, v) in enumerate(opts):
            w //= unit
            if w <= cap:
                cand[k, w:] = best[: cap + 1 - w] + v
        pick = np.argmax(cand, axis=0)  # the first maximum: the lightest option on ties
        best, picks[i] = cand[pick, np.arange(cap + 1)], pick
    out = [0] * len(items)
    c = int(np.argmax(best))
    for i in range(len(items) - 1, -1, -1):
        k = int(picks[i, c])
        out[i] = k
        c -= items[i][k][0] // unit
    return out


def extra_targets(items: Sequence[ElasticItem], capacity: int, exponent: float) -> dict[int, int]:
    """Return the extra GPUs per elastic job that maximise total JCT reduction.

    When every job's largest option fits the capacity together, that is the optimum (each
    job's saving grows with its GPUs while it has work left): no table is needed.
    """
    if exponent > 0 and sum(i.max_extra * i.step for i in items) <= capacity:
        return {i.job_id: i.max_extra * i.step if i.work_left > 0 else 0 for i in items}
    options = [choices(item, exponent) for item in items]
    picked = mckp(options, capacity)
    return {
        item.job_id: options[i][k][0] for i, (item, k) in enumerate(zip(items, picked, strict=True))
    }


def sjf_key(submit_time: float, work_left: float) -> tuple[float, float]:
    """Return the shortest-job-first order key: least remaining GPU-time, then oldest."""
    return (work_left, submit_time)


def fifo_key(submit_time: float, work_left: float) -> tuple[float, float]:
    """Return the first-in-first-out order key."""
    return (submit_time, work_left)
