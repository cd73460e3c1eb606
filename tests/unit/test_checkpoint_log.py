"""Finished checkpoint saves in training logs: real lines, the twin's lines, and non-saves."""

from __future__ import annotations

import pytest

from ingest.readers.checkpoint_log import NEEDLES, parse_checkpoint_saved
from ingest.schema import LogLine
from sim.logtext import megatron_checkpoint
from sim.scenario import parse_scenario
from sim.twin import Twin
from tests.readers_fixtures import log_blocks

BLOCKS = log_blocks("checkpoint_log_lines.txt")

# label -> (lines that report a finished save, (framework, iteration) of the first)
EXPECTED = {
    "megatron-lm": (1, ("megatron", 100)),
    "megatron-lm-sft": (1, ("megatron", 35)),
    "megatron-lm-k8s": (1, ("megatron", 40)),
    # DeepSpeed's per-rank "ready now" lines are no proof: only Megatron's closing line counts
    "megatron-deepspeed": (1, ("megatron", 2500)),
    "torchtitan": (1, ("torchtitan", None)),
    "torchtitan-old": (1, ("torchtitan", None)),
}


def test_every_fixture_block_is_checked():
    assert set(BLOCKS) == set(EXPECTED)


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_only_the_end_of_a_save_counts(label):
    lines = BLOCKS[label]
    found = [(i, parse_checkpoint_saved(line)) for i, line in enumerate(lines)]
    saves = [(i, s) for i, s in found if s is not None]
    count, (framework, iteration) = EXPECTED[label]
    assert len(saves) == count
    first = saves[0][1]
    assert (first.framework, first.iteration) == (framework, iteration)
    start = next(
        (i for i, line in enumerate(lines) if "saving" in line.lower() and "saved" not in line), -1
    )
    assert start < saves[0][0]  # the start line came first and did not count


def test_megatron_path_is_read_without_the_parallel_suffix():
    (line,) = [x for x in BLOCKS["megatron-lm-sft"] if "successfully" in x]
    saved = parse_checkpoint_saved(line)
    assert saved is not None
    assert (
        saved.path
        == "/root/task301_qwen_aime_v11_30b_full_sft_training_s1/run_20260602T155725Z/checkpoints"
    )


def test_every_recognised_line_holds_a_prefilter_needle():
    for lines in BLOCKS.values():
        for line in lines:
            if parse_checkpoint_saved(line) is not None:
                assert any(n in line.lower() for n in NEEDLES), line


@pytest.mark.parametrize(
    "line",
    [
        "saving checkpoint at iteration     100 to /ckpt in torch_dist format",
        "[2023-08-15 07:22:37,720] [INFO] [torch_checkpoint_engine.py:33:commit] "
        "[Torch] Checkpoint global_step2500 is ready now!",
        " [2024-04-06 02:59:36] iteration       43/     100 | consumed samples:         5504 |",
        "OSError: [Errno 28] No space left on device: '/ckpt/iter_0000100'",
        "",
    ],
)
def test_other_lines_are_not_saves(line):
    assert parse_checkpoint_saved(line) is None


def test_twin_lines_parse_as_the_real_ones():
    start, end = megatron_checkpoint(1200, "job-a", tp=4, pp=2)
    assert parse_checkpoint_saved(start) is None
    saved = parse_checkpoint_saved(end)
    assert saved is not None and (saved.iteration, saved.path) == (1200, "/checkpoints/job-a")


def test_twin_saves_every_save_interval_steps_from_rank_0s_node():
    scenario = parse_scenario(
        {
            "seed": 3,
            "cluster": {"nodes": 4, "gpus_per_node": 8},
            "jobs": [{"id": "j", "tp": 8, "dp": 4, "step_time_s": 1.0, "save_interval": 10}],
            "duration_s": 45,
        }
    )
    events: list = []
    Twin(scenario, events.append).run()
    logs = [e for e in events if isinstance(e, LogLine)]
    saves = [(e, parse_checkpoint_saved(e.line)) for e in logs]
    saves = [(e, s) for e, s in saves if s is not None]
    assert [s.iteration for _, s in saves] == [10, 20, 30, 40][: len(saves)]
    assert len(saves) >= 3
    assert {(e.node, e.rank, e.job_id) for e, _ in saves} == {(scenario.node_name(0), 0, "j")}
    steps = [e for e in logs if "iteration" in e.line and "consumed samples" in e.line]
    assert max(e.ts for e, _ in saves) <= max(e.ts for e in steps)
