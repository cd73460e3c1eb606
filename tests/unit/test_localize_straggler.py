"""Straggler localization: the rank whose own slowness makes its peers wait."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from diagnosis.engine import STRAGGLER_STEPS, STRAGGLER_WINDOW, straggler_window
from diagnosis.graph import build_comm_graph
from diagnosis.localize import localize_straggler
from diagnosis.model import ComponentKind
from ingest.schema import CommKind
from tests.localize_builders import record, run_twin, topology

# Two TP pairs on two hosts and two DP groups across them.
PLACE = {0: ("h1", 0), 1: ("h1", 1), 2: ("h2", 4), 3: ("h2", 5)}
COMMS = {
    "t0": (CommKind.TP, [0, 1]),
    "t1": (CommKind.TP, [2, 3]),
    "d0": (CommKind.DP, [0, 2]),
    "d1": (CommKind.DP, [1, 3]),
}
GRAPH = build_comm_graph(topology(PLACE, COMMS))
DP_ONLY = build_comm_graph(
    topology({r: (f"n{r}", 0) for r in range(6)}, {"dp": (CommKind.DP, list(range(6)))})
)


def steps(
    compute: np.ndarray, steps: int = 12, tp_cost: float = 0.05, dp_cost: float = 0.1
) -> list:
    """Return TP-then-DP records of the 4-rank job; compute[k, r] is rank r's compute in step k."""
    out, t = [], 0.0
    for k in range(steps):
        arrive = t + compute[k]
        tp_done = {r: max(arrive[m] for m in COMMS[f"t{r // 2}"][1]) + tp_cost for r in range(4)}
        for r in range(4):
            out.append(record(r, f"t{r // 2}", k, start=arrive[r], end=tp_done[r]))
        dp_done = {r: max(tp_done[m] for m in COMMS[f"d{r % 2}"][1]) + dp_cost for r in range(4)}
        for r in range(4):
            out.append(record(r, f"d{r % 2}", k, start=tp_done[r], end=dp_done[r]))
        t = max(dp_done.values())
    return out


def dp_steps(compute: np.ndarray, steps: int = 10, use_start: bool = True) -> list:
    """Return records of the DP-only job (one all-reduce per step)."""
    out, t = [], 0.0
    for k in range(steps):
        arrive = t + compute[k]
        done = arrive.max() + 0.2
        for r in range(arrive.size):
            wait = (done - arrive[r]) * 1000
            start = arrive[r] if use_start else None
            out.append(record(r, "dp", k, start=start, end=done, duration_ms=wait))
        t = done
    return out


def jitter(shape: tuple[int, int], seed: int = 0, sd: float = 0.02) -> np.ndarray:
    return 3.0 * np.exp(np.random.default_rng(seed).normal(0, sd, shape))


def test_healthy_jitter_blames_nobody():
    assert localize_straggler(GRAPH, steps(jitter((12, 4)))) == []
    assert localize_straggler(DP_ONLY, dp_steps(jitter((10, 6)))) == []
    assert localize_straggler(GRAPH, []) == []


def test_slow_rank_in_a_flat_group_is_blamed():
    compute = jitter((10, 6), seed=1)
    compute[:, 4] *= 1.3
    (suspect,) = localize_straggler(DP_ONLY, dp_steps(compute))
    assert (suspect.component, suspect.rank, suspect.node, suspect.gpu) == (
        ComponentKind.GPU,
        4,
        "n4",
        0,
    )
    assert suspect.score > 0.9
    assert suspect.explanation.startswith("rank 4 (n4 GPU 0) arrives last at 9 of 9 collectives")


def test_arrival_from_duration_alone_is_enough():
    compute = jitter((10, 6), seed=2)
    compute[:, 1] *= 1.25
    (suspect,) = localize_straggler(DP_ONLY, dp_steps(compute, use_start=False))
    assert suspect.rank == 1


