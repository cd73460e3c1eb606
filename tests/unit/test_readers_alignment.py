"""Readers' communicators renamed to a discovered topology's groups, by their member ranks.

The gloo dumps are the real hang of tests/fixtures/readers/fr_gloo_hang (TP {0,1} {2,3}, DP
{0,2} {1,3}: Megatron's layout for TP=2 on 4 ranks); the RAS JSON is derived from NCCL's
JSON writer (tests/fixtures/readers/ras_json_from_source.py).
"""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta

from diagnosis.graph import build_comm_graph
from diagnosis.localize.hang import find_stalls, localize_hang
from ingest.readers.alignment import align_progress, comm_aliases, dump_members
from ingest.readers.discovery import placements
from ingest.readers.flight_recorder import read_dump_dir
from ingest.readers.launch import layout_groups, read_launch
from ingest.readers.nccl_ras import parse_ras_json, ras_communicators, ras_json_progress
from ingest.schema import CommKind, Communicator, JobTopology
from tests.readers_fixtures import FIXTURES

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GLOO = FIXTURES / "fr_gloo_hang"


def _discovered(script: str, nodes: list[str], per_node: int) -> JobTopology:
    ranks = placements(nodes, per_node, 0)
    layout, comms = layout_groups(read_launch(script), len(ranks))
    world = Communicator(comm="0", kind=CommKind.WORLD, ranks=list(range(len(ranks))))
    return JobTopology(
        ts=T0, job_id="slurm-7", world_size=len(ranks), layout=layout, ranks=ranks,
        communicators=[world, *comms],
    )  # fmt: skip


def test_flight_recorder_groups_become_the_discovered_megatron_groups():
    dumps = {r: pickle.loads((GLOO / f"nccl_trace_rank_{r}").read_bytes()) for r in range(4)}
    members = dump_members(dumps)
    assert members == {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}
    topo = _discovered("torchrun pretrain_gpt.py --tensor-model-parallel-size 2", ["vm"], 4)
    assert comm_aliases(members, topo) == {"1": "tp-0", "2": "tp-1", "3": "dp-0", "4": "dp-1"}
    progress = align_progress(read_dump_dir(GLOO, "j"), members, topo)
    assert {p.comm for p in progress} == {"tp-0", "tp-1", "dp-0", "dp-1"}
    assert {p.job_id for p in progress} == {"slurm-7"} and {p.node for p in progress} == {"vm"}
    assert len({p.id for p in progress}) == len(progress)
    now = max(p.time_created for p in progress if p.time_created) + timedelta(seconds=60)
    graph = build_comm_graph(topo)
    stalls = {s.comm: s.missing for s in find_stalls(graph, progress, now)}
    assert stalls == {"tp-1": (3,), "dp-1": (3,), "dp-0": (2,)}  # rank 2 waits in tp-1 on 3
    (top, *_) = localize_hang(graph, progress, now)
    assert (top.rank, top.node, top.gpu) == (3, "vm", 3)


def test_ras_json_communicators_and_hosts_become_the_discovered_ones():
    status = parse_ras_json((FIXTURES / "nccl_ras_json_stall.txt").read_text())
    members = {c.comm: c.ranks for c in ras_communicators(status)}
    script = (
        "srun torchrun --nproc-per-node=4 pretrain_gpt.py --tensor-model-parallel-size 2"
        " --pipeline-model-parallel-size 2"
    )
    topo = _discovered(script, ["gpu-a", "gpu-b"], 4)
    aliases = comm_aliases(members, topo)
    assert len(aliases) == 13  # the world and every TP, DP and PP group
    assert aliases["7f3a9c21d04e5b18"] == "0" and aliases["1c4f0051d3a70002"] == "tp-2"
    progress = align_progress(ras_json_progress(status, "j", T0), members, topo)
    assert [(p.rank, p.comm, p.node) for p in progress] == [
        (4, "tp-2", "gpu-b"),
        (5, "tp-2", "gpu-b"),
    ]
    (top, *_) = localize_hang(build_comm_graph(topo), progress, T0 + timedelta(seconds=60))
    assert (top.rank, top.node, top.gpu) == (5, "gpu-b", 1)


def test_communicators_the_topology_lacks_keep_their_ids():
    topo = _discovered("python train.py --tensor-model-parallel-size 1", ["vm"], 2)
    assert comm_aliases({"9": [0], "0": [0, 1]}, topo) == {"0": "0"}
