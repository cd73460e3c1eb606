"""Scenarios drawn from seeds: valid, reproducible, and spread over the ranges promised."""

from __future__ import annotations

import pytest

from sim.generate import (
    DRAWN_KINDS,
    FAILSLOW_AFTER_S,
    SIZES,
    STALLING,
    WATCHDOG_S,
    failslow_scenario,
    failslow_sweep_scenario,
    random_fault_scenario,
)
from sim.scenario import FAULT_KINDS, parse_scenario


def test_a_seed_names_one_scenario_and_every_draw_is_valid():
    drawn = [random_fault_scenario(seed) for seed in range(200)]
    assert random_fault_scenario(17) == drawn[17]
    worlds, kinds, tps = set(), set(), set()
    for spec in drawn:
        scenario = parse_scenario(spec)  # placements, ranges, kinds: validated
        job = scenario.jobs[0]
        worlds.add(job.world)
        tps.add(job.tp)
        fault = scenario.faults[0]
        kinds.add(fault.kind)
        assert WATCHDOG_S[0] <= scenario.watchdog_timeout_s <= WATCHDOG_S[1]
        assert fault.at_s >= 25 * job.step_time_s
        if fault.kind in STALLING:
            assert scenario.duration_s > fault.at_s + scenario.watchdog_timeout_s
        assert scenario.wear.throttle_slowdown > 0 and job.step_jitter > 0
    assert worlds == set(SIZES)
    assert tps == {1, 2, 4, 8}
    assert kinds == set(DRAWN_KINDS)
    assert set(DRAWN_KINDS) == set(FAULT_KINDS) - {"precursor", "nic_slow", "host_slow"}


def test_the_fail_slow_sweep_spans_each_component_and_the_low_band():
    kinds = {"gpu": "straggler", "nic": "nic_slow", "host": "host_slow"}
    for component, kind in kinds.items():
        slowdowns = []
        for seed in range(40):
            spec = failslow_sweep_scenario(seed, 4, component)
            assert failslow_sweep_scenario(seed, 4, component) == spec
            scenario = parse_scenario(spec)
            (fault,) = scenario.faults
            assert fault.kind == kind and scenario.jobs[0].world <= 1024
            assert scenario.duration_s == fault.at_s + FAILSLOW_AFTER_S
            slowdowns.append(fault.slowdown)
        if component == "nic":
            assert min(slowdowns) >= 1.5 and max(slowdowns) <= 6.0
        else:  # half the draws aim at 1.03-1.10x of the job's pace
            assert sum(s < 1.11 for s in slowdowns) >= 10
            assert min(slowdowns) >= 1.035 and max(slowdowns) <= 1.36
    with pytest.raises(ValueError, match="unknown fail-slow component"):
        failslow_sweep_scenario(1, 4, "disk")


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_failslow_draws_one_slow_gpu_under_the_given_tp(tp):
    slowdowns = []
    for seed in range(30):
        scenario = parse_scenario(failslow_scenario(seed, tp))
        (fault,) = scenario.faults
        assert scenario.jobs[0].tp == tp and scenario.jobs[0].world <= 1024
        assert fault.kind == "straggler" and fault.cause == "pcie"
        assert scenario.duration_s == fault.at_s + FAILSLOW_AFTER_S
        slowdowns.append(fault.slowdown)
    assert min(slowdowns) >= 1.03 and max(slowdowns) <= 1.45
    assert max(slowdowns) - min(slowdowns) > 0.2


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown fault kind"):
        random_fault_scenario(1, "meteor")
