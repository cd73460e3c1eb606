"""Late consequences on drawn layouts: a hang's watchdog timeouts and crash join its incident.

Seeds from 3000 on are used by these tests only (the bench evaluates 1000 on; tuning used
seeds under 1000): layouts, sizes, places and watchdog timeouts nobody chose by hand.
"""

from __future__ import annotations

import pytest

from bench.scoring import matches
from diagnosis.engine import DiagnosisEngine
from diagnosis.model import Category
from ingest.schema import EventBase
from sim.generate import random_fault_scenario
from sim.scenario import parse_scenario
from sim.twin import DEFAULT_START, Twin


def replay(spec: dict) -> tuple[list, list[dict]]:
    r = DiagnosisEngine()

    def feed(event: EventBase) -> None:
        r.feed(event)

    truth = Twin(parse_scenario(spec), feed).run()
    return r.finish(), truth


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3001, 3006, 3007])  # 512, 256 and 4,096 GPUs
def test_a_hang_and_its_late_watchdog_crash_are_one_incident(seed):
    spec = random_fault_scenario(seed, "hang")
    job = spec["jobs"][0]
    assert 256 <= job["tp"] * job["pp"] * job["dp"] <= 4096
    incidents, truth = replay(spec)
    (fault,) = truth
    crashes = [e["at_s"] for e in fault["effects"] if e["effect"] == "crash"]
    assert crashes, "the watchdog fired within the run"
    assert crashes[0] - fault["onset_s"] >= 300  # well past the correlator's 5-minute window
    (incident,) = incidents
    assert incident.category == Category.HANG
    assert matches(incident, fault)
    assert (incident.detected_at - DEFAULT_START).total_seconds() < fault["onset_s"] + 120
    # the late timeouts and the crash were attached to it, not dropped
    assert incident.updated_at is not None
    assert (incident.updated_at - DEFAULT_START).total_seconds() >= crashes[0] - 0.001
    assert incident.findings > 1
