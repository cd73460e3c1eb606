"""The elastic-job rule: the largest and longest jobs, up to a share of the GPU-time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scheduler.elastic import by_share, gpu_time_share, random_ranges, ranges_by_share
from scheduler.trace import load_trace
from scheduler.workload import lyra_like_jobs

REPO = Path(__file__).resolve().parents[2]


def test_share_is_reached_by_the_largest_jobs_first() -> None:
    gpus = np.array([1, 8, 2, 64, 4, 1])
    duration = np.array([100.0, 1000.0, 50.0, 500.0, 10.0, 4000.0])
    # GPU-time 100, 8000, 100, 32000, 40, 4000: total 44,240
    assert by_share(gpus, duration, 0.5).tolist() == [False, False, False, True, False, False]
    chosen = by_share(gpus, duration, 0.95)  # 40,000 is 2,028 short, 44,000 1,972 over
    assert chosen.tolist() == [False, True, False, True, False, True]
    assert gpu_time_share(gpus, duration, chosen) == pytest.approx(44_000 / 44_240)
    assert not by_share(gpus, duration, 0.0).any()
    assert by_share(gpus, duration, 1.0).all()


def test_the_last_job_is_kept_only_if_it_brings_the_share_closer() -> None:
    gpus = np.array([1, 1, 1])
    duration = np.array([30.0, 30.0, 40.0])  # shares 0.4, 0.3, 0.3
    assert by_share(gpus, duration, 0.5).tolist() == [False, False, True]  # 0.4 beats 0.7
    assert by_share(gpus, duration, 0.6).sum() == 2  # 0.7 is as close as 0.4 is not
    # a tie in GPU-time goes to the longer job
    assert by_share(np.array([2, 1]), np.array([50.0, 100.0]), 0.4).tolist() == [False, True]


def test_ranges_are_requested_to_twice_requested() -> None:
    lo, hi = ranges_by_share(np.array([4, 8, 1]), np.array([10.0, 100.0, 5.0]), 0.5)
    assert lo.tolist() == [4, 8, 1] and hi.tolist() == [4, 16, 1]
    lo, hi = random_ranges(np.array([4] * 1000), 0.05, np.random.default_rng(0))
    chosen = hi > lo
    assert 20 < chosen.sum() < 80
    assert set(lo[chosen]) == {2} and set(hi[chosen]) == {8}


def test_synthetic_workload_holds_the_share_in_its_biggest_jobs() -> None:
    jobs = lyra_like_jobs(2000, days=3, seed=1)
    work = np.array([j.work for j in jobs])
    elastic = np.array([j.elastic for j in jobs])
    assert gpu_time_share(work, np.ones(len(jobs)), elastic) == pytest.approx(0.36, abs=0.02)
    assert work[elastic].min() >= work[~elastic].max()
    assert all(j.min_gpus == j.num_gpus and j.max_gpus == 2 * j.num_gpus for j in jobs if j.elastic)
    old = lyra_like_jobs(2000, days=3, seed=1, elastic_fraction=0.05)
    assert [j.duration for j in old] == [j.duration for j in jobs]  # only the marks differ
    assert 0.02 < np.mean([j.elastic for j in old]) < 0.08


def test_canonical_trace_without_ranges_gets_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    rows = [f"{i},{100 * (i + 1)},1" for i in range(10)]
    path.write_text("submit_time,duration,num_gpus\n" + "\n".join(rows) + "\n")
    jobs = load_trace(path)
    assert [j.job_id for j in jobs if j.elastic] == [8, 9]  # 1,900 + 1,000 of 5,500 = 0.35
    assert jobs[9].max_gpus == 2 and jobs[9].min_gpus == 1
    assert not any(j.elastic for j in load_trace(path, elastic_share=0.0))
    assert sum(j.elastic for j in load_trace(path, elastic_share=0.5)) == 3


def test_explicit_min_max_columns_are_respected(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "submit_time,duration,num_gpus,min_gpus,max_gpus\n"
        "0,100000,8,8,8\n"  # the biggest job, but the trace says inelastic
        "1,10,2,1,6\n"
        "2,10,4,4,4\n"
    )
    jobs = load_trace(path, elastic_share=0.9)
    assert [(j.min_gpus, j.num_gpus, j.max_gpus) for j in jobs] == [(8, 8, 8), (1, 2, 6), (4, 4, 4)]


def test_cli_takes_the_share_and_the_old_fraction(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,duration,num_gpus\n0,60,1\n5,600,2\n")
    for extra in (["--elastic-share", "0.5"], ["--elastic-fraction", "0.5"]):
        done = subprocess.run(
            [sys.executable, "-m", "trainguard", "scheduler", "simulate", "--trace", str(path)]
            + ["--policy", "lyra", "--json", *extra],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["jobs"] == 2
    bad = subprocess.run(
        [sys.executable, "-m", "trainguard", "scheduler", "simulate", "--trace", str(path)]
        + ["--policy", "lyra", "--elastic-share", "1.5"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "--elastic-share must be within 0..1" in bad.stderr
