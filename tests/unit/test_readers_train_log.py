"""Training-log step parsers on real Megatron-LM, Megatron-DeepSpeed, DeepSpeed, torchtitan."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from ingest.readers.train_log import TrainLogParser, parse_megatron
from tests.readers_fixtures import log_blocks, real_log

BLOCKS = log_blocks()


def _steps(lines, **kw):
    return list(TrainLogParser("j1", **kw).feed_lines(lines))


def test_megatron_lm_current_format():
    a, b = _steps(BLOCKS["megatron-lm"], peak_tflops=989.0)
    assert (a.step, a.ts) == (43, datetime(2024, 4, 6, 2, 59, 36, tzinfo=UTC))
    assert a.loss == pytest.approx(1.825991) and a.grad_norm == pytest.approx(1.426)
    assert a.step_time_s == pytest.approx(5.4449) and a.lr == pytest.approx(8.6e-6)
    assert a.loss_scale == 1.0 and not a.skipped
    assert a.mfu == pytest.approx(239.8 / 989.0)
    assert b.step == 44 and b.grad_norm == pytest.approx(1.327)


def test_megatron_llm_skipped_iteration_after_a_nan_grad_norm():
    a, b = _steps(real_log("nan-loss", "Bad grad_norm"))
    assert (a.step, a.skipped, a.grad_norm) == (3633, False, pytest.approx(0.794))
    assert (b.step, b.skipped, b.grad_norm, b.loss) == (3634, True, None, None)
    assert b.step_time_s == pytest.approx(8.295)


def test_a_count_that_is_no_finite_number_is_left_at_zero():
    # (a mangled line the property test drew: `number of skipped iterations:INF` raised
    # OverflowError from int(inf))
    line = (
        "iteration    31217/  115311 | consumed samples:     47774640 | lm loss: 2.241558E+00 "
        "| grad norm: 15.886 | number of skipped iterations:INF | number of nan iterations: nan"
    )
    step = parse_megatron(line)
    assert step is not None and step.step == 31217
    assert (step.skipped_iterations, step.nan_iterations, step.skipped) == (0, 0, False)
    assert step.grad_norm == pytest.approx(15.886)


def test_bloom_megatron_deepspeed_seconds_tokens_and_tflops():
    steps = _steps(real_log("loss-spike", "31219"), peak_tflops=312.0)
    assert [s.step for s in steps] == [31217, 31218, 31219]
    spike = steps[2]
    assert spike.loss == pytest.approx(5.098124) and spike.grad_norm == pytest.approx(960.351)
    assert spike.step_time_s == pytest.approx(106.36)
    assert spike.tokens_per_s == pytest.approx(19.256 * 2048, rel=1e-3)  # samples/s x seq len
    assert spike.mfu == pytest.approx(147.43 / 312.0)


def test_terminal_wrapped_megatron_lines_are_joined():
    steps = _steps(real_log("perf-degradation-slow-gpu", "42783"))
    assert [s.step for s in steps] == [42782, 42783]
    assert steps[1].step_time_s == pytest.approx(110.17) and steps[1].lr == pytest.approx(4.475e-5)


def test_megatron_deepspeed_gpt_line_with_approx_flops():
    steps = _steps(BLOCKS["megatron-deepspeed-gpt"], peak_tflops=312.0)
    (mega,) = [s for s in steps if s.loss is not None]
    assert mega.step == 34 and mega.loss == pytest.approx(11.18665)
    assert mega.mfu == pytest.approx(112.9 / 312.0)
    assert [s.step for s in steps] == [34, 35]  # and DeepSpeed's own step=35 line


def test_deepspeed_steps_skipped_counter_and_step_time_from_timestamps():
    a, b = _steps(BLOCKS["deepspeed"])
    assert (a.step, a.lr, a.skipped) == (40, pytest.approx(5e-5), False)
    assert (b.step, b.skipped) == (50, False)
    assert b.step_time_s == pytest.approx((15.145) / 10, rel=1e-3)
    parser = TrainLogParser("j1")
    parser.feed(
        "[2021-11-26 03:07:00,000] [INFO] [logging.py:69:log_dist] [Rank 0] step=1990, "
        "skipped=1990, lr=[0.001, 0.001], mom=[0.0, 0.0]"
    )
    (grew,) = parser.feed_lines(BLOCKS["deepspeed-skipping"])
    assert (grew.step, grew.skipped) == (2000, True)  # behind a tqdm bar on the same line


def test_torchtitan_lines_with_rank_prefix_and_colors():
    a, b = _steps(BLOCKS["torchtitan"])
    assert (a.step, a.loss, a.grad_norm) == (14, pytest.approx(3.24405), pytest.approx(0.8319))
    assert a.tokens_per_s == 7282 and a.mfu == pytest.approx(0.0017)
    assert a.ts == datetime(2026, 5, 18, 16, 4, 46, 338000, tzinfo=UTC)
    assert b.step_time_s == pytest.approx(1.118)
    # torchtitan colors each field on a terminal (its Color class); the same line, colored
    colored = (
        "\x1b[31mstep:  4  \x1b[32mloss:  7.62585  \x1b[33mgrad_norm: 26.6250  "
        "\x1b[38;2;180;60;0mmemory: 66.91GiB(37.51%)  \x1b[34mtps: 10,050  "
        "\x1b[36mtflops: 314.71  \x1b[35mmfu: 13.99%\x1b[39m"
    )
    (c,) = _steps([f"[titan] 2026-02-24 19:46:17,508 - root - INFO - {colored}"])
    (d, _) = _steps(BLOCKS["torchtitan-moe"])
    assert (c.step, c.loss, c.tokens_per_s, c.mfu) == (d.step, d.loss, 10050, pytest.approx(0.1399))


def test_nan_loss_is_kept_and_other_lines_are_ignored():
    (s,) = _steps(
        [
            "[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  9  loss:    nan  "
            "memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%",
            "NCCL INFO Bootstrap : Using eth0",
            "step: 3 of warmup",
        ]
    )
    assert math.isnan(s.loss)


def test_one_megatron_parser_counts_nan_and_skipped_steps_and_leaves_bad_numbers_out():
    line = (
        " iteration      120/  500000 | consumed samples: 61440 | elapsed time per iteration (ms):"
        " n/a | learning rate: 1.0E-04 | lm loss: 2.5E+00 | loss scale: 65536.0 | grad norm: -- |"
        " number of skipped iterations:   2 | number of nan iterations:   1 |"
    )
    parsed = parse_megatron(line)
    assert parsed is not None and parsed.step == 120
    assert (parsed.skipped_iterations, parsed.nan_iterations, parsed.skipped) == (2, 1, True)
    assert parsed.loss == pytest.approx(2.5) and parsed.loss_scale == 65536.0
    assert parsed.step_time_s is None and parsed.grad_norm is None  # not numbers: left out
    (step,) = _steps([line])  # the reader takes the same line without an error
    assert step.step == 120 and step.skipped and step.grad_norm is None
