"""A seeded Lyra-like workload and the sizing rule that puts a trace at the paper's load."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from scheduler.elastic import ELASTIC_SHARE, ranges_by_share
from scheduler.inference import DAY_S
from scheduler.model import POLICIES, Job, SimConfig
from scheduler.simulator import Simulator

SIZES = (1, 2, 4, 8, 16, 32, 64)
SIZE_SHARE = (0.45, 0.12, 0.12, 0.19, 0.07, 0.04, 0.01)
"""GPUs per job and their shares: mostly small jobs, a tail of multi-server ones."""


def lyra_like_jobs(
    count: int,
    days: float = 15.0,
    mean_duration_s: float = 13_500.0,
    sigma: float = 1.5,
    elastic_fraction: float | None = None,
    checkpoint_fraction: float = 0.5,
    seed: int = 0,
    elastic_share: float = ELASTIC_SHARE,
) -> list[Job]:
    """Return `count` jobs with diurnal arrivals over `days` and log-normal durations.

    Elastic jobs are the largest and longest, up to `elastic_share` of the GPU-time, with
    min = requested and max = 2x (`scheduler.elastic.by_share`); with `elastic_fraction`
    set, the old model instead: that random fraction of jobs, min half, max twice.
    """
    rng = np.random.default_rng(seed)
    horizon = days * DAY_S
    cand = rng.uniform(0, horizon, size=count * 3)
    keep = rng.random(len(cand)) < 0.5 * (1 + 0.6 * np.cos(2 * np.pi * (cand - 15 * 3600) / DAY_S))
    submit = np.sort(cand[keep][:count])
    n = len(submit)
    median = mean_duration_s / math.exp(sigma**2 / 2)
    duration = np.clip(rng.lognormal(math.log(median), sigma, size=n), 60.0, 30 * DAY_S)
    gpus = rng.choice(SIZES, size=n, p=SIZE_SHARE)
    draw = rng.random(n)  # drawn in both models, so the rest of the workload is the same
    if elastic_fraction is None:
        lo, hi = ranges_by_share(gpus, duration, elastic_share)
    else:
        elastic = draw < elastic_fraction
        lo = np.where(elastic, np.maximum(1, gpus // 2), gpus)
        hi = np.where(elastic, 2 * gpus, gpus)
    ckpt = rng.random(n) < checkpoint_fraction
    return [
        Job(
            job_id=i,
            submit_time=float(submit[i]),
            duration=float(duration[i]),
            num_gpus=int(gpus[i]),
            min_gpus=int(lo[i]),
            max_gpus=int(hi[i]),
            checkpoint=bool(ckpt[i]),
        )
        for i in range(n)
    ]


PAPER_FIFO_QUEUE_SHARE = 3_072 / 16_610
"""FIFO's mean queuing delay over its mean JCT on Lyra's 15-day trace (the paper's load)."""


def jct_gain_bound(jobs: list[Job], fifo_mean_jct_s: float, fifo_mean_queue_s: float) -> float:
    """Return the most any policy can cut mean JCT against FIFO's figures on these jobs.

    No job can finish sooner than with no queuing at all and, if elastic, at its maximum
    size from start to end (linear scaling, servers no faster than the requested ones);
    inelastic jobs run their duration. FIFO's mean JCT over that floor is the bound.
    """
    saved = sum(j.duration * (1 - j.num_gpus / j.max_gpus) for j in jobs) / max(len(jobs), 1)
    floor = fifo_mean_jct_s - fifo_mean_queue_s - saved
    return fifo_mean_jct_s / max(floor, 1e-9)


def queue_by_quarter(sim: Simulator) -> list[float]:
    """Return the mean queuing delay of each quarter of the started jobs, by submit time."""
    runs = sorted(
        (r for r in sim.runs.values() if r.first_start is not None), key=lambda r: r.job.submit_time
    )
    delays = np.array([r.first_start - r.job.submit_time for r in runs if r.first_start])
    if len(runs) < 4:
        return [float(delays.mean()) if len(runs) else 0.0] * 4
    return [round(float(part.mean()), 1) for part in np.array_split(delays, 4)]


def stable(quarters: list[float], mean_jct_s: float) -> bool:
    """Return whether a queue does not grow over the trace.

    The last quarter's mean delay is at most twice that of the first three, plus 5% of the
    mean JCT (so that near-empty queues, whose ratio is noise, count as stable).
    """
    return quarters[3] <= 2 * float(np.mean(quarters[:3])) + 0.05 * mean_jct_s


def size_training(
    jobs: list[Job],
    config: SimConfig,
    share: float = PAPER_FIFO_QUEUE_SHARE,
) -> int:
    """Return the fewest training servers at which FIFO queues at most `share` of its JCT.

    This puts FIFO, the baseline, at the load of Lyra's published evaluation (3,072 s of
    queuing in 16,610 s of JCT) on any trace, whatever its length and density: the rule is
    the same for every workload. Bisection over the cluster size (queuing falls as it grows).
    """
    lo = max(1, max((math.ceil(j.min_gpus / config.gpus_per_server) for j in jobs), default=1))
    if _fifo_share(jobs, config, lo) <= share:
        return lo
    hi = lo * 2
    while _fifo_share(jobs, config, hi) > share:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fifo_share(jobs, config, mid) <= share:
            hi = mid
        else:
            lo = mid
    return hi


def _fifo_share(jobs: list[Job], config: SimConfig, servers: int) -> float:
    cfg = replace(config, training_servers=servers, inference_servers=0)
    out = Simulator(jobs, POLICIES["fifo"], cfg).run()
    return float(str(out["mean_queue_s"])) / max(float(str(out["mean_jct_s"])), 1e-9)
