"""Training frameworks' progress lines (diagnosis/explain/progress.py, issue 21): the step time
or throughput each framework prints, read from the field that carries it, feeds the generic
slowdown check.

The lines are built from the frameworks' format strings (mmcv, detectron2, timm, DeepSpeed,
Keras, torchtitan, fairseq, OpenNMT, Paddle, NeMo, TensorFlow's hooks, Horovod's and
tf_cnn_benchmarks' benchmarks) with their figures filled in.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from diagnosis.explain.progress import step_seconds
from diagnosis.model import Category
from tests.explain_helpers import alarms, first

FORMATS: dict[str, Callable[[int, float], str]] = {
    "mmcv": lambda i, t: (
        f"Epoch [1][{i * 50}/7330]\tlr: 2.000e-02, eta: 1 day, 3:17:40, time: {t:.3f}, "
        f"data_time: 0.061, memory: 3525, loss: 1.1120"
    ),
    "detectron2": lambda i, t: (
        f" eta: 3:05:51  iter: {i * 20}  total_loss: 2.013  time: {t:.4f}  data_time: 0.0274  "
        "lr: 0.000400  max_mem: 2841M"
    ),
    "timm": lambda i, t: (
        f"Train: 0 [{i * 50:>4d}/1251 (  4%)]  Loss: 6.912 (6.93)  Time: {t:.3f}s,  "
        f"{256 / t:>7.2f}/s  (0.483s,  530.44/s)  LR: 1.000e-05  Data: 0.012 (0.035)"
    ),
    "deepspeed": lambda i, t: (
        f"epoch=0/micro_step={i * 50}/global_step={i * 50}, RunningAvgSamplesPerSec=245.73, "
        f"CurrSamplesPerSec={64 / t:.4f}, MemAllocated=4.21GB, MaxMemAllocated=9.87GB"
    ),
    "keras": lambda i, t: f"100/100 [==============================] - 15s {t * 1000:.0f}ms/step",
    "torchtitan": lambda i, t: (
        f"step: {i * 10}  loss: 7.2104  memory: 30.12GiB(38.06%)  tps: {int(8192 / t):,}  "
        "tflops: 301.45  mfu: 30.48%"
    ),
    "fairseq": lambda i, t: (
        f"| epoch 001:    {i * 100} / 1000 loss=9.5, wps={4096 / t:.1f}, ups=3.2, wall={i * 60}"
    ),
    "paddle": lambda i, t: (
        f"[Train][Epoch 1/10][Iter {i * 10}/500] lr: 0.01, loss: 0.5, batch_cost: {t:.5f} s, "
        f"reader_cost: 0.001 s, ips: {32 / t:.4f} samples/s"
    ),
    "nemo": lambda i, t: f"Epoch 0: global_step={i * 10} train_step_timing in s={t:.3f}",
    "tensorflow": lambda i, t: f"INFO:tensorflow:global_step/sec: {1 / t:.4f}",
    "horovod": lambda i, t: f"Iter #{i}: {64 / t:.1f} img/sec per GPU",
}
STEADY = [0.40, 0.41, 0.39, 0.40, 0.42, 0.40, 0.41, 0.40]
SLOWED = [0.40, 0.41, 0.39, 0.40, 0.42, 0.40, 0.95, 0.97]  # the last two steps over twice as long


def _log(name: str, times: list[float]) -> str:
    return "\n".join(FORMATS[name](i + 1, t) for i, t in enumerate(times))


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_frameworks_step_time_is_read(name: str) -> None:
    figure = step_seconds(FORMATS[name](3, 0.5))
    assert figure is not None, name
    assert figure.seconds > 0


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_steps_that_grow_and_stay_are_a_slowdown(name: str) -> None:
    found = first(_log(name, SLOWED))
    assert found is not None and found[:2] == (Category.STRAGGLER, "training.step_slowdown"), (
        name,
        found,
    )


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_steady_steps_and_one_slow_step_stay_silent(name: str) -> None:
    assert alarms(_log(name, STEADY)) == [], name
    checkpoint = [0.40, 0.41, 0.39, 0.40, 1.50, 0.40, 0.41, 0.40]  # one step saves a checkpoint
    assert alarms(_log(name, checkpoint)) == [], name


@pytest.mark.parametrize(
    "line",
    [
        "Epoch [1][50/7330]\teta: 1 day, 3:17:40, data_time: 0.061, memory: 3525",  # no time
        "| epoch 001 | valid on 'valid' subset | loss 9.1 | wall 1234 | train_wall 1200",
        "Test: [  10/100]  Time: 0.100 (0.120)  Loss: 1.0  Acc@1: 76.1",  # timm's validation
        "The ETA is about time: 12:00:01 tonight",
    ],
)
def test_fields_that_are_not_a_step_time_are_not_read(line: str) -> None:
    assert step_seconds(line) is None


def test_a_validation_loop_does_not_become_the_training_loops_history() -> None:
    train = [FORMATS["mmcv"](i, 0.85) for i in range(1, 4)]
    val = [
        f"Epoch(val) [1][{i * 50}/500]\teta: 0:00:10, time: 0.100, data_time: 0.01"
        for i in range(1, 11)
    ]
    after = [FORMATS["mmcv"](i, 0.86) for i in range(4, 7)]
    assert alarms("\n".join([*train, *val, *after])) == []
