"""Simulator accounting: GPU-seconds conserved, no job on isolated or reclaimed servers."""

from __future__ import annotations

import dataclasses
import math

import pytest

from scheduler.model import POLICIES, Job, SimConfig
from scheduler.simulator import Simulator
from scheduler.workload import lyra_like_jobs


def small_config(**overrides: object) -> SimConfig:
    base = dict(training_servers=4, inference_servers=4, check_invariants=True, seed=2)
    base.update(overrides)
    return SimConfig(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["fifo", "sjf", "easy", "loan", "elastic", "lyra", "trainguard"])
def test_gpu_seconds_are_conserved_and_invariants_hold(policy: str) -> None:
    jobs = lyra_like_jobs(150, days=1.5, mean_duration_s=3000, elastic_fraction=0.3, seed=5)
    config = small_config(failure_rate_per_server_day=0.5)
    sim = Simulator(jobs, POLICIES[policy], config)
    out = sim.run()
    assert sim.counters.violations == []
    assert out["jobs"] + out["unschedulable"] == len(jobs)
    job_s = sum(r.gpu_seconds for r in sim.runs.values())
    assert math.isclose(job_s, sum(sim.cluster.busy_gpu_s), rel_tol=1e-9)
    for run in sim.runs.values():
        if run.finish is not None:  # linear scaling: work done = work + lost + restarts
            restarts = run.preemptions + run.failures
            expect = run.job.work + run.lost_work + restarts * 60 * run.job.num_gpus
            assert run.remaining == 0.0
            assert run.gpu_seconds == pytest.approx(expect, rel=1e-6, abs=1e-3)


def test_loaning_runs_jobs_on_inference_servers_and_reclaims_them() -> None:
    jobs = lyra_like_jobs(300, days=2, mean_duration_s=4000, seed=1)
    sim = Simulator(jobs, POLICIES["lyra"], small_config())
    out = sim.run()
    assert out["loans"] > 0 and out["reclaims"] > 0
    inference = range(4, 8)
    assert sum(sim.cluster.busy_gpu_s[s] for s in inference) > 0
    assert sim.counters.violations == []


def test_without_loaning_inference_servers_stay_idle_for_training() -> None:
    jobs = lyra_like_jobs(100, days=1, mean_duration_s=3000, seed=1)
    sim = Simulator(jobs, POLICIES["sjf"], small_config())
    out = sim.run()
    assert out["loans"] == 0
    assert all(sim.cluster.busy_gpu_s[s] == 0 for s in range(4, 8))


def test_elastic_job_alone_scales_to_its_maximum() -> None:
    job = Job(0, 0.0, 3600.0, num_gpus=8, min_gpus=4, max_gpus=16)
    sim = Simulator([job], POLICIES["elastic"], small_config())
    out = sim.run()
    assert out["mean_jct_s"] == pytest.approx(1800.0)  # twice the GPUs, half the time
    assert out["scaling_ops"] >= 1


def test_job_bigger_than_the_training_cluster_is_reported_not_run() -> None:
    jobs = [Job(0, 0.0, 100.0, 64, 64, 64), Job(1, 0.0, 100.0, 8, 8, 8)]
    out = Simulator(jobs, POLICIES["fifo"], small_config()).run()
    assert out["unschedulable"] == 1 and out["jobs"] == 1


def test_elastic_job_too_big_at_full_size_is_unschedulable_without_scaling() -> None:
    jobs = [Job(0, 0.0, 100.0, 64, 32, 128), Job(1, 0.0, 100.0, 8, 8, 8)]
    config = small_config()  # 4 training servers: 32 GPUs
    fifo = Simulator(jobs, POLICIES["fifo"], config).run()  # it used to wait forever
    assert fifo["unschedulable"] == 1 and fifo["jobs"] == 1
    elastic = Simulator(jobs, POLICIES["elastic"], config).run()
    assert elastic["unschedulable"] == 0 and elastic["jobs"] == 2


def _starving_big_job() -> list[Job]:
    """A 2-server cluster: an 8-GPU job behind a stream of long 1-GPU jobs.

    By GPU-time the 1-GPU jobs (500 GPU-s) come before the 8-GPU one (800 GPU-s), so shortest
    first hands every freed GPU to them and the big job never sees a whole empty server.
    """
    jobs = [
        Job(0, 0.0, 100.0, num_gpus=5, min_gpus=5, max_gpus=5),
        Job(1, 0.0, 1000.0, num_gpus=5, min_gpus=5, max_gpus=5),
        Job(2, 1.0, 100.0, num_gpus=8, min_gpus=8, max_gpus=8),
    ]
    jobs += [Job(3 + k, 2.0 + k, 500.0, num_gpus=1, min_gpus=1, max_gpus=1) for k in range(12)]
    return jobs


def test_easy_backfilling_keeps_the_blocked_job_its_server() -> None:
    config = small_config(training_servers=2, inference_servers=0)
    easy = Simulator(_starving_big_job(), POLICIES["easy"], config)
    easy.run()
    sjf = Simulator(_starving_big_job(), POLICIES["sjf"], config)
    sjf.run()
    assert easy.counters.violations == []
    # the big job starts when job 0 frees server 0 (t=100); only jobs that end by then may
    # use server 0 meanwhile, so the 1-GPU jobs backfill on server 1's three free GPUs
    assert easy.runs[2].first_start == pytest.approx(100.0)
    started = sjf.runs[2].first_start
    assert started is not None and started > 400.0
    # the backfilled jobs ran on server 1 until the big job started
    early = [r for r in easy.runs.values() if r.job.num_gpus == 1 and r.first_start < 100.0]
    assert len(early) == 3


def test_holding_loans_cuts_lending_churn_without_breaking_invariants() -> None:
    jobs = lyra_like_jobs(400, days=3, mean_duration_s=3000, seed=4)
    policy = POLICIES["trainguard"]
    config = small_config(inference_servers=8)
    held = Simulator(jobs, policy, config)
    held.run()
    plain = Simulator(jobs, dataclasses.replace(policy, loan_hold=False), config)
    plain.run()
    assert held.counters.violations == [] and plain.counters.violations == []
    assert 0 < held.counters.loans < plain.counters.loans
