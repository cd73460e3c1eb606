"""Scheduler benchmark: Lyra vs FIFO on the shared traces and a synthetic Lyra-like workload.

Also times one scheduling round with 1,000 pending jobs and (with --large) 50,000 jobs on
one core. Prints JSON and writes bench/results/scheduler.json.

    python -m bench.scheduler [--synthetic-jobs 5000] [--large]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from scheduler.model import POLICIES, Job, SimConfig
from scheduler.simulator import Simulator
from scheduler.trace import SHARED_TRACES, load_trace
from scheduler.workload import lyra_like_jobs, servers_for_load
from trainguard.scheduler_cli import UTILIZATION

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "scheduler.json"
COMPARED = ("fifo", "sjf", "loan", "elastic", "lyra", "lyra-random", "lyra-smallest", "trainguard")
KEEP = (
    "jobs",
    "mean_queue_s",
    "mean_jct_s",
    "p95_jct_s",
    "training_usage",
    "overall_usage",
    "preemption_ratio",
    "scaling_ops",
    "decision_ms_p99",
    "wall_s",
    "lost_gpu_h",
)


def compare(name: str, jobs: list[Job], failures: float) -> dict[str, object]:
    """Run every policy on one workload; return each summary and Lyra's gains over FIFO."""
    servers = servers_for_load(jobs, UTILIZATION)
    config = SimConfig(
        training_servers=servers, inference_servers=servers, failure_rate_per_server_day=failures
    )
    runs = {}
    for policy in COMPARED:
        print(f"[bench] {name}: {policy}", file=sys.stderr, flush=True)
        out = Simulator(jobs, POLICIES[policy], config).run()
        runs[policy] = {k: out[k] for k in KEEP}
    fifo = runs["fifo"]

    def gain(policy: str, key: str) -> float:
        base, ours = float(str(fifo[key])), float(str(runs[policy][key]))
        return round(base / max(ours, 1e-9), 3)

    return {
        "workload": name,
        "jobs": len(jobs),
        "training_servers": servers,
        "inference_servers": servers,
        "failure_rate_per_server_day": failures,
        "runs": runs,
        "lyra_queue_gain": gain("lyra", "mean_queue_s"),
        "lyra_jct_gain": gain("lyra", "mean_jct_s"),
        "trainguard_queue_gain": gain("trainguard", "mean_queue_s"),
        "trainguard_jct_gain": gain("trainguard", "mean_jct_s"),
    }


def round_with_pending(pending: int) -> float:
    """Return the p99 milliseconds of one scheduling round with `pending` jobs queued."""
    jobs = lyra_like_jobs(pending, days=0.01, elastic_fraction=0.05, seed=9)
    sim = Simulator(jobs, POLICIES["lyra"], SimConfig(training_servers=64, inference_servers=64))
    for job in jobs:
        sim.enqueue(job.job_id)
    sim._rebalance(0.0)
    times = []
    for k in range(20):
        began = time.perf_counter()
        sim.rounds.run(float(k))
        times.append((time.perf_counter() - began) * 1000)
    return round(float(np.percentile(times, 99)), 2)


def main() -> None:
    """Run the comparisons and timings and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic-jobs", type=int, default=5000)
    parser.add_argument("--synthetic-days", type=float, default=2.0)
    parser.add_argument("--large", action="store_true", help="also simulate 50,000 jobs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    workloads = [
        ("tiresias_60_job", load_trace(SHARED_TRACES / "tiresias_60_job.csv"), 0.0),
        ("alibaba_openb", load_trace(SHARED_TRACES / "alibaba_openb_pod_list_default.csv"), 0.0),
        (
            "synthetic_lyra_like",
            lyra_like_jobs(args.synthetic_jobs, days=args.synthetic_days, seed=1),
            0.0,
        ),
        (
            "synthetic_with_failures",
            lyra_like_jobs(args.synthetic_jobs, days=args.synthetic_days, seed=1),
            0.2,
        ),
    ]
    results = [compare(name, jobs, f) for name, jobs, f in workloads]
    timing: dict[str, object] = {"round_1000_pending_ms_p99": round_with_pending(1000)}
    if args.large:
        jobs = lyra_like_jobs(50_000, days=15, seed=2)
        servers = servers_for_load(jobs, UTILIZATION)
        config = SimConfig(training_servers=servers, inference_servers=servers)
        out = Simulator(jobs, POLICIES["lyra"], config).run()
        timing["jobs_50000_lyra_wall_s"] = out["wall_s"]
    result = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "utilization_sizing": UTILIZATION,
        "workloads": results,
        "timing": timing,
        "targets": "lyra vs fifo: queue >= 1.5x, JCT >= 1.45x lower, preemption <= 12%; "
        "round with 1,000 pending <= 50 ms; 50,000 jobs <= 60 s",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
