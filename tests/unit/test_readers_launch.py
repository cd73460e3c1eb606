"""Parallel groups from launch commands (pure functions).

Expected groups are the ones the frameworks' own sources document: Megatron-LM's
``initialize_model_parallel`` docstring (16 GPUs, TP=2, PP=4; 8 GPUs, TP=4, CP=2), torchtitan's
DeviceMesh ``[pp, dp_replicate, dp_shard, cp, tp]`` and DeepSpeed's ``[pipe, data]`` topology.
"""

from __future__ import annotations

import pytest

from ingest.readers.launch import (
    LayoutError,
    describe,
    groups_along,
    layout_groups,
    read_launch,
    resolve,
)
from ingest.schema import CommKind
from tests.readers_fixtures import REPO

MEGATRON_SCRIPT = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=8
# TP=99 in a comment is not an assignment
export TP=2
PP="4"
GPT_ARGS=(
    --tensor-model-parallel-size ${TP}
    --pipeline-model-parallel-size $PP
    --num-layers 24
)
srun torchrun --nproc_per_node=8 --nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID \\
    pretrain_gpt.py "${GPT_ARGS[@]}" --micro-batch-size 1
"""


def _groups(comms, kind):
    return [c.ranks for c in comms if c.kind == kind]


def test_megatron_groups_are_the_ones_its_docstring_lists():
    launch = read_launch(MEGATRON_SCRIPT, {"SLURM_NNODES": "2"})
    assert (launch.framework, launch.sizes, launch.nproc_per_node) == (
        "megatron",
        {"tp": 2, "pp": 4},
        8,
    )
    assert launch.node_rank == "$SLURM_NODEID" and not launch.problems
    layout, comms = layout_groups(launch, 16)
    assert (layout.tp, layout.pp, layout.dp, layout.cp, layout.ep) == (2, 4, 2, 1, 1)
    assert _groups(comms, CommKind.TP) == [[2 * i, 2 * i + 1] for i in range(8)]
    assert _groups(comms, CommKind.DP) == [
        [0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]
    ]  # fmt: skip
    assert _groups(comms, CommKind.PP) == [
        [0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]
    ]  # fmt: skip
    assert len({c.comm for c in comms}) == len(comms)
    assert "tp=2 pp=4 dp=2" in describe(launch, layout)


def test_megatron_context_and_expert_groups():
    launch = read_launch(
        "torchrun pretrain_gpt.py --tensor-model-parallel-size 4 --context-parallel-size=2"
    )
    _, comms = layout_groups(launch, 8)
    assert _groups(comms, CommKind.CP) == [[0, 4], [1, 5], [2, 6], [3, 7]]  # the docstring's
    moe = read_launch(
        "pretrain_gpt.py --tensor-model-parallel-size 2 --context-parallel-size 2"
        " --expert-model-parallel-size 4"
    )
    layout, comms = layout_groups(moe, 16)
    assert (layout.dp, layout.ep) == (4, 4)
    # experts fold cp into their data-parallel dimension: grid tp-ep-dp-pp of 2 x 4 x 2 x 1
    assert _groups(comms, CommKind.EP) == [
        [0, 2, 4, 6],
        [1, 3, 5, 7],
        [8, 10, 12, 14],
        [9, 11, 13, 15],
    ]
    etp = read_launch(
        "pretrain_gpt.py --tensor-model-parallel-size 2 --expert-model-parallel-size 2"
        " --expert-tensor-parallel-size 1"
    )
    _, comms = layout_groups(etp, 4)
    assert _groups(comms, CommKind.EP) == [[0, 1], [2, 3]]


def test_megatron_tp_pp_dp_mapping_puts_data_parallel_last():
    launch = read_launch(
        "pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
        " --use-tp-pp-dp-mapping"
    )
    assert launch.order == "tp-cp-ep-pp-dp"
    _, comms = layout_groups(launch, 8)
    assert _groups(comms, CommKind.PP) == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert _groups(comms, CommKind.DP) == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_torchtitan_mesh_from_flags_and_toml_config():
    config = """
