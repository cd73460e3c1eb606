"""Diagnosis accuracy benchmark: twin scenarios of every fault kind, scored against truth.json.

For each scenario: `sim run` into a temporary directory, `diagnose` it (which never reads the
truth), then match incidents to the injected faults (bench/scoring.py defines top-1
localization and healthy nodes blamed per incident). Latency is from the fault's onset to
the incident's detection time (telemetry time); p50/p99 are nearest-rank. Each run records
its scenario parameters, the twin's and diagnosis's CPU time, and the localizers' CPU time
per call (every localize_* call the replay makes, timed with time.process_time).

Suites: the default one (every kind, two 64-GPU layouts, 1 s metrics); --large adds a
1,024-GPU layout; --huge adds 16,384-GPU runs (tp8 pp16 dp128) of a subset of kinds with
coarse telemetry (30 s GPU and host scrapes, 240 simulated seconds, no per-rank grad norms)
so they fit one core; --healthy-hours H runs the healthy 1,024-GPU day of
bench/diagnosis_healthy.py (benign noise on, sampled telemetry) for H simulated hours in
segments of --segment-hours, counting false incidents, and writes the result after every
segment so an interrupted run still reports the hours it did simulate. --random N draws N
scenarios (sim.generate.random_fault_scenario: layout, 256-4,096 GPUs, kind, place, time,
watchdog 5-30 min) from seeds --seed-base, --seed-base + 1, ...; --late N draws N stalls
whose watchdog fires 5-30 minutes later; --failslow N runs, per seed, a slow GPU under TP
2/4/8, a slow NIC and a slow host (bench/diagnosis_drawn.py) and reports detection and
latency against the job-level slowdown measured from the run's own step times. Seeds
below TUNING_SEEDS_BELOW were used while tuning; the defaults evaluate on seeds above.
Prints JSON and writes bench/results/diagnosis.json (--out).

    python -m bench.diagnosis [--large] [--huge] [--healthy-hours 24] [--no-suite]
        [--random 24] [--late 8] [--failslow 6] [--seed-base 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import diagnosis.engine as engine_module
from bench.diagnosis_drawn import (
    DRAWN_PREFIXES,
    TUNING_SEEDS_BELOW,
    failslow_scenarios,
    late_scenarios,
    random_scenarios,
    seeds_summary,
    slow_fields,
)
from bench.diagnosis_healthy import healthy_hours, healthy_segments
from bench.scoring import (
    healthy_nodes_blamed,
    matches,
    summarise_blame,
    summarise_cpu,
    summarise_failslow,
    summarise_kinds,
    summarise_random,
)
from diagnosis.model import Suspect
from diagnosis.replay import diagnose_dir
from sim.output import FileSink
from sim.scenario import parse_scenario
from sim.twin import DEFAULT_START, Twin

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "diagnosis.json"
GPU_KINDS = ("xid79", "ecc_dbe", "gsp_timeout", "nvlink", "nan", "straggler", "precursor")
JOB_KINDS = ("user_error", "app_xid")


def _fault(kind: str, node: int, gpu: int, job: str, rank: int, rack: int) -> dict[str, Any]:
    at = 120
    if kind in GPU_KINDS:
        fault: dict[str, Any] = {"kind": kind, "node": node, "gpu": gpu, "at_s": at}
        if kind == "precursor":
            fault.update(at_s=at + 60, lead_s=60)
        return fault
    if kind in ("nic_down", "nic_flap"):
        return {"kind": kind, "node": node, "nic": gpu, "at_s": at}
    if kind == "switch_down":
        return {"kind": kind, "rack": rack, "rail": gpu, "at_s": at}
    if kind == "hang":
        return {"kind": kind, "job": job, "rank": rank, "at_s": at}
    if kind in JOB_KINDS:
        return {"kind": kind, "job": job, "at_s": at}
    return {"kind": kind, "node": node, "at_s": at}


def scenarios(large: bool) -> list[tuple[str, dict[str, Any]]]:
    """Return (name, scenario) pairs: every kind in two placements and layouts, plus healthy."""
    layouts = [
        ({"nodes": 8, "nodes_per_rack": 4}, {"tp": 8, "pp": 2, "dp": 4}, (2, 3, 13)),
        ({"nodes": 8, "nodes_per_rack": 2}, {"tp": 4, "pp": 4, "dp": 4}, (6, 1, 50)),
    ]
    if large:
        layouts.append(
            ({"nodes": 128, "nodes_per_rack": 16}, {"tp": 8, "pp": 4, "dp": 32}, (77, 6, 700))
        )
    kinds = (
        *GPU_KINDS,
        "nic_down",
        "nic_flap",
        "switch_down",
        "hang",
        *JOB_KINDS,
        "host_oom",
        "disk_full",
    )
    out = []
    for i, (cluster, layout, (node, gpu, rank)) in enumerate(layouts):
        job = {"id": "job", "step_time_s": 2.0, **layout, "per_rank_grad_norm": True}
        rack = node // cluster["nodes_per_rack"]
        for kind in kinds:
            out.append(
                (
                    f"{kind}/{i}",
                    {
                        "seed": 100 + i,
                        "cluster": cluster,
                        "jobs": [job],
                        "duration_s": 300,
                        "watchdog_timeout_s": 600,
                        "faults": [_fault(kind, node, gpu, "job", rank, rack)],
                    },
                )
            )
        out.append(
            (
                f"healthy/{i}",
                {
                    "seed": 200 + i,
                    "cluster": cluster,
                    "jobs": [job],
                    "duration_s": 1800,
                    "faults": [],
                },
            )
        )
    return out


HUGE_KINDS = ("xid79", "hang", "straggler", "nic_down", "switch_down")
HUGE_TELEMETRY = {"metrics_interval_s": 30.0, "host_interval_s": 30.0}
LOCALIZERS = ("localize_change", "localize_hang", "localize_network", "localize_straggler")


def huge_scenarios() -> list[tuple[str, dict[str, Any]]]:
    """Return 16,384-GPU runs (tp8 pp16 dp128) of a subset of kinds with coarse telemetry."""
    cluster = {"nodes": 2048, "nodes_per_rack": 32}
    job = {"id": "job", "step_time_s": 4.0, "tp": 8, "pp": 16, "dp": 128}
    node, gpu, rank = 1234, 2, 5555
    return [
        (
            f"{kind}/huge",
            {
                "seed": 400,
                "cluster": cluster,
                "jobs": [job],
                "duration_s": 240,
                **HUGE_TELEMETRY,
                "watchdog_timeout_s": 600,
                "faults": [_fault(kind, node, gpu, "job", rank, node // 32)],
            },
        )
        for kind in HUGE_KINDS
    ]


@contextmanager
def timed_localizers() -> Iterator[dict[str, list[float]]]:
    """Time every localize_* call the replay makes (CPU seconds per call, by localizer)."""
    calls: dict[str, list[float]] = {name: [] for name in LOCALIZERS}
    saved = {name: getattr(engine_module, name) for name in LOCALIZERS}

    def timed(name: str, fn: Callable[..., list[Suspect]]) -> Callable[..., list[Suspect]]:
        def call(*args: Any, **kwargs: Any) -> list[Suspect]:
            began = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                calls[name].append(time.process_time() - began)

        return call

    for name, fn in saved.items():
        setattr(engine_module, name, timed(name, fn))
    try:
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(engine_module, name, fn)


def _params(spec: dict[str, Any]) -> dict[str, Any]:
    """Return the scenario parameters a run records (everything but the fault list)."""
    scenario = parse_scenario(spec)
    job = spec["jobs"][0]
    return {
        "cluster": scenario.cluster.model_dump(include={"nodes", "nodes_per_rack"}),
        "layout": {k: job.get(k, 1) for k in ("tp", "pp", "dp", "ep")},
        "step_jitter": job.get("step_jitter", 0.0),
        "benign_noise": bool(spec.get("wear", {}).get("throttle_slowdown")),
        "watchdog_timeout_s": scenario.watchdog_timeout_s,
        "step_time_s": job["step_time_s"],
        "per_rank_grad_norm": bool(job.get("per_rank_grad_norm", False)),
        "duration_s": scenario.duration_s,
        "metrics_interval_s": scenario.metrics_interval_s,
        "host_interval_s": scenario.host_interval_s,
        "collective_sample": None
        if scenario.collective_every_steps == 1
        else f"{scenario.collective_burst_steps} of every {scenario.collective_every_steps} steps",
        "seed": scenario.seed,
    }


def _localization(calls: dict[str, list[float]]) -> dict[str, Any]:
    every = [c for cs in calls.values() for c in cs]
    return {
        "calls": {name: len(cs) for name, cs in calls.items() if cs},
        "cpu_s_total": round(sum(every), 4),
        "cpu_s_max": round(max(every), 4) if every else None,
        "calls_cpu_s": [round(c, 4) for c in every],
    }


def score(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Simulate, diagnose and score one scenario."""
    scenario = parse_scenario(spec)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        began, wall_began = time.process_time(), time.monotonic()
        with FileSink(out) as sink:
            twin = Twin(scenario, sink)
            truth = twin.run()
            sink.write_inventory(twin.hw.inventory(twin.node_names))
        sim_cpu = time.process_time() - began
        began, wall = time.process_time(), time.monotonic()
        with timed_localizers() as calls:
            incidents = diagnose_dir(out)
        cpu, wall = time.process_time() - began, time.monotonic() - wall
        slow = slow_fields(out, truth[0]) if truth else {}
    gpus = scenario.cluster.nodes * scenario.cluster.gpus_per_node
    result: dict[str, Any] = {
        "scenario": name,
        "gpus": gpus,
        "incidents": len(incidents),
        "diagnose_cpu_s": round(cpu, 2),
        "diagnose_wall_s": round(wall, 2),
        "sim_cpu_s": round(sim_cpu, 2),
        "wall_s": round(time.monotonic() - wall_began, 1),
        "events": sum(sink.counts.values()),
        "params": _params(spec),
        "localization": _localization(calls),
    }
    if not truth:
        result["false_incidents"] = len(incidents)
        result["gpu_hours"] = gpus * scenario.duration_s / 3600
        result["false"] = [i.summary for i in incidents[:10]]
        return result
    fault = truth[0]
    onset = DEFAULT_START.timestamp() + fault["onset_s"]
    crash = [e["at_s"] for e in fault["effects"] if e["effect"] == "crash"]
    result["crash_after_onset_s"] = round(float(crash[0]) - fault["onset_s"], 1) if crash else None
    result.update(slow)
    hit = next((i for i in incidents if matches(i, fault)), None)
    result.update(
        kind=fault["kind"],
        detected=bool(incidents),
        localized=hit is not None,
        latency_s=None if hit is None else round(hit.detected_at.timestamp() - onset, 1),
        extra_incidents=len(incidents) - (1 if hit else 0),
        top=None
        if not incidents or not incidents[0].suspects
        else incidents[0].suspects[0].model_dump(exclude={"explanation"}),
        healthy_nodes_blamed=None if hit is None else healthy_nodes_blamed(hit, fault),
        suspect_nodes=None if hit is None else len({s.node for s in hit.suspects if s.node}),
    )
    return result


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind recall, top-1 precision and latency; false incidents on healthy runs."""
    healthy = [r for r in runs if "false_incidents" in r]
    hours = sum(r["gpu_hours"] for r in healthy)
    false = sum(r["false_incidents"] for r in healthy)
    fixed = [r for r in runs if not r["scenario"].startswith(DRAWN_PREFIXES)]
    return {
        "kinds": summarise_kinds(fixed),
        "healthy_gpu_hours": round(hours, 1),
        "false_incidents": false,
        "false_incidents_per_1000_gpu_hours": round(1000 * false / hours, 2) if hours else None,
        "blame": summarise_blame(fixed),
        "cpu": summarise_cpu(runs),
    }


def _suites(args: argparse.Namespace, files: list[dict[str, Any]]) -> dict[str, Any]:
    """Return which suites the result holds: this invocation's and the kept files'."""
    ran = {
        "default": not args.no_suite,
        "large": args.large,
        "huge": args.huge,
        "healthy_hours": args.healthy_hours,
        "random": args.random,
        "late": args.late,
        "failslow": args.failslow,
    }
    for kept in files:
        before = kept.get("suites", {})
        ran = {k: max(v, before.get(k, v)) for k, v in ran.items()}
    return ran


def _write(out: Path, runs: list[dict[str, Any]], suites: dict[str, Any], measured: str) -> None:
    result: dict[str, Any] = {
        "measured": measured,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "suites": suites,
        **summarise(runs),
    }
    if any(r["scenario"].startswith("healthy-hours/") for r in runs):
        result["healthy_hours"] = healthy_hours(runs)
    drawn = [r for r in runs if r["scenario"].startswith("random/")]
    if drawn:
        result["random"] = summarise_random(drawn)
    late = [r for r in runs if r["scenario"].startswith("late/")]
    if late:
        result["late"] = summarise_random(late)
    slow = [r for r in runs if r["scenario"].startswith("failslow/")]
    if slow:
        result["failslow"] = summarise_failslow(slow)
    result["seeds"] = seeds_summary(runs)
    result["runs"] = runs
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


def main() -> None:
    """Run the suites and write the JSON result (after every run, so progress survives)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="add a 1,024-GPU layout")
    parser.add_argument("--huge", action="store_true", help="add 16,384-GPU runs")
    parser.add_argument("--healthy-hours", type=float, default=0.0, help="healthy 1,024-GPU hours")
    parser.add_argument("--segment-hours", type=float, default=4.0)
    parser.add_argument(
        "--segments",
        help="run only healthy segments FIRST:END (e.g. 0:2; parallel runs, joined by --keep)",
    )
    parser.add_argument("--no-suite", action="store_true", help="skip the default suite")
    parser.add_argument("--random", type=int, default=0, help="drawn fault scenarios")
    parser.add_argument("--late", type=int, default=0, help="drawn stalls, late watchdog")
    parser.add_argument("--failslow", type=int, default=0, help="fail-slow seeds (5 runs each)")
    parser.add_argument("--seed-base", type=int, default=TUNING_SEEDS_BELOW)
    parser.add_argument("--only", nargs="+", help="run only scenarios whose names start so")
    parser.add_argument("--measured", help="date to record (default: today, UTC)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep",
        type=Path,
        nargs="+",
        default=[],
        help="keep earlier result files' runs that are not rerun now",
    )
    args = parser.parse_args()
    plan = [] if args.no_suite else scenarios(args.large)
    if args.huge:
        plan += huge_scenarios()
    if args.healthy_hours:
        segments = healthy_segments(args.healthy_hours, args.segment_hours)
        if args.segments:
            first, end = (int(x) for x in args.segments.split(":"))
            segments = segments[first:end]
        plan += segments
    plan += random_scenarios(args.random, args.seed_base)
    plan += late_scenarios(args.late, args.seed_base)
    plan += failslow_scenarios(args.failslow, args.seed_base)
    if args.only:
        plan = [(name, spec) for name, spec in plan if name.startswith(tuple(args.only))]
    files = [json.loads(path.read_text()) for path in args.keep]
    rerun = {name for name, _ in plan}
    runs: list[dict[str, Any]] = []
    for kept in files:
        known = {r["scenario"] for r in runs}
        runs += [r for r in kept.get("runs", []) if r["scenario"] not in rerun | known]
    suites = _suites(args, files)
    measured = args.measured or datetime.now(UTC).strftime("%Y-%m-%d")
    for name, spec in plan:
        print(f"[bench] {name}", file=sys.stderr, flush=True)
        runs.append({**score(name, spec), "measured": measured})
        _write(args.out, runs, suites, measured)
    if not plan:  # only joining kept files
        _write(args.out, runs, suites, measured)
    result = json.loads(args.out.read_text())
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
