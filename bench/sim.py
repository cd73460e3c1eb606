"""Digital-twin benchmark: telemetry generated per second and peak memory, 1,024 and 16,384 GPUs.

Events are encoded to wire bytes (what publishing costs) and dropped: nobody needs the hour
on disk. Prints JSON and writes bench/results/sim.json.

    python -m bench.sim [--seconds 300]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ingest.schema import GPU_METRIC_FIELDS, EventBase, GpuMetrics, encode_event
from sim.scenario import parse_scenario
from sim.twin import Twin

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "sim.json"
SCENARIOS = REPO / "sim" / "scenarios"


def _scenario(gpus: int, seconds: int) -> dict[str, object]:
    nodes = gpus // 8
    tp, pp = 8, 8 if gpus >= 4096 else 4
    return {
        "seed": 1,
        "cluster": {"nodes": nodes, "gpus_per_node": 8, "nodes_per_rack": 32},
        "jobs": [{"id": "big", "tp": tp, "pp": pp, "dp": gpus // (tp * pp), "step_time_s": 4.0}],
        "duration_s": seconds,
        "faults": [
            {"kind": "straggler", "node": nodes // 2, "gpu": 1, "at_s": seconds // 3},
            {"kind": "xid79", "node": nodes // 3, "gpu": 6, "at_s": seconds * 0.9},
        ],
    }


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(gpus: int, seconds: int) -> dict[str, object]:
    """Simulate `seconds` of a `gpus`-GPU job; return rates and memory."""
    scenario = parse_scenario(_scenario(gpus, seconds))
    counts = {"events": 0, "bytes": 0, "samples": 0}
    rss: list[float] = []

    def emit(event: EventBase) -> None:
        raw = encode_event(event)
        counts["events"] += 1
        counts["bytes"] += len(raw)
        if isinstance(event, GpuMetrics):
            counts["samples"] += sum(
                1 for g in event.gpus for n in GPU_METRIC_FIELDS if getattr(g, n) is not None
            )

    def on_tick(t: float) -> None:
        if int(t) % max(1, seconds // 6) == 0:
            rss.append(_rss_mib())

    began = time.perf_counter()
    Twin(scenario, emit, on_tick=on_tick).run()
    wall = time.perf_counter() - began
    return {
        "gpus": gpus,
        "simulated_s": seconds,
        "wall_s": round(wall, 2),
        "speed_x_real_time": round(seconds / wall, 2),
        "samples_per_s": round(counts["samples"] / wall),
        "events_per_s": round(counts["events"] / wall),
        "wire_mib_per_simulated_s": round(counts["bytes"] / seconds / 2**20, 2),
        "rss_mib_first_sixth": round(rss[1] if len(rss) > 1 else rss[0], 1),
        "rss_mib_end": round(_rss_mib(), 1),
        "one_simulated_hour_wall_s": round(3600 * wall / seconds),
    }


def measure_all_kinds(path: Path) -> dict[str, object]:
    """Run the every-fault-kind scenario at 16,384 GPUs; return speed and each fault's effects."""
    from sim.scenario import load_scenario

    scenario = load_scenario(path)
    events = 0

    def emit(event: EventBase) -> None:
        nonlocal events
        encode_event(event)
        events += 1

    began = time.perf_counter()
    truth = Twin(scenario, emit).run()
    wall = time.perf_counter() - began
    return {
        "scenario": path.name,
        "gpus": scenario.cluster.nodes * scenario.cluster.gpus_per_node,
        "simulated_s": scenario.duration_s,
        "wall_s": round(wall, 2),
        "speed_x_real_time": round(scenario.duration_s / wall, 2),
        "events": events,
        "faults": [
            {"kind": f["kind"], "effects": [e["effect"] for e in f["effects"]]} for f in truth
        ],
    }


def main() -> None:
    """Run both sizes and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=300, help="simulated seconds per size")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--all-kinds",
        action="store_true",
        help="also run sim/scenarios/scale-all-kinds.yaml (every fault kind)",
    )
    args = parser.parse_args()
    runs: list[dict[str, object]] = []
    for gpus in (1024, 16_384):
        print(f"[bench] {gpus} GPUs, {args.seconds} simulated s", file=sys.stderr, flush=True)
        runs.append(measure(gpus, args.seconds))
    if args.all_kinds:
        print("[bench] every fault kind at 16,384 GPUs", file=sys.stderr, flush=True)
        runs.append(measure_all_kinds(SCENARIOS / "scale-all-kinds.yaml"))
    result = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": runs,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "target": "16,384 GPUs: one simulated hour in < 3600 s wall on one core",
        "meets_target": int(runs[1]["one_simulated_hour_wall_s"]) < 3600,  # type: ignore[call-overload]
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
