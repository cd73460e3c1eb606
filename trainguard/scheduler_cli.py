"""`trainguard scheduler simulate`: replay a job trace against a scheduling policy."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from scheduler.elastic import ELASTIC_SHARE
from scheduler.inference import LoadSeries, load_series_csv
from scheduler.model import POLICIES, SimConfig
from scheduler.simulator import Simulator
from scheduler.trace import TraceError, load_trace
from scheduler.workload import size_training


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `scheduler simulate`."""
    p = sub.add_parser(
        "scheduler",
        help="Lyra capacity loaning and elastic scaling: simulate a trace",
        description="Capacity loaning, reclaiming and elastic scaling (Lyra) on job traces.",
    )
    verbs = p.add_subparsers(dest="scheduler_command", required=True)
    sim = verbs.add_parser("simulate", help="replay a trace against a policy")
    sim.add_argument("--trace", type=Path, required=True, help="job trace CSV")
    sim.add_argument("--policy", required=True, help=f"one of {', '.join(POLICIES)}")
    sim.add_argument("--inference-load", type=Path, help="CSV time,load (0-1); default diurnal")
    sim.add_argument(
        "--training-servers",
        type=int,
        help="8-GPU training servers (default: the fewest at which FIFO queues <= 18.5%% of "
        "its JCT, the load of Lyra's evaluation)",
    )
    sim.add_argument("--inference-servers", type=int, help="8-GPU inference servers")
    sim.add_argument(
        "--load-phase-h", type=float, default=0.0, help="inference clock at t=0, hours (0-24)"
    )
    sim.add_argument(
        "--elastic-share",
        type=float,
        default=ELASTIC_SHARE,
        help="without min_gpus/max_gpus columns: the largest and longest jobs (by GPU-time) "
        "are elastic until they hold this share of the trace's GPU-time, min = requested, "
        "max = 2x (default 0.36, Lyra's production trace)",
    )
    sim.add_argument(
        "--elastic-fraction",
        type=float,
        help="the older model instead of --elastic-share: a seeded random fraction of jobs "
        "elastic, min = half, max = twice the request (0.05 was the former default)",
    )
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--json", action="store_true", help="print the summary as JSON")
    sim.set_defaults(func=cmd_simulate)


def _error(message: str) -> int:
    print(f"trainguard scheduler: {message}", file=sys.stderr)
    return 2


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate the trace and print the summary."""
    policy = POLICIES.get(args.policy)
    if policy is None:
        return _error(f"unknown policy {args.policy!r} (choose from {', '.join(POLICIES)})")
    if args.training_servers is not None and args.training_servers < 1:
        return _error("--training-servers must be >= 1 (leave it out to size by the rule)")
    if args.inference_servers is not None and args.inference_servers < 0:
        return _error("--inference-servers must be >= 0")
    if args.elastic_fraction is not None and not 0.0 <= args.elastic_fraction <= 1.0:
        return _error("--elastic-fraction must be within 0..1")
    if not 0.0 <= args.elastic_share <= 1.0:
        return _error("--elastic-share must be within 0..1")
    try:
        jobs = load_trace(args.trace, args.elastic_fraction, args.seed, args.elastic_share)
        load: LoadSeries | None = (
            load_series_csv(args.inference_load) if args.inference_load else None
        )
    except TraceError as exc:
        return _error(str(exc))
    config = replace(SimConfig(), seed=args.seed, load_phase_s=args.load_phase_h * 3600.0)
    training = args.training_servers or size_training(jobs, config)
    inference = training if args.inference_servers is None else args.inference_servers
    config = replace(config, training_servers=training, inference_servers=inference)
    summary = Simulator(jobs, policy, config, load).run()
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:>26}: {value}")
    return 0
