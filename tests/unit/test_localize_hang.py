"""Hang localization: the rank everything waits on, found across communicators."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from diagnosis.graph import build_comm_graph
from diagnosis.localize import find_stalls, latest_records, localize_hang
from diagnosis.model import ComponentKind
from ingest.schema import CommKind
from tests.localize_builders import at, record, run_twin, topology

# Eight ranks on two hosts, scattered: TP pairs inside a host, DP across hosts.
PLACE = {r: (("gpu-b07", "gpu-a12")[r % 2], (r * 3) % 8) for r in range(8)}
COMMS = {
    "tp0": (CommKind.TP, [0, 2]),
    "tp1": (CommKind.TP, [1, 3]),
    "tp2": (CommKind.TP, [4, 6]),
    "tp3": (CommKind.TP, [5, 7]),
    "dpA": (CommKind.DP, [0, 1, 4, 5]),
    "dpB": (CommKind.DP, [2, 3, 6, 7]),
}
GRAPH = build_comm_graph(topology(PLACE, COMMS))
NOW = at(300)


def healthy(seqs: range = range(1, 6)) -> list:
    """Return every rank completing every collective of `seqs`."""
    return [
        record(r, c, k, start=k * 2.0, end=k * 2.0 + 0.5)
        for k in seqs
        for c, (_, members) in COMMS.items()
        for r in members
    ]


def stuck(rank: int, comm: str, seq: int = 6, start: float = 12.0, state: str = "started"):
    return record(rank, comm, seq, state, start=start)


def test_healthy_progress_has_no_stall_and_no_suspect():
    assert find_stalls(GRAPH, healthy(), NOW) == []
    assert localize_hang(GRAPH, healthy(), NOW) == []


def test_young_pending_collectives_are_in_flight_not_hung():
    progress = healthy() + [stuck(r, "dpA", start=290) for r in (0, 1, 4)]
    assert localize_hang(GRAPH, progress, NOW) == []
    assert localize_hang(GRAPH, progress, NOW, stall_after=timedelta(seconds=5))


def test_missing_member_of_one_communicator_is_the_root():
    progress = healthy() + [stuck(r, "dpA") for r in (0, 1, 4)]
    (suspect,) = localize_hang(GRAPH, progress, NOW)
    assert suspect.component is ComponentKind.GPU
    assert (suspect.rank, suspect.node, suspect.gpu) == (5, "gpu-a12", 7)
    assert suspect.score == 1.0
    assert suspect.explanation.startswith(
        "rank 5 (gpu-a12 GPU 7) has not joined all_reduce #6 on dpA"
    )
    assert "last completed #5" in suspect.explanation
    assert "3 ranks in 1 communicator wait on it" in suspect.explanation


def test_a_missing_member_that_waits_elsewhere_is_followed_to_the_root():
    # Rank 7 never arrives at tp3; rank 5 waits there, so it is missing in dpA, where 0, 1
    # and 4 wait; dpB waits on 7 directly.
    progress = healthy()
    progress += [stuck(5, "tp3")] + [stuck(r, "dpA") for r in (0, 1, 4)]
    progress += [stuck(r, "dpB") for r in (2, 3, 6)]
    (suspect,) = localize_hang(GRAPH, progress, NOW)
    assert suspect.rank == 7
    assert "7 ranks in 3 communicators wait on it" in suspect.explanation
    stalls = {s.comm: s for s in find_stalls(GRAPH, progress, NOW)}
    assert stalls["dpA"].missing == (5,)
    assert stalls["tp3"].waiting == (5,)


def test_an_enqueued_collective_counts_as_joined():
    progress = healthy() + [stuck(r, "dpA") for r in (0, 1, 4)]
    progress.append(stuck(5, "dpA", state="scheduled"))
    stall = find_stalls(GRAPH, progress, NOW)[0]
    assert stall.everyone_joined
    assert localize_hang(GRAPH, progress, NOW) == []  # all joined: a transport problem


def test_latest_view_ignores_old_records_duplicates_and_other_jobs():
    progress = healthy() + healthy(range(1, 3)) + [stuck(r, "dpA") for r in (0, 1, 4)]
    other = record(5, "dpA", 6, "started", start=12).model_copy(update={"job_id": "other"})
    latest = latest_records([*progress, other], GRAPH.job_id)
    assert latest[(5, "dpA")].seq == 5
    assert len(latest) == sum(len(m) for _, m in COMMS.values())
    assert localize_hang(GRAPH, [*progress, other], NOW)[0].rank == 5


def test_several_roots_on_one_host_point_at_the_host():
    progress = healthy() + [stuck(r, "dpA") for r in (0, 4)]  # 1 and 5 (gpu-a12) absent
    (suspect,) = localize_hang(GRAPH, progress, NOW)
    assert suspect.component is ComponentKind.NODE
    assert suspect.node == "gpu-a12"
    assert "2 ranks on gpu-a12 (GPUs 3, 7)" in suspect.explanation


def test_roots_on_different_hosts_share_the_score():
    progress = healthy() + [stuck(r, "dpA") for r in (4, 5)]  # 0 (gpu-b07), 1 (gpu-a12) absent
    suspects = localize_hang(GRAPH, progress, NOW)
    assert {(s.rank, s.node) for s in suspects} == {(0, "gpu-b07"), (1, "gpu-a12")}
    assert [s.score for s in suspects] == [0.5, 0.5]


def test_a_wait_cycle_blames_the_ranks_of_the_cycle():
    # A mismatched collective order: 0 waits on 2 (tp0), 2 on 6 (dpB), 6 on 4 (tp2), 4 on 0 (dpA).
    progress = healthy() + [stuck(0, "tp0"), stuck(6, "tp2")]
    progress += [stuck(r, "dpB") for r in (2, 3, 7)] + [stuck(r, "dpA") for r in (1, 4, 5)]
    (suspect,) = localize_hang(GRAPH, progress, NOW)
    assert suspect.component is ComponentKind.NODE
    assert suspect.node == "gpu-b07"
    assert "4 ranks on gpu-b07" in suspect.explanation
    assert "cycle" in suspect.explanation


# ---------------------------------------------------------------------- twin scenarios

HANGS: list[tuple[dict[str, Any], int, dict[str, Any]]] = [
    ({"id": "j", "tp": 8, "pp": 2, "dp": 4}, 13, {}),
    ({"id": "j", "tp": 4, "pp": 4, "dp": 4}, 37, {}),
    ({"id": "j", "tp": 2, "pp": 1, "dp": 32}, 50, {}),
    ({"id": "j", "tp": 1, "pp": 8, "dp": 8}, 27, {}),
    (
        {"id": "j", "tp": 8, "pp": 1, "dp": 4, "first_node": 4},
        21,
        {"other_jobs": [{"id": "side", "tp": 8, "dp": 4, "step_time_s": 3.0}]},
    ),
]


@pytest.mark.parametrize(("job", "rank", "extra"), HANGS)
def test_twin_hang_is_localized_to_the_hung_rank(job, rank, extra):
    run = run_twin(job, [{"kind": "hang", "job": "j", "rank": rank, "at_s": 60}], **extra)
    truth = run.truth[0]["component"]
    progress = run.progress()
    stalled_at = max(p.ts for p in progress)
    assert localize_hang(run.graph, progress, stalled_at + timedelta(seconds=5)) == []
    top = localize_hang(run.graph, progress, stalled_at + timedelta(seconds=120))[0]
    assert top.component is ComponentKind.GPU
    assert (top.rank, top.node, top.gpu) == (rank, truth["node"], truth["gpu"])
    assert top.score > 0.5
    waiting = re.search(r"; (\d+) ranks in \d+ communicators wait on it", top.explanation)
    assert waiting is not None
    assert int(waiting[1]) >= run.graph.world // 4


def test_twin_gpu_that_stops_answering_hangs_the_job_at_that_gpu():
    run = run_twin(
        {"id": "j", "tp": 8, "pp": 2, "dp": 4},
        [{"kind": "gsp_timeout", "node": 6, "gpu": 1, "at_s": 50}],
    )
    now = max(p.ts for p in run.progress()) + timedelta(minutes=2)
    top = localize_hang(run.graph, run.progress(), now)[0]
    assert (top.node, top.gpu) == ("node-0006", 1)


def test_twin_healthy_and_straggling_jobs_do_not_hang():
    for faults in ([], [{"kind": "straggler", "node": 2, "gpu": 4, "at_s": 30}]):
        run = run_twin({"id": "j", "tp": 8, "pp": 2, "dp": 4}, faults)
        now = max(p.ts for p in run.progress()) + timedelta(minutes=5)
        assert find_stalls(run.graph, run.progress(), now) == []
        assert localize_hang(run.graph, run.progress(), now) == []
