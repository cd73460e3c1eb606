"""The step model: slow GPUs slow their job; a hung rank stalls its communicators, then all."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cluster import layout_job
from sim.scenario import JobSpec
from sim.steps import run_step

SHAPE = (4, 8, 8)  # pp, dp, tp


def test_healthy_step_takes_the_base_time():
    result = run_step(4.0, np.ones(SHAPE), {})
    assert result.completed
    assert result.duration_s == pytest.approx(4.0)


@pytest.mark.parametrize("slowdown", [1.1, 1.3, 2.0])
def test_one_slow_gpu_slows_the_whole_job_by_about_its_factor(slowdown):
    mult = np.ones(SHAPE)
    mult[2, 5, 3] = slowdown
    ratio = run_step(4.0, mult, {}).duration_s / 4.0
    assert slowdown * 0.9 <= ratio <= slowdown


def test_waits_fall_on_the_peers_of_the_slow_rank():
    mult = np.ones(SHAPE)
    mult[1, 2, 3] = 1.3
    tp = run_step(4.0, mult, {}).phases[0]
    waits = tp.done - tp.arrive
    assert waits[1, 2, 3] == pytest.approx(waits[1, 2].min())  # the slow rank waits least
    assert (waits[1, 2, :3] > waits[1, 2, 3]).all()  # its TP peers wait for it
    assert waits[0, 0, 0] == pytest.approx(waits[0, 0, 1])  # other groups unaffected in TP


def test_hung_rank_stalls_its_communicators_then_everything_downstream():
    absent = np.zeros(SHAPE, bool)
    absent[1, 3, 5] = True
    result = run_step(4.0, np.ones(SHAPE), {}, absent)
    assert not result.completed
    tp, pp, dp = result.phases
    tp_stuck = np.isnan(tp.done) & np.isfinite(tp.arrive)
    assert set(zip(*np.nonzero(tp_stuck), strict=True)) == {(1, 3, t) for t in range(8) if t != 5}
    assert np.isnan(tp.arrive[1, 3, 5])  # the culprit never arrives anywhere
    # its pipeline replica cannot finish; every other replica reaches the DP all-reduce
    assert np.isnan(pp.done[:, 3, :]).all() and np.isfinite(pp.done[:, :3, :]).all()
    assert np.isnan(dp.done).all()
    assert np.isfinite(dp.arrive[:, 0, :]).all() and np.isnan(dp.arrive[:, 3, :]).all()


def test_megatron_layout_keeps_tp_inside_a_node():
    job = JobSpec(id="j", tp=8, pp=2, dp=4, step_time_s=1.0)
    lay = layout_job(job, first_node=10, gpus_per_node=8)
    assert lay.world == 64
    tp_groups = [m for m, k in zip(lay.comm_ranks, lay.comm_kinds, strict=True) if k == "tp"]
    assert all(len(set(lay.rank_node[m].tolist())) == 1 for m in tp_groups)
    dp0 = next(m for c, m in zip(lay.comm_ids, lay.comm_ranks, strict=True) if c == "dp-p0-t0")
    assert dp0.tolist() == [0, 8, 16, 24]
    pp = next(m for c, m in zip(lay.comm_ids, lay.comm_ranks, strict=True) if c == "pp-p0-d1-t2")
    assert pp.tolist() == [10, 42]
    assert lay.rank_node[0] == 10 and lay.rank_node[63] == 17
