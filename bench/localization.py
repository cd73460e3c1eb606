"""Localization benchmark: graph build and each localizer on a 16,384-GPU job (tp8 pp16 dp128).

Progress comes from the twin's step model (healthy speed jitter, one 1.3x straggler GPU; one
hung rank), so records look like what Flight Recorder reports. CPU time via
time.process_time; target < 2 s per localization. Prints JSON and writes
bench/results/localization.json.

    python -m bench.localization [--steps 6]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from diagnosis.fabric import Fabric
from diagnosis.graph import CommGraph, build_comm_graph
from diagnosis.localize import localize_hang, localize_network, localize_straggler
from diagnosis.model import Suspect
from ingest.schema import CollectiveProgress, JobTopology
from sim.cluster import layout_job
from sim.faults.common import stop_rank
from sim.jobs import JobRun
from sim.scenario import JobSpec, parse_scenario

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "localization.json"
START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
TP, PP, DP, GPUS_PER_NODE, NODES_PER_RACK = 8, 16, 128, 8, 32
STEP_S = 4.0
STRAGGLER = (1234, 2)  # node index, GPU
HUNG_RANK = 5_555


def _job() -> tuple[JobRun, JobTopology, list[str]]:
    spec = JobSpec(id="big", tp=TP, pp=PP, dp=DP, step_time_s=STEP_S, warmup_steps=0)
    nodes = spec.world // GPUS_PER_NODE
    scenario = parse_scenario(
        {"cluster": {"nodes": nodes, "gpus_per_node": GPUS_PER_NODE}, "duration_s": 60}
    )
    layout = layout_job(spec, 0, GPUS_PER_NODE)
    names = [scenario.node_name(i) for i in range(nodes)]
    return JobRun(layout, np.random.default_rng(1)), layout.topology_event(scenario, START), names


def _steps(
    job: JobRun, names: list[str], slow: np.ndarray, steps: int, t: float = 0.0
) -> tuple[list[CollectiveProgress], float]:
    """Run the twin's step model from second t; return every rank's records and the end."""
    out: list[CollectiveProgress] = []
    for _ in range(steps):
        result = job.next_step(STEP_S, slow)
        out += job.collectives(result, START + timedelta(seconds=t), names)
        if not result.completed:
            break
        t += result.duration_s
        job.step += 1
    return out, t


def _cpu(fn: Callable[[], list[Suspect]]) -> tuple[float, list[Suspect]]:
    began = time.process_time()
    found = fn()
    return round(time.process_time() - began, 3), found


def _top(found: list[Suspect]) -> dict[str, Any]:
    if not found:
        return {}
    s = found[0]
    return {
        "component": s.component.value,
        "node": s.node,
        "gpu": s.gpu,
        "rank": s.rank,
        "nic": s.nic,
        "switch": s.switch,
        "score": round(s.score, 3),
    }


def _straggler(graph: CommGraph, names: list[str], steps: int) -> dict[str, Any]:
    """Time straggler localization with and without a slow GPU; start a hang after it."""
    rng = np.random.default_rng(2)
    jitter = np.exp(rng.normal(0, 0.02, (len(names), GPUS_PER_NODE)))
    healthy, _ = _steps(_job()[0], names, jitter, steps)
    healthy_s, healthy_found = _cpu(lambda: localize_straggler(graph, healthy))
    slow = jitter.copy()
    slow[STRAGGLER] *= 1.3
    job = _job()[0]
    straggling, end = _steps(job, names, slow, steps)
    cpu_s, found = _cpu(lambda: localize_straggler(graph, straggling))
    stop_rank(job, HUNG_RANK)
    hung = straggling + _steps(job, names, slow, 1, end)[0]
    now = max(p.ts for p in hung) + timedelta(minutes=5)
    hang_s, hang = _cpu(lambda: localize_hang(graph, hung, now))
    return {
        "straggler": {
            "cpu_s": cpu_s,
            "records": len(straggling),
            "steps": steps,
            "truth": {"node": names[STRAGGLER[0]], "gpu": STRAGGLER[1]},
            "top": _top(found),
        },
        "straggler_healthy": {"cpu_s": healthy_s, "suspects": len(healthy_found)},
        "hang": {
            "cpu_s": hang_s,
            "records": len(hung),
            "truth": {"rank": HUNG_RANK, "node": graph.rank_node[HUNG_RANK]},
            "top": _top(hang),
        },
    }


def _network(graph: CommGraph, names: list[str]) -> dict[str, Any]:
    """Time network localization for a NIC (from ranks and from communicators) and a leaf."""
    down = [r for r in graph.node_ranks[names[700]] if graph.rank_rail[r] == 3]
    comms = [c for r in down for c in graph.comms_of(r) if c in graph.cross_node]
    leaf = [r for r, sw in graph.rank_switch.items() if sw == graph.rank_switch[down[0]]]
    out = {}
    cases: list[tuple[str, list[int], list[str]]] = [
        ("network_nic", down, []),
        ("network_nic_from_comms", [], comms),
        ("network_leaf", leaf, []),
    ]
    for name, ranks, failing in cases:
        cpu_s, found = _cpu(partial(localize_network, graph, ranks, failing))
        out[name] = {"cpu_s": cpu_s, "failing": len(ranks) + len(failing), "top": _top(found)}
    return out


def measure(steps: int) -> dict[str, Any]:
    """Build the graph and time each localizer on synthetic progress; return the numbers."""
    _, topology, names = _job()
    fabric = Fabric.rail_optimized(names, NODES_PER_RACK, GPUS_PER_NODE)
    began = time.process_time()
    graph = build_comm_graph(topology, fabric)
    build_s = round(time.process_time() - began, 3)
    return {
        "job": {
            "gpus": topology.world_size,
            "tp": TP,
            "pp": PP,
            "dp": DP,
            "communicators": len(topology.communicators),
        },
        "graph": {
            "build_cpu_s": build_s,
            "nodes": graph.graph.number_of_nodes(),
            "edges": graph.graph.number_of_edges(),
        },
        **_straggler(graph, names, steps),
        **_network(graph, names),
        "target_cpu_s_per_localization": 2.0,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print JSON and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--steps", type=int, default=6, help="steps in the straggler window")
    args = parser.parse_args(argv)
    result = {
        "measured": date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        **measure(args.steps),
    }
    text = json.dumps(result, indent=2)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
