"""Replay small twin runs from files through diagnosis and score the incidents on truth.json."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from diagnosis.incidents import Incident
from diagnosis.model import Blame, Category, ComponentKind
from diagnosis.replay import diagnose_dir
from sim.output import FileSink
from sim.scenario import parse_scenario
from sim.twin import Twin

JOB = {"id": "j", "tp": 8, "pp": 2, "dp": 4, "step_time_s": 2.0}
BASE: dict[str, Any] = {
    "seed": 3,
    "cluster": {"nodes": 8, "gpus_per_node": 8, "nodes_per_rack": 4},
    "jobs": [JOB],
    "duration_s": 180,
    "host_interval_s": 5,
}


def run_twin(out: Path, faults: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    """Simulate a scenario into `out` as `trainguard sim run` does; return truth.json."""
    scenario = parse_scenario({**BASE, **overrides, "faults": faults})
    with FileSink(out) as sink:
        twin = Twin(scenario, sink)
        truth = twin.run()
        sink.write_truth(truth, scenario.model_dump(mode="json"))
        sink.write_inventory(twin.hw.inventory(twin.node_names))
    return json.loads((out / "truth.json").read_text())


def diagnose(tmp_path: Path, faults: list[dict[str, Any]], **kw: Any):
    truth = run_twin(tmp_path / "run", faults, **kw)
    return diagnose_dir(tmp_path / "run"), truth["faults"]


def latency(incident: Incident, fault: dict[str, Any]) -> float:
    return (incident.detected_at - datetime.fromisoformat(fault["onset"])).total_seconds()


@pytest.mark.parametrize(("node", "gpu"), [(2, 3), (5, 6)])
def test_xid79_is_one_hardware_incident_on_that_gpu(tmp_path, node, gpu):
    incidents, faults = diagnose(
        tmp_path, [{"kind": "xid79", "node": node, "gpu": gpu, "at_s": 60}]
    )
    comp = faults[0]["component"]
    assert len(incidents) == 1, [i.summary for i in incidents]
    inc = incidents[0]
    assert inc.category == Category.GPU_HARDWARE and inc.blame == Blame.INFRASTRUCTURE
    top = inc.suspects[0]
    assert (top.node, top.gpu) == (comp["node"], comp["gpu"])
    assert 0 <= latency(inc, faults[0]) <= 5


@pytest.mark.parametrize("rank", [13, 42])
def test_hang_names_the_hung_ranks_gpu_within_a_minute(tmp_path, rank):
    fault = {"kind": "hang", "job": "j", "rank": rank, "at_s": 60}
    incidents, faults = diagnose(tmp_path, [fault])
    comp = faults[0]["component"]
    hangs = [i for i in incidents if i.category == Category.HANG]
    assert len(incidents) == 1 and len(hangs) == 1, [i.summary for i in incidents]
    inc = hangs[0]
    assert 0 < latency(inc, faults[0]) <= 60
    top = inc.suspects[0]
    assert (top.node, top.gpu, top.rank) == (comp["node"], comp["gpu"], rank)


@pytest.mark.parametrize(("node", "gpu"), [(1, 5), (6, 2)])
def test_straggler_names_the_slow_gpu(tmp_path, node, gpu):
    fault = {"kind": "straggler", "node": node, "gpu": gpu, "at_s": 60, "slowdown": 1.3}
    incidents, faults = diagnose(tmp_path, [fault], duration_s=240)
    comp = faults[0]["component"]
    slow = [i for i in incidents if i.category == Category.STRAGGLER]
    assert len(incidents) == 1 and len(slow) == 1, [i.summary for i in incidents]
    top = slow[0].suspects[0]
    assert (top.node, top.gpu) == (comp["node"], comp["gpu"])


@pytest.mark.parametrize(("node", "nic"), [(1, 2), (4, 7)])
def test_nic_down_is_a_network_incident_naming_that_nic(tmp_path, node, nic):
    incidents, faults = diagnose(
        tmp_path, [{"kind": "nic_down", "node": node, "nic": nic, "at_s": 60}]
    )
    comp = faults[0]["component"]
    assert len(incidents) == 1, [i.summary for i in incidents]
    inc = incidents[0]
    assert inc.category == Category.NETWORK
    top = inc.suspects[0]
    assert top.component == ComponentKind.NIC
    assert (top.node, top.nic) == (comp["node"], comp["nic"])
    assert 0 <= latency(inc, faults[0]) <= 30


@pytest.mark.parametrize("kind", ["user_error", "app_xid"])
@pytest.mark.parametrize("at_s", [50, 95])
def test_application_fault_is_one_application_incident(tmp_path, kind, at_s):
    incidents, _ = diagnose(tmp_path, [{"kind": kind, "job": "j", "at_s": at_s}])
    assert len(incidents) == 1, [i.summary for i in incidents]
    inc = incidents[0]
    assert inc.blame == Blame.APPLICATION and inc.job == "j"
    assert all(s.component not in (ComponentKind.GPU, ComponentKind.NIC) for s in inc.suspects)


@pytest.mark.parametrize("seed", [3, 11])
def test_healthy_run_has_no_incident(tmp_path, seed):
    incidents, _ = diagnose(tmp_path, [], seed=seed, duration_s=240)
    assert incidents == [], [i.summary for i in incidents]


def test_cli_writes_incidents_and_rejects_a_missing_dir(tmp_path, capsys):
    import argparse

    from trainguard.diagnose_cli import add_parsers

    parser = argparse.ArgumentParser()
    add_parsers(parser.add_subparsers())
    run_twin(tmp_path / "run", [{"kind": "xid79", "node": 2, "gpu": 3, "at_s": 60}])
    out = tmp_path / "incidents.json"
    args = parser.parse_args(["diagnose", str(tmp_path / "run"), "--out", str(out)])
    assert args.func(args) == 0
    (incident,) = json.loads(out.read_text())
    assert incident["category"] == "gpu.hardware" and incident["job"] == "j"
    top = incident["suspects"][0]
    assert {"component", "node", "gpu", "nic", "switch", "rank", "score"} <= set(top)
    assert (top["node"], top["gpu"]) == ("node-0002", 3)
    missing = parser.parse_args(["diagnose", str(tmp_path / "nope")])
    assert missing.func(missing) == 2
    assert "not a directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = parser.parse_args(["diagnose", str(empty)])
    assert bad.func(bad) == 2
