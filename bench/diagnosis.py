"""Diagnosis accuracy benchmark: twin scenarios of every fault kind, scored against truth.json.

For each scenario: `sim run` into a temporary directory, `diagnose` it (which never reads the
truth), then match incidents to the injected faults. Prints JSON and writes
bench/results/diagnosis.json.

    python -m bench.diagnosis [--large]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from diagnosis.incidents import Incident
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


def _matches(incident: Incident, truth: dict[str, Any]) -> bool:
    """Whether an incident's top suspect names the injected component."""
    if not incident.suspects:
        return truth["component"]["type"] == "job" and incident.job == truth["component"]["job"]
    top = incident.suspects[0]
    comp = truth["component"]
    kind = comp["type"]
    if kind in ("gpu", "rank"):
        return top.node == comp["node"] and top.gpu == comp["gpu"]
    if kind == "nic":
        return top.node == comp["node"] and top.nic == comp["nic"]
    if kind == "switch":
        return top.switch in comp["switches"]
    if kind == "node":
        return top.node == comp["node"]
    return top.component.value == "job" or incident.blame.value == "application"


def score(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Simulate, diagnose and score one scenario."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        scenario = parse_scenario(spec)
        with FileSink(out) as sink:
            twin = Twin(scenario, sink)
            truth = twin.run()
            sink.write_inventory(twin.hw.inventory(twin.node_names))
        began = time.process_time()
        incidents = diagnose_dir(out)
        cpu = time.process_time() - began
    gpus = scenario.cluster.nodes * scenario.cluster.gpus_per_node
    result: dict[str, Any] = {
        "scenario": name,
        "gpus": gpus,
        "incidents": len(incidents),
        "diagnose_cpu_s": round(cpu, 2),
    }
    if not truth:
        result["false_incidents"] = len(incidents)
        result["gpu_hours"] = gpus * scenario.duration_s / 3600
        return result
    fault = truth[0]
    onset = DEFAULT_START.timestamp() + fault["onset_s"]
    hit = next((i for i in incidents if _matches(i, fault)), None)
    result.update(
        kind=fault["kind"],
        detected=bool(incidents),
        localized=hit is not None,
        latency_s=None if hit is None else round(hit.detected_at.timestamp() - onset, 1),
        extra_incidents=len(incidents) - (1 if hit else 0),
        top=None
        if not incidents or not incidents[0].suspects
        else incidents[0].suspects[0].model_dump(exclude={"explanation"}),
    )
    return result


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind recall, top-1 precision and latency; false incidents on healthy runs."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if "kind" in run:
            by_kind[run["kind"]].append(run)
    kinds = {}
    for kind, rs in sorted(by_kind.items()):
        lat = sorted(r["latency_s"] for r in rs if r["latency_s"] is not None)
        kinds[kind] = {
            "runs": len(rs),
            "recall": round(sum(r["detected"] for r in rs) / len(rs), 2),
            "top1_precision": round(sum(r["localized"] for r in rs) / len(rs), 2),
            "latency_p50_s": lat[len(lat) // 2] if lat else None,
            "latency_max_s": lat[-1] if lat else None,
            "extra_incidents": sum(r["extra_incidents"] for r in rs),
        }
    healthy = [r for r in runs if "false_incidents" in r]
    hours = sum(r["gpu_hours"] for r in healthy)
    false = sum(r["false_incidents"] for r in healthy)
    return {
        "kinds": kinds,
        "healthy_gpu_hours": round(hours, 1),
        "false_incidents": false,
        "false_incidents_per_1000_gpu_hours": round(1000 * false / hours, 2) if hours else None,
    }


def main() -> None:
    """Run the suite and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="add a 1,024-GPU layout")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    runs = []
    for name, spec in scenarios(args.large):
        print(f"[bench] {name}", file=sys.stderr, flush=True)
        runs.append(score(name, spec))
    result = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        **summarise(runs),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
