"""Flight Recorder dumps, fr_trace analyses and NCCL RAS output -> CollectiveProgress.

The gloo dumps in tests/fixtures/readers/fr_gloo_hang/ are real (record_fr_dumps.py, PyTorch
2.15): rank 3 stopped before its TP all-reduce of step 3. The fr_trace and RAS texts are the
shared real samples (../shared/data/real_samples/README.md says where they come from); the RAS
JSON fixtures are derived from NCCL's JSON writer (no captured run exists, see
tests/fixtures/readers/ras_json_from_source.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.graph import build_comm_graph
from diagnosis.localize.hang import find_stalls, localize_hang
from ingest.readers.flight_recorder import (
    DumpContext,
    analysis_progress,
    dump_progress,
    load_dump,
    parse_fr_analysis,
    read_dump_dir,
)
from ingest.readers.nccl_ras import (
    RasFormatError,
    global_ranks,
    looks_like_ras_json,
    parse_ras,
    parse_ras_json,
    ras_communicators,
    ras_json_progress,
    ras_progress,
)
from ingest.schema import (
    CollectiveState,
    CommKind,
    Communicator,
    JobTopology,
    RankPlacement,
)
from tests.readers_fixtures import FIXTURES, REAL_SAMPLES

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GLOO = FIXTURES / "fr_gloo_hang"


def _topology(comms: dict[str, tuple[CommKind, list[int]]], world: int, job: str = "j1"):
    return JobTopology(
        ts=T0,
        job_id=job,
        world_size=world,
        ranks=[RankPlacement(rank=r, node=f"n{r // 8}", gpu=r % 8) for r in range(world)],
        communicators=[Communicator(comm=c, kind=k, ranks=rs) for c, (k, rs) in comms.items()],
    )


GLOO_TOPOLOGY = {
    "0": (CommKind.WORLD, [0, 1, 2, 3]),
    "1": (CommKind.TP, [0, 1]),
    "2": (CommKind.TP, [2, 3]),
    "3": (CommKind.DP, [0, 2]),
    "4": (CommKind.DP, [1, 3]),
}


def test_gloo_dump_states_from_retired_and_pg_status():
    dump = load_dump((GLOO / "nccl_trace_rank_2").read_bytes())
    progress = dump_progress(dump, _ctx(2), T0)
    assert [(p.comm, p.seq, p.state) for p in progress] == [
        ("2", 1, CollectiveState.COMPLETED),
        ("3", 1, CollectiveState.COMPLETED),
        ("2", 2, CollectiveState.COMPLETED),
        ("3", 2, CollectiveState.COMPLETED),
        ("2", 3, CollectiveState.SCHEDULED),  # waiting in TP for rank 3
    ]
    assert {p.op for p in progress} == {"all_reduce"} and progress[0].bytes == 16
    assert progress[0].dtype == "Float" and progress[0].timeout_ms == 1_800_000
    assert progress[-1].time_created is not None and progress[-1].reporter == "flight_recorder"


def _ctx(rank: int) -> DumpContext:
    return DumpContext("j1", rank, f"n{rank}")


def test_dump_dir_of_a_hung_gloo_job_localizes_the_rank_that_never_joined():
    progress = list(read_dump_dir(GLOO, "j1"))
    assert {p.rank for p in progress} == {0, 1, 2, 3}
    created = max(p.time_created for p in progress if p.time_created)
    graph = build_comm_graph(_topology(GLOO_TOPOLOGY, 4))
    now = created + timedelta(seconds=60)
    stalls = {s.comm: s for s in find_stalls(graph, progress, now)}
    assert stalls["2"].missing == (3,) and stalls["2"].waiting == (2,)
    assert stalls["4"].missing == (3,)  # rank 1 waits on 3 in DP
    (top, *_) = localize_hang(graph, progress, now)
    assert (top.rank, top.node, top.gpu) == (3, "n0", 3)


def test_fr_trace_analysis_names_missing_ranks_and_they_map_to_gpus():
    text = (
        REAL_SAMPLES / "flight_recorder_fr_trace_missing_ranks_pytorch_pr140969.txt"
    ).read_text()
    (report,) = parse_fr_analysis(text)
    assert (report.seq, report.group, report.op) == (31117, "0", "all_reduce")
    assert report.missing == {3, 4, 5, 6, 7} and report.expected == set(range(8))
    assert report.state == CollectiveState.SCHEDULED
    progress = analysis_progress(report, "j1", T0)
    assert [p.rank for p in progress] == [0, 1, 2]
    topology = _topology({"0": (CommKind.WORLD, list(range(8)))}, 8)
    graph = build_comm_graph(topology)
    (stall,) = find_stalls(graph, progress, T0 + timedelta(seconds=60))
    assert stall.missing == (3, 4, 5, 6, 7)
    placed = {p.rank: (p.node, p.gpu) for p in topology.ranks}
    assert [placed[r] for r in stall.missing] == [("n0", g) for g in range(3, 8)]
    (top, *_) = localize_hang(graph, progress, T0 + timedelta(seconds=60))
    assert top.node == "n0"  # five GPUs of one node missing: the node is the suspect


def test_nccl_ras_mismatch_lists_the_ranks_ahead_with_their_gpus():
    report = parse_ras((REAL_SAMPLES / "nccl_ras_mismatch_nccl_issue1911.txt").read_text())
    assert report.nccl_version == "2.26.2"
    (problem,) = report.problems
    assert (problem.comm_hash, problem.status, problem.op) == (
        "fa93daea854b060b",
        "MISMATCH",
        "AllGather",
    )
    assert problem.counts == {640: 30, 641: 2} and problem.listed_at == 641
    assert [(r.rank, r.gpu, r.pid, r.node) for r in problem.ranks] == [
        (12, 4, 323032, "10.137.190.124"),
        (13, 5, 323033, "10.137.190.124"),
    ]
    progress = ras_progress(report, "j1", T0)
    assert [(p.rank, p.seq, p.op, p.node, p.state) for p in progress] == [
        (12, 641, "allgather", "10.137.190.124", CollectiveState.STARTED),
        (13, 641, "allgather", "10.137.190.124", CollectiveState.STARTED),
    ]
    graph = build_comm_graph(_topology({"fa93daea854b060b": (CommKind.WORLD, list(range(32)))}, 32))
    (stall,) = find_stalls(graph, progress, T0 + timedelta(seconds=60))
    assert stall.waiting == (12, 13) and len(stall.missing) == 30


# ncclras -f json: fixtures derived from NCCL's JSON writer (ras_json_from_source.py says how)
RAS_STALL = FIXTURES / "nccl_ras_json_stall.txt"
RAS_DEAD = FIXTURES / "nccl_ras_json_dead.txt"
TP45 = "1c4f0051d3a70002"  # the TP communicator of ranks 4 and 5, as the text output prints it


def _ras_graph(status):
    comms = ras_communicators(status)
    ranks = {
        (r.host, r.cuda_dev): g
        for c in status.comms
        for r in c.ranks + c.missing
        if (g := global_ranks(status).get((r.host, r.pid, r.cuda_dev))) is not None
    }
    topology = JobTopology(
        ts=T0,
        job_id="j1",
        world_size=8,
        ranks=[RankPlacement(rank=g, node=h, gpu=d) for (h, d), g in sorted(ranks.items())],
        communicators=comms,
    )
    return build_comm_graph(topology)


def test_ras_json_is_recognised_and_parsed_with_comm_ranks_mapped_to_global():
    text = RAS_STALL.read_text()
    assert looks_like_ras_json(text) and not looks_like_ras_json(
        (REAL_SAMPLES / "nccl_ras_mismatch_nccl_issue1911.txt").read_text()
    )
    status = parse_ras_json(text)
    assert (status.nccl_version, status.timestamp, len(status.comms)) == (
        "2.29.7",
        "2026-11-30 21:14:05",
        13,
    )
    world = status.comms[0]
    assert (world.comm_hash, world.size, len(world.ranks)) == ("7f3a9c21d04e5b18", 8, 8)
    tp = next(c for c in status.comms if c.comm_hash == TP45)
    assert [(r.rank, r.host, r.cuda_dev, r.counts["AllReduce"]) for r in tp.ranks] == [
        (0, "10.0.0.2", 0, 4813),
        (1, "10.0.0.2", 1, 4812),
    ]
    by_hash = {c.comm: c.ranks for c in ras_communicators(status)}
    assert by_hash[TP45] == [4, 5] and by_hash["7f3a9c21d04e5b18"] == list(range(8))


def test_ras_json_stall_names_the_rank_that_never_launched_and_its_gpu():
    status = parse_ras_json(RAS_STALL.read_text())
    progress = ras_json_progress(status, "j1", T0)
    assert [(p.rank, p.comm, p.op, p.seq, p.state, p.node) for p in progress] == [
        (4, TP45, "allreduce", 6016, CollectiveState.STARTED, "10.0.0.2"),
        (5, TP45, "allreduce", 6015, CollectiveState.COMPLETED, "10.0.0.2"),
    ]  # healthy communicators say nothing
    graph = _ras_graph(status)
    (stall,) = find_stalls(graph, progress, T0 + timedelta(seconds=60))
    assert (stall.comm, stall.waiting, stall.missing) == (TP45, (4,), (5,))
    (top, *_) = localize_hang(graph, progress, T0 + timedelta(seconds=60))
    assert (top.rank, top.node, top.gpu) == (5, "10.0.0.2", 1)


def test_ras_json_dead_process_is_missing_from_every_communicator_it_was_in():
    status = parse_ras_json(RAS_DEAD.read_text())
    world = status.comms[0]
    assert [(r.rank, r.unresponsive, r.dead) for r in world.missing] == [(6, True, True)]
    progress = ras_json_progress(status, "j1", T0)
    assert 6 not in {p.rank for p in progress}
    assert {p.state for p in progress} == {CollectiveState.STARTED}
    graph = _ras_graph(status)
    stalls = find_stalls(graph, progress, T0 + timedelta(seconds=60))
    assert {s.missing for s in stalls} == {(6,)} and len(stalls) == 3  # world, TP, DP
    (top, *_) = localize_hang(graph, progress, T0 + timedelta(seconds=60))
    assert (top.rank, top.node, top.gpu) == (6, "10.0.0.2", 2)


def test_ras_json_rejects_what_is_not_its_output():
    for bad in (
        "no document here\n",
        '{\n  "nccl_version": 1\n}\n',
        "{\n  truncated",
        '{"communicators": [{"hash": "0x1", "ranks": [7]}]}\n',
        '{"communicators": [{"hash": "0x1", "size": "eight"}]}\n',
        '{"communicators": [{"hash": "zz"}]}\n',
    ):
        with pytest.raises(RasFormatError):
            parse_ras_json(bad)
