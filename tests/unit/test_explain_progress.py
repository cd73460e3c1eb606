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

from diagnosis.explain.progress import clock_of, clocked_steps, epoch_of, step_seconds
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
    "keras": lambda i, t: (
        f"100/100 [==============================] - 15s {t * 1000:.0f}ms/step - loss: 0.5012"
    ),
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
        "Epoch 1/20, Loss: 0.5000, Acc: 0.5200, Elapsed time: 121.50",  # a loop's own clock
        "[step 100] loss: 2.900 | time: 42.00",
        "313/313 [==============================] - 1s 2ms/step",  # Keras evaluate/predict
        "batch size   8: inference time: 0.0089 s, throughput: 898.9 img/s",
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


def _keras_epoch(ms: int) -> str:
    return f"291/291 [==============================] - 25s {ms}ms/step - loss: 0.2912"


@pytest.mark.parametrize(
    "text",
    [
        # Keras transfer learning: a frozen base, then a second fit with the base unfrozen
        "\n".join(
            [
                "Epoch 1/5",
                _keras_epoch(86),
                *(f"Epoch {e}/5\n{_keras_epoch(52)}" for e in (2, 3, 4, 5)),
            ]
            + [f"Epoch {e}/10\n{_keras_epoch(155)}" for e in (1, 2, 3)]
        ),
        # torchvision's MetricLogger: the first prints of each epoch carry the workers' start-up
        "\n".join(
            f"Epoch: [{epoch}]  [{i:>4d}/1563]  eta: 0:07:49  lr: 0.1  img/s: 106.7  "
            f"loss: 2.3000 (2.4000)  time: {t:.4f}  data: 0.0300  max mem: 10240"
            for epoch in (0, 1)
            for i, t in ((0, 3.5), (10, 0.6), (20, 0.3), (30, 0.3), (40, 0.3), (50, 0.3))
        ),
        # a benchmark's second model pasted after the first
        "\n".join(
            [
                f"Model: {model}\n"
                + "\n".join(f"Iter #{i}: {rate:.1f} img/sec per GPU" for i in range(6))
                for model, rate in (("resnet50", 345.2), ("resnet101", 201.7))
            ]
        ),
        # a rate of another unit (evaluation in it/s) inside a training stream of samples/s
        "\n".join(
            [
                f"step {s}00/3000 | loss 2.{9 - s}00 | lr 3.0e-04 | 812.{s} samples/s"
                for s in (1, 2, 3)
            ]
            + ["eval step 10/50 | 14.10 it/s", "eval step 20/50 | 14.20 it/s"]
            + [
                f"step {s}00/3000 | loss 2.{9 - s}00 | lr 3.0e-04 | 812.{s} samples/s"
                for s in (4, 5, 6)
            ]
        ),
        # the sequence length grows on purpose: fewer samples per second, as many tokens
        "\n".join(
            f"step {i}00 | seq_len {n} | loss 3.{9 - i} | {r} samples/s"
            for i, n, r in (
                (1, 256, 96.1),
                (2, 256, 95.8),
                (3, 256, 96.3),
                (4, 512, 47.9),
                (5, 512, 48.2),
                (6, 1024, 23.8),
            )
        ),
    ],
)
def test_a_new_regime_is_not_a_slowdown(text: str) -> None:
    assert alarms(text) == [], text


def test_a_slowdown_that_pushes_the_eta_past_a_day_is_one_stream() -> None:
    lines = [
        f"Epoch [1][{i * 50}/7330]\tlr: 2.000e-02, eta: {eta}, time: {t}, data_time: 0.054, "
        "memory: 3843, loss: 0.5855"
        for i, eta, t in (
            (1, "20:58:00", "0.853"),
            (2, "20:57:00", "0.853"),
            (3, "20:56:00", "0.853"),
            (4, "20:55:00", "0.853"),
            (5, "1 day, 7:10:00", "1.710"),
            (6, "1 day, 7:09:00", "1.710"),
        )
    ]
    found = first("\n".join(lines))
    assert found is not None and found[1] == "training.step_slowdown", found


