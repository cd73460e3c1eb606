"""Scheduler benchmark: Lyra vs FIFO on the shared traces and a synthetic Lyra-like workload.

Every workload is sized by one rule (`scheduler.workload.size_training`): the fewest
training servers at which FIFO queues at most 18.5% of its JCT, the load of Lyra's own
evaluation (3,072 s of 16,610 s); the inference cluster has as many servers, a diurnal load
(peak 0.9, peak-to-trough 2.2) and a 2% reserve. A trace shorter than a day is replayed at
four phases of the inference day (00, 06, 12, 18 h) and the figures are averaged, so it is
not judged only at night. Also times one scheduling round with 1,000 pending jobs and (with
--large) 50,000 jobs on one core. Prints JSON and writes bench/results/scheduler.json.

    python -m bench.scheduler [--synthetic-jobs 15000 --synthetic-days 15] [--large]

The synthetic workload spans the paper's 15 days (at 30% of its density) so that its long
jobs reach a steady state: over 2 days FIFO's queue still grows from the empty start.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from scheduler.inference import DAY_S
from scheduler.model import POLICIES, Job, SimConfig
from scheduler.simulator import Simulator
from scheduler.trace import SHARED_TRACES, load_trace
from scheduler.workload import (
    PAPER_FIFO_QUEUE_SHARE,
    jct_gain_bound,
    lyra_like_jobs,
    queue_by_quarter,
    size_training,
    stable,
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "scheduler.json"
COMPARED = (
    "fifo",
    "sjf",
    "easy",
    "loan",
    "elastic",
    "lyra",
    "lyra-random",
    "lyra-smallest",
    "trainguard",
)
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
    "loans",
)
LLAMA3_FAILURES_PER_SERVER_DAY = 419 / (2_048 * 54)
"""Unexpected interruptions per 8-GPU server and day in Llama 3 405B pre-training (419 in
54 days on 16,384 H100s; Meta, "The Llama 3 Herd of Models", 2024, section 3.3.4)."""
FAILURE_STRESS = 5.0
"""The failure workload runs a fleet this many times less reliable than Llama 3's."""
PHASES_H = (0.0, 6.0, 12.0, 18.0)
"""Inference clock (hours) at t=0 for traces shorter than a day."""


def run_policy(
    jobs: list[Job], policy: str, config: SimConfig, phases: tuple[float, ...]
) -> tuple[dict[str, object], list[float]]:
    """Return a policy's figures averaged over the phases, and FIFO-style queue quarters."""
    outs, quarters = [], []
    for phase in phases:
        sim = Simulator(jobs, POLICIES[policy], replace(config, load_phase_s=phase * 3600))
        out = sim.run()
        outs.append(out)
        quarters.append(queue_by_quarter(sim))
    mean: dict[str, object] = {
        k: round(float(np.mean([float(str(o[k])) for o in outs])), 4) for k in KEEP
    }
    if len(phases) > 1:
        mean["queue_s_by_phase"] = [o["mean_queue_s"] for o in outs]
        mean["jct_s_by_phase"] = [o["mean_jct_s"] for o in outs]
    return mean, [round(float(q), 1) for q in np.mean(quarters, axis=0)]


def _f(value: object) -> float:
    return float(str(value))


def compare(name: str, jobs: list[Job], failures: float) -> dict[str, object]:
    """Run every policy on one workload; return each summary and Lyra's gains over FIFO."""
    config = SimConfig(failure_rate_per_server_day=failures)
    servers = size_training(jobs, config)
    config = SimConfig(
        training_servers=servers, inference_servers=servers, failure_rate_per_server_day=failures
    )
    span = max(j.submit_time for j in jobs) - min(j.submit_time for j in jobs)
    phases = PHASES_H if span < DAY_S else (0.0,)
    runs, quarters = {}, {}
    for policy in COMPARED:
        print(f"[bench] {name}: {policy}", file=sys.stderr, flush=True)
        runs[policy], quarters[policy] = run_policy(jobs, policy, config, phases)
    fifo = runs["fifo"]

    def gain(policy: str, key: str) -> float:
        return round(_f(fifo[key]) / max(_f(runs[policy][key]), 1e-9), 3)

    return {
        "workload": name,
        "jobs": len(jobs),
        "span_h": round(span / 3600, 2),
        "phases_h": list(phases),
        "training_servers": servers,
        "inference_servers": servers,
        "failure_rate_per_server_day": failures,
        "fifo_queue_share": round(_f(fifo["mean_queue_s"]) / max(_f(fifo["mean_jct_s"]), 1e-9), 3),
        "fifo_queue_by_quarter_s": quarters["fifo"],
        "fifo_stable": stable(quarters["fifo"], _f(fifo["mean_jct_s"])),
        "lyra_queue_by_quarter_s": quarters["lyra"],
        "jct_gain_bound": round(
            jct_gain_bound(jobs, _f(fifo["mean_jct_s"]), _f(fifo["mean_queue_s"])), 3
        ),
        "runs": runs,
        "lyra_queue_gain": gain("lyra", "mean_queue_s"),
        "lyra_jct_gain": gain("lyra", "mean_jct_s"),
        "trainguard_queue_gain": gain("trainguard", "mean_queue_s"),
        "trainguard_jct_gain": gain("trainguard", "mean_jct_s"),
    }


