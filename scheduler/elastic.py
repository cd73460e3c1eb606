"""Which jobs of a trace are elastic: the largest and longest, up to a share of GPU-time.

Lyra's production trace (EuroSys'23, section 2) has about 5% of its jobs elastic, and those
are the large, long training jobs (ResNet, VGG, BERT, GNMT): they use about 36% of the
training cluster's GPU time and run 14.2 hours on average. A random 5% of jobs would hold
about 5% of the GPU-time instead, which is not the paper's workload. So the rule marks jobs
elastic in decreasing order of GPU-time (GPUs x duration; the longer job first on a tie)
until they hold `share` of the trace's GPU-time, with `min = requested` and `max = 2 x
requested`. The older model (`random_elastic`: a seeded random fraction of the jobs, min
half, max twice the request) is kept for `--elastic-fraction`.
"""

from __future__ import annotations

import numpy as np

ELASTIC_SHARE = 0.36
"""Share of GPU-time held by elastic jobs in Lyra's production trace (the default)."""
MAX_FACTOR = 2
"""An elastic job's maximum size, in multiples of its request, when the trace gives none."""


def by_share(gpus: np.ndarray, duration: np.ndarray, share: float) -> np.ndarray:
    """Return a mask of the jobs that are elastic: the biggest by GPU-time up to `share`.

    Jobs are taken in decreasing GPU-time (longer first on a tie, then earlier in the
    trace) while the share taken so far is below `share`; the last job is kept only if that
    brings the share closer to `share` than stopping before it (so "about" the share, never
    far over because of one huge job). `share` 0 marks none, 1 marks every job.
    """
    gpu_time = np.asarray(gpus, dtype=float) * np.asarray(duration, dtype=float)
    mask = np.zeros(len(gpu_time), dtype=bool)
    total = float(gpu_time.sum())
    if share <= 0 or total <= 0:
        return mask
    order = np.lexsort((np.arange(len(gpu_time)), -np.asarray(duration, float), -gpu_time))
    taken = 0.0
    for i in order:
        if taken >= share * total - 1e-9:
            break
        after = taken + gpu_time[i]
        if after - share * total > share * total - taken and taken > 0:
            break
        mask[i] = True
        taken = after
    return mask


def ranges_by_share(
    gpus: np.ndarray, duration: np.ndarray, share: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return (min, max) GPUs per job: elastic jobs by `by_share` get [requested, 2x]."""
    n = np.asarray(gpus, dtype=int)
    chosen = by_share(n, duration, share)
    return n.copy(), np.where(chosen, MAX_FACTOR * n, n)


def random_ranges(
    gpus: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Return (min, max) GPUs per job under the old model: a random `fraction` elastic.

    Each job is elastic with probability `fraction`, with min = half and max = twice its
    request (the model before the share rule; `--elastic-fraction`).
    """
    n = np.asarray(gpus, dtype=int)
    chosen = rng.random(len(n)) < fraction
    return np.where(chosen, np.maximum(1, n // 2), n), np.where(chosen, 2 * n, n)


def gpu_time_share(gpus: np.ndarray, duration: np.ndarray, elastic: np.ndarray) -> float:
    """Return the share of GPU-time held by the jobs in the `elastic` mask."""
    gpu_time = np.asarray(gpus, dtype=float) * np.asarray(duration, dtype=float)
    total = float(gpu_time.sum())
    return float(gpu_time[np.asarray(elastic, dtype=bool)].sum()) / total if total > 0 else 0.0
