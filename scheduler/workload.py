"""A seeded Lyra-like workload and the cluster size that a trace's offered load calls for."""

from __future__ import annotations

import math

import numpy as np

from scheduler.inference import DAY_S
from scheduler.model import Job

SIZES = (1, 2, 4, 8, 16, 32, 64)
SIZE_SHARE = (0.45, 0.12, 0.12, 0.19, 0.07, 0.04, 0.01)
"""GPUs per job and their shares: mostly small jobs, a tail of multi-server ones."""


def lyra_like_jobs(
    count: int,
    days: float = 15.0,
    mean_duration_s: float = 13_500.0,
    sigma: float = 1.5,
    elastic_fraction: float = 0.05,
    checkpoint_fraction: float = 0.5,
    seed: int = 0,
) -> list[Job]:
    """Return `count` jobs with diurnal arrivals over `days` and log-normal durations."""
    rng = np.random.default_rng(seed)
    horizon = days * DAY_S
    cand = rng.uniform(0, horizon, size=count * 3)
    keep = rng.random(len(cand)) < 0.5 * (1 + 0.6 * np.cos(2 * np.pi * (cand - 15 * 3600) / DAY_S))
    submit = np.sort(cand[keep][:count])
    n = len(submit)
    median = mean_duration_s / math.exp(sigma**2 / 2)
    duration = np.clip(rng.lognormal(math.log(median), sigma, size=n), 60.0, 30 * DAY_S)
    gpus = rng.choice(SIZES, size=n, p=SIZE_SHARE)
    elastic = rng.random(n) < elastic_fraction
    ckpt = rng.random(n) < checkpoint_fraction
    return [
        Job(
            job_id=i,
            submit_time=float(submit[i]),
            duration=float(duration[i]),
            num_gpus=int(gpus[i]),
            min_gpus=max(1, int(gpus[i]) // 2) if elastic[i] else int(gpus[i]),
            max_gpus=2 * int(gpus[i]) if elastic[i] else int(gpus[i]),
            checkpoint=bool(ckpt[i]),
        )
        for i in range(n)
    ]


def servers_for_load(jobs: list[Job], utilization: float = 0.9, gpus_per_server: int = 8) -> int:
    """Return the training servers at which the jobs' offered load is `utilization` of them."""
    if not jobs:
        return 1
    span = max(j.submit_time for j in jobs) - min(j.submit_time for j in jobs)
    span = max(span, max(j.duration for j in jobs))
    offered = sum(j.work for j in jobs) / span
    biggest = max(j.min_gpus for j in jobs)
    return max(math.ceil(offered / (utilization * gpus_per_server)), math.ceil(biggest / 8))