def healthy_rate(stress: float) -> float:
    """Return the healthy servers' failure rate that gives the fleet `stress` x Llama 3's.

    The simulator makes a share of servers (`risky_fraction`) fail `risky_multiplier` times
    as often as the rest; the fleet-wide mean is what the Llama 3 report measured.
    """
    cfg = SimConfig()
    spread = 1 - cfg.risky_fraction + cfg.risky_fraction * cfg.risky_multiplier
    return round(stress * LLAMA3_FAILURES_PER_SERVER_DAY / spread, 6)


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


def large(timing: dict[str, object]) -> None:
    """Time `lyra` on 50,000 Lyra-like jobs over 15 days (wall and CPU seconds)."""
    jobs = lyra_like_jobs(50_000, days=15, seed=2)
    servers = size_training(jobs, SimConfig())
    config = SimConfig(training_servers=servers, inference_servers=servers)
    cpu, wall = time.process_time(), time.perf_counter()
    out = Simulator(jobs, POLICIES["lyra"], config).run()
    timing["jobs_50000_servers"] = servers
    timing["jobs_50000_lyra_wall_s"] = round(time.perf_counter() - wall, 1)
    timing["jobs_50000_lyra_cpu_s"] = round(time.process_time() - cpu, 1)
    timing["jobs_50000_lyra"] = {
        k: out[k] for k in ("mean_queue_s", "mean_jct_s", "preemption_ratio")
    }


def main() -> None:
    """Run the comparisons and timings and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic-jobs", type=int, default=15_000)
    parser.add_argument("--synthetic-days", type=float, default=15.0)
    parser.add_argument("--large", action="store_true", help="also simulate 50,000 jobs")
    parser.add_argument("--large-only", action="store_true", help="only time 50,000 jobs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    timing: dict[str, object] = {"round_1000_pending_ms_p99": round_with_pending(1000)}
    if args.large or args.large_only:
        large(timing)
    if args.large_only:
        print(json.dumps(timing, indent=2))
        return
    synthetic = lyra_like_jobs(args.synthetic_jobs, days=args.synthetic_days, seed=1)
    workloads = [
        ("tiresias_60_job", load_trace(SHARED_TRACES / "tiresias_60_job.csv"), 0.0),
        ("alibaba_openb", load_trace(SHARED_TRACES / "alibaba_openb_pod_list_default.csv"), 0.0),
        ("synthetic_lyra_like", synthetic, 0.0),
        ("synthetic_with_failures", synthetic, healthy_rate(FAILURE_STRESS)),
    ]
    results = [compare(name, jobs, f) for name, jobs, f in workloads]
    result = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "synthetic": f"{args.synthetic_jobs} Lyra-like jobs over {args.synthetic_days:g} days",
        "sizing": "fewest training servers at which FIFO queues <= "
        f"{PAPER_FIFO_QUEUE_SHARE:.3f} of its mean JCT (Lyra's evaluation: 3,072 s / 16,610 s); "
        "inference servers = training servers; traces under a day averaged over phases "
        f"{list(PHASES_H)} h of the inference day",
        "failures": f"synthetic_with_failures: {FAILURE_STRESS:g}x the fleet-wide rate of "
        f"Llama 3 pre-training ({LLAMA3_FAILURES_PER_SERVER_DAY:.4f} interruptions per server-day;"
        f" healthy servers {healthy_rate(FAILURE_STRESS)}, 10% risky servers at 20x)",
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
