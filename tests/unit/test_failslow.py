"""Fail-slow: the change-point detector on step times, and localization by what changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from diagnosis.detectors import FailSlowDetector
from diagnosis.engine import DiagnosisEngine
from diagnosis.fabric import Fabric
from diagnosis.incidents import Incident
from diagnosis.model import Category, ComponentKind
from ingest.schema import EventBase, TrainStep
from sim.generate import NOISY_WEAR
from sim.scenario import parse_scenario
from sim.twin import DEFAULT_START, Twin

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def steps(times: list[float], job: str = "j") -> list[TrainStep]:
    out, now = [], T0
    for i, t in enumerate(times):
        now += timedelta(seconds=t)
        out.append(TrainStep(job_id=job, ts=now, step=i, step_time_s=t))
    return out


def run(detector: FailSlowDetector, times: list[float]) -> list[tuple[int, str]]:
    hits = []
    for step in steps(times):
        detector.observe(step)
        hits += [(step.step, f.line) for f in detector.check(step.ts)]
    return hits


def noisy(n: int, jitter: float, seed: int, base: float = 4.0) -> list[float]:
    return list(base * np.exp(np.random.default_rng(seed).normal(0, jitter, n)))


@pytest.mark.parametrize("jitter", [0.003, 0.01, 0.02])
def test_a_five_percent_slowdown_is_found_within_a_few_dozen_steps(jitter):
    times = noisy(60, jitter, 1) + [t * 1.05 for t in noisy(100, jitter, 2)]
    hits = run(FailSlowDetector("j"), times)
    assert len(hits) == 1
    step, line = hits[0]
    assert 60 <= step <= 60 + 40
    assert "x its healthy baseline" in line


def test_it_stays_silent_on_noise_bursts_and_a_slowdown_under_its_floor():
    rng = np.random.default_rng(3)
    times = noisy(3000, 0.015, 4)
    for start in rng.choice(np.arange(50, 2900, 20), 40, replace=False):  # checkpoints, brakes
        for i in range(int(rng.integers(1, 4))):
            times[start + i] *= 1.2
    times += [t * 1.02 for t in noisy(500, 0.015, 5)]  # a 2% drift: under the 4% floor
    assert run(FailSlowDetector("j"), times) == []


def test_one_report_per_episode_and_a_new_one_after_recovery():
    healthy = noisy(60, 0.005, 6)
    slow = [t * 1.08 for t in noisy(60, 0.005, 7)]
    hits = run(FailSlowDetector("j"), healthy + slow + noisy(60, 0.005, 8) + slow)
    assert [s // 60 for s, _ in hits] == [1, 3]


def test_nothing_before_the_baseline_and_other_jobs_are_ignored():
    detector = FailSlowDetector("j")
    for step in steps([4.0] * 10 + [8.0] * 10, job="other"):
        detector.observe(step)
    assert detector.check(T0 + timedelta(hours=1)) == [] and detector.quiet


def replay(spec: dict, cabled: bool = False) -> tuple[list[Incident], list[dict]]:
    """Run the twin into a streaming replay (with the operator's cabling inventory if asked)."""
    scenario = parse_scenario(spec)
    fabric = None
    if cabled:
        hw = Twin(scenario, lambda _e: None)
        fabric = Fabric.from_mapping(hw.hw.inventory(hw.node_names))
    r = DiagnosisEngine(fabric)

    def feed(event: EventBase) -> None:
        r.feed(event)

    truth = Twin(scenario, feed).run()
    return r.finish(), truth


def noisy_job(tp: int, pp: int, fault: dict, duration_s: float = 450) -> dict:
    """Return a 64-GPU job with step jitter and benign heat and throttling, and one fault."""
    return {
        "seed": 11,
        "cluster": {"nodes": 8, "nodes_per_rack": 4},
        "jobs": [
            {
                "id": "j",
                "tp": tp,
                "pp": pp,
                "dp": 64 // (tp * pp),
                "step_time_s": 2.0,
                "step_jitter": 0.01,
            }
        ],
        "wear": NOISY_WEAR,
        "metrics_interval_s": 5.0,
        "duration_s": duration_s,
        "faults": [fault],
    }


def the_incident(incidents: list[Incident], truth: list[dict]) -> Incident:
    (incident,) = incidents
    assert incident.category == Category.STRAGGLER
    assert incident.detected_at - DEFAULT_START <= timedelta(seconds=truth[0]["onset_s"] + 600)
    return incident


@pytest.mark.parametrize(("tp", "pp", "node", "nic"), [(4, 2, 5, 3), (2, 2, 2, 6)])
def test_a_slow_nic_is_named_from_the_transfers_that_cross_it(tp, pp, node, nic):
    fault = {"kind": "nic_slow", "node": node, "nic": nic, "at_s": 150, "slowdown": 1.9}
    incidents, truth = replay(noisy_job(tp, pp, fault), cabled=True)
    top = the_incident(incidents, truth).suspects[0]
    assert top.component == ComponentKind.NIC
    assert (top.node, top.nic) == (f"node-{node:04d}", f"mlx5_{nic}")


def test_a_slow_nic_behind_data_parallel_traffic_alone_is_called_ambiguous():
    fault = {"kind": "nic_slow", "node": 5, "nic": 3, "at_s": 150, "slowdown": 1.9}
    incidents, truth = replay(noisy_job(8, 1, fault), cabled=True)
    incident = the_incident(incidents, truth)
    assert incident.suspects and all(s.component != ComponentKind.GPU for s in incident.suspects)
    assert "ambiguous" in incident.suspects[0].explanation


@pytest.mark.parametrize("tp", [4, 8])
def test_a_slow_host_is_named_as_the_node(tp):
    fault = {"kind": "host_slow", "node": 5, "at_s": 150, "slowdown": 1.08, "relative_to": "job"}
    incidents, truth = replay(noisy_job(tp, 2, fault))
    top = the_incident(incidents, truth).suspects[0]
    assert (top.component, top.node) == (ComponentKind.NODE, "node-0005")


def test_a_gpu_six_percent_behind_the_jobs_pace_is_found_and_named():
    fault = {
        "kind": "straggler",
        "node": 5,
        "gpu": 3,
        "at_s": 150,
        "slowdown": 1.06,
        "relative_to": "job",
        "cause": "pcie",
    }
    incidents, truth = replay(noisy_job(4, 2, fault))
    top = the_incident(incidents, truth).suspects[0]
    assert (top.node, top.gpu) == ("node-0005", 3)
    assert truth[0]["gpu_slowdown"] >= 1.06  # at least the pace's 6% over its own speed


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_a_slow_gpu_under_each_tp_size_is_found_and_named_with_benign_noise_on(tp):
    spec = {
        "seed": 11,
        "cluster": {"nodes": 8, "nodes_per_rack": 4},
        "jobs": [
            {"id": "j", "tp": tp, "pp": 2, "dp": 32 // tp, "step_time_s": 2.0, "step_jitter": 0.01}
        ],
        "wear": NOISY_WEAR,
        "metrics_interval_s": 5.0,
        "duration_s": 400,
        "faults": [
            {
                "kind": "straggler",
                "node": 5,
                "gpu": 3,
                "at_s": 150,
                "slowdown": 1.15,
                "cause": "pcie",
            }
        ],
    }
    incidents, truth = replay(spec)
    (incident,) = incidents
    assert incident.category == Category.STRAGGLER
    top = incident.suspects[0]
    comp = truth[0]["component"]
    assert (top.node, top.gpu) == (comp["node"], comp["gpu"])
    assert incident.detected_at - DEFAULT_START <= timedelta(seconds=150 + 600)
