"""trainguard's additions: elastic base workers on training, draining ahead of demand, the
lending deadband; and the trainguard variants keep every accounting invariant."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from scheduler.inference import LoadSeries
from scheduler.model import POLICIES, Job, Pool, SimConfig
from scheduler.simulator import Simulator
from scheduler.workload import lyra_like_jobs


def ramp() -> LoadSeries:
    """Idle for 10 minutes, then demand rising 0.1 per 5 minutes to a full cluster."""
    load = np.r_[0.0, 0.1, 0.2, np.minimum(1.0, 0.3 + 0.1 * np.arange(97))]
    return LoadSeries(step_s=300.0, load=load)


@pytest.mark.parametrize(("policy", "preempted"), [("lyra", 1), ("trainguard", 0)])
def test_draining_lets_a_job_on_a_loan_finish_before_demand_needs_the_server(
    policy: str, preempted: int
) -> None:
    # A holds the training server; B lands on the loaned one and ends at t=1,001 s. At
    # t=900 s the 10-minute forecast wants the server back but current demand does not yet
    # need it: Lyra preempts B, trainguard drains the server and returns it when B ends.
    jobs = [Job(0, 0.0, 10_000.0, 8, 8, 8), Job(1, 1.0, 1_000.0, 8, 8, 8)]
    config = SimConfig(training_servers=1, inference_servers=2, check_invariants=True)
    sim = Simulator(jobs, POLICIES[policy], config, load=ramp())
    out = sim.run()
    assert sim.counters.violations == []
    assert out["preemptions"] == preempted
    assert out["reclaims"] == out["loans"] == 1
    assert out["inference_shortfall_gpu_h"] == 0.0
    if policy == "trainguard":
        assert sim.runs[1].finish == pytest.approx(1_001.0)


@pytest.mark.parametrize(
    ("policy", "pool"), [("lyra", Pool.INFERENCE), ("trainguard", Pool.TRAINING)]
)
def test_elastic_base_workers_start_on_training_under_trainguard(policy: str, pool: Pool) -> None:
    jobs = [Job(0, 0.0, 3_600.0, 8, 8, 16)]
    config = SimConfig(training_servers=2, inference_servers=3)  # idle: 2 servers lent
    sim = Simulator(jobs, POLICIES[policy], config, load=LoadSeries(300.0, np.zeros(40)))
    sim._rebalance(0.0)
    sim.enqueue(0)
    sim.rounds.run(0.0)
    run = sim.runs[0]
    servers = sim.cluster.servers
    assert {servers[s].pool for s in run.base} == {pool}
    assert run.extra_gpus == 8  # the extra worker goes to a loan first either way
    assert {servers[s].pool for s in run.extra} == {Pool.INFERENCE}


def test_lending_deadband_lends_less_often() -> None:
    jobs = lyra_like_jobs(400, days=3, mean_duration_s=3000, seed=4)
    config = SimConfig(training_servers=4, inference_servers=8, seed=2)
    wide = Simulator(jobs, POLICIES["trainguard"], dataclasses.replace(config, lend_margin=0.05))
    wide.run()
    none = Simulator(jobs, POLICIES["trainguard"], dataclasses.replace(config, lend_margin=0.0))
    none.run()
    assert 0 < wide.counters.loans < none.counters.loans


@pytest.mark.parametrize(
    "policy", ["trainguard-random", "trainguard-smallest", "trainguard-smallest-drain"]
)
def test_trainguard_variants_keep_the_invariants(policy: str) -> None:
    jobs = lyra_like_jobs(150, days=1.5, mean_duration_s=3000, seed=5)
    config = SimConfig(
        training_servers=4,
        inference_servers=4,
        check_invariants=True,
        seed=2,
        failure_rate_per_server_day=0.5,
    )
    sim = Simulator(jobs, POLICIES[policy], config)
    out = sim.run()
    assert sim.counters.violations == []
    assert out["jobs"] + out["unschedulable"] == len(jobs)
    assert sum(r.gpu_seconds for r in sim.runs.values()) == pytest.approx(
        sum(sim.cluster.busy_gpu_s), rel=1e-9
    )
