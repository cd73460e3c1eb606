"""Implicit detectors streaming a twin run: detection latency against the ground truth."""

from __future__ import annotations

from datetime import timedelta

import pytest

from diagnosis.detectors import (
    Detector,
    HangDetector,
    MfuDetector,
    NumericalDetector,
    StragglerDetector,
)
from diagnosis.model import Blame, Category, ComponentKind, Finding
from sim.scenario import parse_scenario
from sim.twin import DEFAULT_START, Twin

JOB = {"id": "j", "tp": 8, "pp": 2, "dp": 4, "step_time_s": 2.0}
BASE = {
    "seed": 3,
    "cluster": {"nodes": 8, "gpus_per_node": 8, "nodes_per_rack": 4},
    "jobs": [JOB],
    "duration_s": 240,
}


def stream(detector: Detector, faults: list[dict], **overrides: object):
    """Run a scenario, checking the detector every simulated second; return (hits, truth)."""
    hits: list[tuple[float, Finding]] = []

    def tick(t: float) -> None:
        hits.extend((t, f) for f in detector.check(DEFAULT_START + timedelta(seconds=t)))

    scenario = parse_scenario({**BASE, **overrides, "faults": faults})
    truth = Twin(scenario, detector.observe, on_tick=tick).run()
    return hits, truth


HANG = {"kind": "hang", "job": "j", "rank": 13, "at_s": 60}


def test_hang_fires_once_within_a_minute_long_before_the_watchdog():
    hits, truth = stream(HangDetector("j"), [HANG], duration_s=720, watchdog_timeout_s=600)
    assert len(hits) == 1
    t, finding = hits[0]
    onset = truth[0]["onset_s"]
    assert 0 < t - onset <= 60
    assert t - onset <= 15  # measured: 12 s with 2 s steps
    assert finding.category == Category.HANG and finding.blame == Blame.UNKNOWN
    assert "on tp-p0-d1," in finding.line  # rank 13's TP group, stuck longest, comes first


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_hang_never_fires_on_healthy_runs(seed):
    hits, _ = stream(HangDetector("j"), [], seed=seed, duration_s=300)
    assert hits == []


@pytest.mark.parametrize("layout", [{"tp": 8, "pp": 1, "dp": 8}, {"tp": 2, "pp": 8, "dp": 4}])
def test_hang_fires_on_other_layouts(layout):
    job = {**JOB, **layout, "step_time_s": 1.5}
    hits, _ = stream(HangDetector("j"), [{**HANG, "rank": 5}], jobs=[job], duration_s=180)
    assert len(hits) == 1 and hits[0][0] - 60 <= 15


STRAGGLER = {"kind": "straggler", "node": 5, "gpu": 1, "at_s": 60, "slowdown": 1.3}


@pytest.mark.parametrize("detector_cls", [StragglerDetector, MfuDetector])
def test_straggler_fires_once_with_its_factor(detector_cls):
    hits, truth = stream(detector_cls("j"), [STRAGGLER])
    assert len(hits) == 1
    t, finding = hits[0]
    assert 0 < t - truth[0]["onset_s"] <= 40  # measured: about 20 s (7 slow steps)
    factor = float(finding.line.split("degraded ")[1].split("x")[0])
    assert 1.15 < factor < 1.35


def test_pcie_straggler_without_metric_signal_is_still_seen():
    hits, _ = stream(StragglerDetector("j"), [{**STRAGGLER, "slowdown": 1.5, "cause": "pcie"}])
    assert len(hits) == 1


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("detector_cls", [StragglerDetector, MfuDetector, NumericalDetector])
def test_degradation_and_numerical_detectors_stay_quiet_on_healthy_runs(seed, detector_cls):
    hits, _ = stream(detector_cls("j"), [], seed=seed, duration_s=300)
    assert hits == []


NAN = {"kind": "nan", "node": 3, "gpu": 4, "at_s": 60}


def test_nan_with_rank_grad_norms_names_the_corrupting_gpu():
    job = {**JOB, "per_rank_grad_norm": True}
    hits, truth = stream(NumericalDetector("j"), [NAN], jobs=[job])
    assert len(hits) == 1
    t, finding = hits[0]
    assert 0 < t - truth[0]["onset_s"] <= 15
    assert finding.rank == 3 * 8 + 4
    assert (finding.node, finding.gpu) == ("node-0003", 4)
    assert finding.blame == Blame.INFRASTRUCTURE and finding.component == ComponentKind.GPU
    assert finding.category == Category.NUMERICAL


def test_nan_without_rank_grad_norms_blames_the_application():
    hits, truth = stream(NumericalDetector("j"), [NAN])
    assert len(hits) == 1
    assert hits[0][1].blame == Blame.APPLICATION and hits[0][1].rank is None
    assert 0 < hits[0][0] - truth[0]["onset_s"] <= 15


def test_hang_during_warm_up_fires_after_the_warm_up_limit():
    hits, _ = stream(HangDetector("j"), [{**HANG, "at_s": 10}], duration_s=300)
    assert len(hits) == 1 and 100 <= hits[0][0] - 10 <= 135  # measured: 119 s after onset
