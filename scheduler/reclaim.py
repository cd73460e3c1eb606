"""Choose which loaned servers to give back to inference with the fewest preemptions.

Each candidate server maps the jobs whose *base* workers it holds to their GPUs there;
elastic extra workers are not listed because removing them preempts nobody (the caller
shrinks them first). A job is preempted when any server holding its base workers returns.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

ServerJobs = Mapping[int, Mapping[int, int]]
EXACT_LIMIT = 5_000
"""Most subsets the exact search enumerates before falling back to the greedy."""


@dataclass(frozen=True)
class ReclaimPlan:
    """The servers to return and the jobs that returning them preempts."""

    servers: tuple[int, ...]
    preempted: frozenset[int]
    cost: float
    collateral_gpus: int


def preempted_by(servers: ServerJobs, chosen: tuple[int, ...]) -> frozenset[int]:
    """Return the jobs with a base worker on any chosen server."""
    return frozenset(j for s in chosen for j in servers[s])


def job_totals(servers: ServerJobs) -> tuple[dict[int, int], dict[int, int]]:
    """Return each job's span (servers) and base GPUs over the candidate servers."""
    spans: dict[int, int] = {}
    totals: dict[int, int] = {}
    for jobs in servers.values():
        for j, g in jobs.items():
            spans[j] = spans.get(j, 0) + 1
            totals[j] = totals.get(j, 0) + g
    return spans, totals


def plan_for(
    servers: ServerJobs,
    chosen: tuple[int, ...],
    weights: Mapping[int, float],
    totals: Mapping[int, int],
) -> ReclaimPlan:
    """Return the plan for returning `chosen`, with its preemption cost and collateral."""
    hit = preempted_by(servers, chosen)
    inside: dict[int, int] = {}
    for s in chosen:
        for j, g in servers[s].items():
            inside[j] = inside.get(j, 0) + g
    collateral = sum(totals[j] - inside[j] for j in hit)
    cost = sum(weights.get(j, 1.0) for j in hit)
    return ReclaimPlan(tuple(sorted(chosen)), hit, cost, collateral)


def greedy_reclaim(
    servers: ServerJobs,
    count: int,
    weights: Mapping[int, float] | None = None,
    spans: Mapping[int, int] | None = None,
    totals: Mapping[int, int] | None = None,
) -> ReclaimPlan:
    """Return `count` servers picked greedily by cost = sum of weight/span over live jobs.

    Costs are recomputed after each pick (jobs already preempted cost nothing more); ties go
    to the server whose preemptions free fewer GPUs elsewhere (collateral damage).
    """
    weights = weights or {}
    own_spans, own_totals = job_totals(servers)
    spans = spans or own_spans
    totals = totals or own_totals
    left = set(servers)
    chosen: list[int] = []
    dead: set[int] = set()
    for _ in range(min(count, len(servers))):
        best: tuple[float, int, int] | None = None
        for s in left:
            cost, collateral = 0.0, 0
            for j, g in servers[s].items():
                if j not in dead:
                    cost += weights.get(j, 1.0) / spans[j]
                    collateral += totals[j] - g
            key = (cost, collateral, s)
            if best is None or key < best:
                best = key
        assert best is not None
        chosen.append(best[2])
        left.discard(best[2])
        dead.update(servers[best[2]])
    return plan_for(servers, tuple(chosen), weights, totals)


def exact_reclaim(
    servers: ServerJobs,
    count: int,
    weights: Mapping[int, float] | None = None,
    totals: Mapping[int, int] | None = None,
    limit: int = EXACT_LIMIT,
) -> ReclaimPlan:
    """Return the cheapest `count` servers by exhaustive search; greedy when it is too big.

    Minimises (preemption cost, collateral GPUs) over every subset of `count` servers.
    """
    weights = weights or {}
    totals = totals or job_totals(servers)[1]
    count = min(count, len(servers))
    rest = sorted(servers)
    if math.comb(len(rest), count) > limit:
        return greedy_reclaim(servers, count, weights, totals=totals)
    best: ReclaimPlan | None = None
    for combo in itertools.combinations(rest, count):
        plan = plan_for(servers, combo, weights, totals)
        if best is None or (plan.cost, plan.collateral_gpus) < (best.cost, best.collateral_gpus):
            best = plan
    assert best is not None
    return best


def random_reclaim(servers: ServerJobs, count: int, rng: random.Random) -> ReclaimPlan:
    """Return `count` servers drawn at random (the paper's baseline)."""
    _, totals = job_totals(servers)
    chosen = tuple(rng.sample(sorted(servers), min(count, len(servers))))
    return plan_for(servers, chosen, {}, totals)


def smallest_count_reclaim(servers: ServerJobs, count: int) -> ReclaimPlan:
    """Return the `count` servers running the fewest jobs (the paper's second baseline)."""
    _, totals = job_totals(servers)
    order = sorted(servers, key=lambda s: (len(servers[s]), s))
    return plan_for(servers, tuple(order[:count]), {}, totals)


def reclaim(
    servers: ServerJobs,
    count: int,
    method: str,
    rng: random.Random,
    weights: Mapping[int, float] | None = None,
    spans: Mapping[int, int] | None = None,
    totals: Mapping[int, int] | None = None,
) -> ReclaimPlan:
    """Return the plan of reclaiming method `method` (lyra, exact, random, smallest)."""
    if method == "random":
        return random_reclaim(servers, count, rng)
    if method == "smallest":
        return smallest_count_reclaim(servers, count)
    if method == "exact":
        return exact_reclaim(servers, count, weights, totals)
    return greedy_reclaim(servers, count, weights, spans, totals)
