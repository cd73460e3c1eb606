"""Summarise a finished simulation into the CLI's JSON fields."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.model import Pool

if TYPE_CHECKING:
    from scheduler.simulator import Simulator

SUMMARY_KEYS: tuple[str, ...] = (
    "jobs",
    "mean_queue_s",
    "median_queue_s",
    "p95_queue_s",
    "mean_jct_s",
    "p95_jct_s",
    "training_usage",
    "overall_usage",
    "preemption_ratio",
    "scaling_ops",
    "decision_ms_p99",
    "wall_s",
)
"""The keys other tools rely on, in order; more may follow them."""


def _stat(values: np.ndarray, fn: str) -> float:
    if len(values) == 0:
        return 0.0
    if fn == "mean":
        return round(float(values.mean()), 1)
    return round(float(np.percentile(values, float(fn))), 1)


def summarize(sim: Simulator, wall_s: float) -> dict[str, object]:
    """Return queuing, JCT, usage, preemption and timing figures of a finished run."""
    done = [r for r in sim.runs.values() if r.finish is not None]
    queue = np.array([r.first_start - r.job.submit_time for r in done if r.first_start is not None])
    jct = np.array([r.finish - r.job.submit_time for r in done if r.finish is not None])
    start = min((r.job.submit_time for r in done), default=0.0)
    span = max(sim.now - start, 1e-9)
    cfg = sim.config
    servers = sim.cluster.servers
    busy = sim.cluster.busy_gpu_s
    train_busy = sum(b for s, b in zip(servers, busy, strict=True) if s.pool is Pool.TRAINING)
    train_cap = cfg.training_servers * cfg.gpus_per_server * span
    all_cap = (cfg.training_servers + cfg.inference_servers) * cfg.gpus_per_server * span
    decisions = np.array(sim.counters.decision_s) * 1000
    c = sim.counters
    return {
        "jobs": len(done),
        "mean_queue_s": _stat(queue, "mean"),
        "median_queue_s": _stat(queue, "50"),
        "p95_queue_s": _stat(queue, "95"),
        "mean_jct_s": _stat(jct, "mean"),
        "p95_jct_s": _stat(jct, "95"),
        "training_usage": round(train_busy / train_cap, 4),
        "overall_usage": round((sum(busy) + c.inference_gpu_s) / all_cap, 4),
        "preemption_ratio": round(sum(r.preemptions > 0 for r in done) / max(len(done), 1), 4),
        "scaling_ops": sum(r.scaling_ops for r in sim.runs.values()),
        "decision_ms_p99": round(float(np.percentile(decisions, 99)), 3) if len(decisions) else 0.0,
        "wall_s": round(wall_s, 2),
        "policy": sim.policy.name,
        "training_servers": cfg.training_servers,
        "inference_servers": cfg.inference_servers,
        "unschedulable": c.unschedulable,
        "preemptions": sum(r.preemptions for r in done),
        "failures": sum(r.failures for r in done),
        "lost_gpu_h": round(sum(r.lost_work for r in done) / 3600, 1),
        "loans": c.loans,
        "reclaims": c.reclaims,
        "inference_shortfall_gpu_h": round(c.shortfall_gpu_s / 3600, 1),
        "job_gpu_h": round(sum(r.gpu_seconds for r in sim.runs.values()) / 3600, 1),
        "server_gpu_h": round(sum(busy) / 3600, 1),
    }
