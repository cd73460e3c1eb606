"""Placement of ranks from what a scheduler says about a job (pure functions)."""

from __future__ import annotations

from ingest.readers.discovery import FIELD, placements, slurm_gpus_per_node


def _fields(line: str) -> dict[str, str]:
    return dict(FIELD.findall(line))


def test_gpus_per_node_from_slurm_job_fields():
    # field spellings of `scontrol show job -o` (Slurm 22.05): per-node GRES, else job TRES
    assert slurm_gpus_per_node(_fields("NumNodes=4 TresPerNode=gres:gpu:8")) == 8
    assert slurm_gpus_per_node(_fields("NumNodes=2 TresPerNode=gres:gpu:h100:4")) == 4
    assert slurm_gpus_per_node(_fields("NumNodes=2 AllocTRES=cpu=64,node=2,gres/gpu=16")) == 8
    assert slurm_gpus_per_node(_fields("NumNodes=1 TRES=cpu=2,mem=1M,node=1,billing=2")) == 0


def test_one_rank_per_gpu_in_node_order_else_tasks_spread():
    ranks = placements(["a", "b"], gpus_per_node=2, tasks=1)
    assert [(p.rank, p.node, p.gpu) for p in ranks] == [
        (0, "a", 0),
        (1, "a", 1),
        (2, "b", 0),
        (3, "b", 1),
    ]
    ranks = placements(["a", "b"], gpus_per_node=0, tasks=3)
    assert [(p.rank, p.node, p.gpu) for p in ranks] == [(0, "a", 0), (1, "a", 1), (2, "b", 0)]