@pytest.mark.parametrize(
    "line",
    [
        '{"mode": "train", "epoch": 1, "iter": 50, "data_time": 0.05, "loss": 0.58, "time": 0.85}',
        '2020-10-22 10:20:31 | INFO | train_inner | {"epoch": 1, "wps": "12345.6", "ups": "1.2"}',
        "[rank0]:2024-04-12 10:20:31,123 - root - INFO - step: 10  loss: 7.1234  wps: 5,432",
        "global step 100/10000, epoch: 0, batch: 99, loss: 2.9123, speed: 2.0000 step/s",
        "60000/60000 [==============================] - 30s 500us/sample - loss: 0.20 - acc: 0.90",
        "[INFO] [timer.py:157:stop] 0/100, SamplesPerSec=512.000000",
    ],
)
def test_other_versions_and_json_lines_are_read(line: str) -> None:
    assert step_seconds(line) is not None, line


@pytest.mark.parametrize(
    ("line", "epoch"),
    [
        ("Epoch 3: 100%|##########| 469/469 [02:04<00:00,  3.77it/s]", 3),
        ("Epoch(train)  [62][1750/2693]  lr: 8.12e-04  time: 1.2069", 62),
        ("Train: 12 [ 900/1251 ( 72%)]  Loss: 3.211 (3.25)  Time: 0.330s, 6205.50/s", 12),
        ("[ep 3][it 4200/9000] 0.93s/it", 3),
        ("Test: [ 100/391]  Time: 0.120 (0.130)  Loss: 0.812", None),
    ],
)
def test_the_epoch_a_progress_line_names(line: str, epoch: int | None) -> None:
    assert epoch_of(line) == epoch


def test_timm_s_lines_at_one_batch_of_later_epochs_are_one_stream() -> None:
    lines = [
        f"Train: {e} [ 900/1251 ( 72%)]  Loss: 3.2 (3.2)  Time: {t:.3f}s, {256 / t:.2f}/s  "
        f"(0.331s, 6187.12/s)  LR: 9.8e-04  Data: 0.011 (0.013)"
        for e, t in ((12, 0.330), (13, 0.822), (14, 0.819))
    ]
    assert "training.step_slowdown" in alarms("\n".join(lines))


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("2024-05-03 10:00:01 step 1000", 0.0),
        ("[2024-05-03T10:00:02.500Z] INFO step 1000", 1.5),
        ("2024/05/03 10:01:01,250 - step 1000", 60.25),
        ("2024-05-04 10:00:01 step 1000", 86400.0),
    ],
)
def test_the_time_a_line_was_printed(raw: str, seconds: float) -> None:
    start = clock_of("2024-05-03 10:00:01")
    at = clock_of(raw)
    assert start is not None and at is not None
    assert at - start == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["2024-13-45 10:00:01 step 1", "step 1 at 2024-05-03 10:00:01"])
def test_no_date_or_a_date_inside_the_line_is_no_clock(raw: str) -> None:
    assert clock_of(raw) is None


def test_clocked_step_lines_give_each_interval_s_seconds_per_step() -> None:
    marks = [(0.0, 1000, "a"), (600.0, 2000, "b"), (1200.0, 3000, "c"), (2700.0, 4000, "d")]
    assert clocked_steps(marks) == [[(0.6, "b"), (0.6, "c"), (1.5, "d")]]
    # a count that goes back starts a new run; a run of two intervals is too short
    again = [*marks, (2800.0, 1000, "e"), (2900.0, 2000, "f"), (3000.0, 3000, "g")]
    assert clocked_steps(again) == [[(0.6, "b"), (0.6, "c"), (1.5, "d")]]


def test_step_lines_whose_intervals_grow_and_stay_are_a_slowdown() -> None:
    stamps = ["10:00:01", "10:10:12", "10:20:20", "10:45:52", "11:11:31", "11:37:09"]
    text = "\n".join(f"2024-05-03 {t} step {1000 * (n + 1)}" for n, t in enumerate(stamps))
    assert "training.step_slowdown" in alarms(text)
    steady = ["10:00:01", "10:10:12", "10:20:20", "10:30:31", "10:40:39", "10:50:50"]
    text = "\n".join(f"2024-05-03 {t} step {1000 * (n + 1)}" for n, t in enumerate(steady))
    assert alarms(text) == []


def _yolo(rates: list[float]) -> str:
    return "\n".join(
        f"     {10 + n}/99     6.82G   0.0365   0.0243  0.0063       125       640: 100%|######"
        f"####| 926/926 [03:12<00:00,  {rate:.2f}it/s]"
        for n, rate in enumerate(rates)
    )


def test_finished_bars_again_are_the_next_epochs_not_one_step_repeated() -> None:
    assert "training.step_slowdown" in alarms(_yolo([4.81, 4.83, 1.95, 1.94]))
    assert alarms(_yolo([4.81, 4.83, 4.79, 4.80])) == []