[job]
dump_folder = "./outputs"
[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 4
pipeline_parallel_degree = 2
"""
    files = {"/shared/llama3_8b.toml": config}
    script = (
        "torchrun --nproc_per_node=4 -m torchtitan.train --job.config_file /shared/llama3_8b.toml"
        " --parallelism.tensor_parallel_degree 2"
    )
    launch = read_launch(script, read_text=files.get)
    assert (launch.framework, launch.sizes) == (
        "torchtitan",
        {"dp_replicate": 1, "dp_shard": -1, "tp": 2, "pp": 2},
    )
    layout, comms = layout_groups(launch, 8)  # dp_shard = 8 / (1 x 1 x 2 x 2) = 2
    assert (layout.tp, layout.pp, layout.dp) == (2, 2, 2)
    assert _groups(comms, CommKind.TP) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert _groups(comms, CommKind.DP) == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert _groups(comms, CommKind.PP) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    unread = read_launch(script)
    with pytest.raises(LayoutError, match="could not be read"):
        layout_groups(unread, 8)


def test_deepspeed_pipeline_puts_data_parallel_fastest():
    launch = read_launch(
        "deepspeed --num_gpus 4 train.py --deepspeed -p 2 --pipeline-parallel-size 2"
    )
    assert (launch.framework, launch.nproc_per_node) == ("deepspeed", 4)
    layout, comms = layout_groups(launch, 8)
    assert (layout.pp, layout.dp) == (2, 4)
    assert _groups(comms, CommKind.DP) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert _groups(comms, CommKind.PP) == [[0, 4], [1, 5], [2, 6], [3, 7]]


@pytest.mark.parametrize(
    ("script", "world", "reason"),
    [
        ("python train.py --lr 1e-4", 8, "no Megatron-LM, torchtitan or DeepSpeed"),
        ("pretrain_gpt.py --tensor-model-parallel-size $((2*TP))", 8, "not a number"),
        ("pretrain_gpt.py --tensor-model-parallel-size $TP", 8, "not a number"),
        (
            "pretrain_gpt.py --tensor-model-parallel-size 2\n"
            "pretrain_gpt.py --tensor-model-parallel-size 4",
            8,
            "different values",
        ),
        ("pretrain_gpt.py --tensor-model-parallel-size 3", 8, "do not divide"),
        ("pretrain_gpt.py --tensor-model-parallel-size 0", 8, "at least 1"),
        ("pretrain_gpt.py --tensor-model-parallel-size 16", 8, "do not divide"),
        ("-m torchtitan.train --parallelism.data_parallel_shard_degree 3", 8, "!= 8 ranks"),
        ("-m torchtitan.train --parallelism.expert_parallel_degree 2", 8, "expert"),
    ],
)
def test_bad_or_absent_arguments_say_why(script, world, reason):
    with pytest.raises(LayoutError, match=reason):
        layout_groups(read_launch(script), world)


def test_shell_values_resolve_through_variables_and_defaults():
    assert resolve("${TP:-8}", {}) == "8"
    assert resolve("$A", {"A": "$B", "B": "'4'"}) == "4"
    assert resolve("$UNSET", {}) == "$UNSET"
    assert groups_along([("a", 2), ("b", 3)], "b") == [[0, 2, 4], [1, 3, 5]]


def test_the_documented_batch_script_is_what_discovery_reads():
    section = (REPO / "docs" / "connect.md").read_text().split("# Connect your training job")[1]
    script = section.split("```sh\n")[1].split("```")[0]
    launch = read_launch(script, {"SLURM_NNODES": "4"})
    assert (launch.framework, launch.sizes, launch.nproc_per_node) == (
        "megatron",
        {"tp": 8, "pp": 4},
        8,
    )
    assert launch.node_rank == "$SLURM_NODEID" and not launch.problems
    layout, comms = layout_groups(launch, 4 * 8)
    assert (layout.tp, layout.pp, layout.dp) == (8, 4, 1)
    assert _groups(comms, CommKind.TP)[1] == list(range(8, 16))  # one TP group per node
