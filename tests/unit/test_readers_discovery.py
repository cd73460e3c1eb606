"""Placement of ranks from what a scheduler says about a job (pure functions)."""

from __future__ import annotations

from ingest.readers.discovery import (
    FIELD,
    DiscoveryError,
    placements,
    slurm_gpus_per_node,
    slurm_launch_text,
)


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


def test_without_the_batch_script_the_command_or_its_readable_file_is_read():
    def refused(argv: list[str]) -> str:
        raise DiscoveryError(f"{' '.join(argv)}: Access/permission denied")

    # an `scontrol show job -o` line of Slurm 22.05, cut to the fields around Command
    line = "JobId=7 NumNodes=1 Command=/home/a/train.sh WorkDir=/home/a StdErr=/home/a/o"
    files = {"/home/a/train.sh": "torchrun pretrain_gpt.py --tensor-model-parallel-size 2\n"}
    text, unread = slurm_launch_text(refused, "7", line, files.get)
    assert "--tensor-model-parallel-size 2" in text and unread == []
    text, unread = slurm_launch_text(refused, "7", line, {}.get)
    assert text == "/home/a/train.sh"
    assert unread and "permission denied" in unread[0] and "Command only" in unread[0]