def test_lateness_inherited_through_tp_is_traced_back_to_the_slow_rank():
    compute = jitter((12, 4), seed=3)
    compute[:, 3] *= 1.3  # rank 2 is late at d0 only because its TP partner 3 was slow
    (suspect,) = localize_straggler(GRAPH, steps(compute))
    assert (suspect.rank, suspect.node, suspect.gpu) == (3, "h2", 5)
    assert "on t1 (tp)" in suspect.explanation or "on d1 (dp)" in suspect.explanation


def test_one_slow_step_is_not_a_straggler():
    compute = jitter((12, 4), seed=4)
    compute[6, 0] *= 1.5
    assert localize_straggler(GRAPH, steps(compute)) == []


def test_redelivered_records_and_other_jobs_change_nothing():
    compute = jitter((12, 4), seed=5)
    compute[:, 0] *= 1.3
    progress = steps(compute)
    noise = [p.model_copy(update={"job_id": "other", "rank": (p.rank + 1) % 4}) for p in progress]
    once = localize_straggler(GRAPH, progress)
    assert localize_straggler(GRAPH, progress + progress[:20] + noise) == once
    assert once[0].rank == 0


def test_two_slow_gpus_on_one_host_point_at_the_host():
    compute = jitter((12, 4), seed=6)
    compute[:, 2] *= 1.3
    compute[1::2, 2] /= 1.3  # 2 and 3 take turns being the slow one
    compute[1::2, 3] *= 1.3
    (suspect,) = localize_straggler(GRAPH, steps(compute), min_persistence=0.4)
    assert (suspect.component, suspect.node) == (ComponentKind.NODE, "h2")


# ---------------------------------------------------------------------- twin scenarios

STRAGGLERS: list[tuple[dict[str, Any], tuple[int, int], dict[str, Any]]] = [
    ({"id": "j", "tp": 8, "pp": 2, "dp": 4}, (5, 3), {}),
    ({"id": "j", "tp": 1, "pp": 4, "dp": 16}, (2, 6), {}),
    ({"id": "j", "tp": 4, "pp": 1, "dp": 16}, (7, 0), {}),
    ({"id": "j", "tp": 2, "pp": 2, "dp": 16, "ep": 4}, (1, 1), {}),
    (
        {"id": "j", "tp": 8, "pp": 2, "dp": 2, "first_node": 4},
        (6, 7),
        {"other_jobs": [{"id": "side", "tp": 8, "dp": 4, "step_time_s": 3.0}]},
    ),
]


@pytest.mark.parametrize(("job", "where", "extra"), STRAGGLERS)
def test_twin_straggler_is_localized_to_the_slow_gpu(job, where, extra):
    node, gpu = where
    fault = {"kind": "straggler", "node": node, "gpu": gpu, "at_s": 20, "slowdown": 1.3}
    run = run_twin(job, [fault], **extra)
    top = localize_straggler(run.graph, run.progress(min_seq=12))[0]
    assert top.component is ComponentKind.GPU
    assert (top.node, top.gpu) == (run.truth[0]["component"]["node"], gpu)
    assert top.score > 0.8


def test_twin_healthy_job_and_pre_onset_window_have_no_straggler():
    for job, _, extra in STRAGGLERS:
        healthy = run_twin(job, [], **extra)
        assert localize_straggler(healthy.graph, healthy.progress()) == []
    late = {"kind": "straggler", "node": 5, "gpu": 3, "at_s": 100, "slowdown": 1.3}
    run = run_twin(STRAGGLERS[0][0], [late])
    before = [p for p in run.progress() if p.seq < 40]  # steps of 2 s: before the onset
    assert localize_straggler(run.graph, before) == []


def test_replay_keeps_steps_of_every_member_however_large_the_job():
    ranks = 16_384
    place = {r: (f"n{r // 8}", r % 8) for r in range(ranks)}
    comms = {f"t{i}": (CommKind.TP, list(range(i * 8, i * 8 + 8))) for i in range(ranks // 8)}
    comms |= {f"d{g}": (CommKind.DP, list(range(g, ranks, 8))) for g in range(8)}
    big = build_comm_graph(topology(place, comms))
    assert straggler_window(big) == STRAGGLER_STEPS * 2 * ranks
    assert straggler_window(GRAPH) == STRAGGLER_WINDOW  # small jobs: the fixed floor
