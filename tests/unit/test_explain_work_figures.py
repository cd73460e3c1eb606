"""Named figures of work in lines no framework reader knows (diagnosis/explain/work_figures.py),
the series they form (a shift that stays: steady steps, then slow ones) and the members they
compare (one rank or host behind its peers)."""

from __future__ import annotations

import pytest

from diagnosis.explain.training import elapsed_clock, step_time_shift
from diagnosis.explain.work_figures import member_of, work_figures
from tests.explain_helpers import alarms


@pytest.mark.parametrize(
    ("line", "field", "seconds"),
    [
        ("iter 4200 step 1050: loss 2.1043, iter time: 512.34ms (step)", "iter time", 0.51234),
        ('{"step": 1000, "step_time": 0.611, "lr": 0.00029}', "step_time", 0.611),
        ("worker-3  step 7200  local_compute=0.744s", "local_compute", 0.744),
        (" 2: gpu-e019: fwd_bwd_ms=1344.0 opt_ms=88.6", "fwd_bwd_ms", 1.344),
        ("Epoch: [5][ 400/5005]\tTime  0.412 ( 0.405)\tData  0.002 ( 0.004)", "time", 0.412),
        ("[ep 3][it 4200/9000] 0.93s/it (data 0.02s) loss 2.114", "s/it", 0.93),
        (
            "Part 2 | Step 00100 | Speed (samples/sec) 2000 | GPU 3810.4 MB",
            "speed (samples/sec)",
            5e-4,
        ),
    ],
)
def test_a_named_figure_of_work_is_seconds_per_step(line: str, field: str, seconds: float) -> None:
    found = {figure.field: figure for figure in work_figures(line)}
    assert found[field].seconds == pytest.approx(seconds)
    # a rate is read as its inverse, and never taken for an elapsed clock
    assert found[field].rate is ("/s" in field or "speed" in field)


@pytest.mark.parametrize(
    "line",
    [
        "data_time: 0.0121  eta: 1 day, 2:03:11",  # a data loader's time, an ETA
        "ETH - Total Speed: 133.074 Mh/s, Time: 04:24",  # a clock
        ':::MLLOG {"time_ms": 1715000012345, "key": "run_start"}',  # a timestamp
        "Elapsed time: 10.5 s, remaining time: 3:12:01",
        "compute=0.7 loss=2.1",  # a compute figure without its unit
        "lr: 0.0003 loss: 2.113",
    ],
)
def test_what_is_no_step_time_is_not_read(line: str) -> None:
    assert work_figures(line) == []


def test_members_named_in_every_way_a_launcher_prints_them() -> None:
    assert member_of("[1,mpirank:16,algo-3]<stdout>:step 2400") == "mpirank 16"
    assert member_of("rank_2: run_training_batch | Mean duration (s) 0.65") == "rank 2"
    assert member_of("(RayTrainWorker pid=31904, ip=10.2.0.17) iter 60") == "10.2.0.17"
    assert member_of("step 200 | loss 4.12") is None


def test_a_shift_that_stays_after_a_steady_start() -> None:
    assert step_time_shift([0.41, 0.42, 0.99, 1.01]) == 2
    assert step_time_shift([1.0, 3.48, 3.48]) == 1  # one step, then two at twice it
    assert step_time_shift([1.0, 1.6, 1.6]) is None  # one step is a thin baseline for 1.6x
    assert step_time_shift([0.41, 0.42, 0.99, 0.43]) is None  # a checkpoint's pause
    assert step_time_shift([2.5, 0.41, 0.42, 0.40]) is None  # a warm-up: slow, then fast


def test_an_elapsed_clock_only_adds_up() -> None:
    assert elapsed_clock([36133.8, 44303.8, 52489.6, 60718.6, 68951.5])
    assert not elapsed_clock([0.0163, 0.0287, 0.0459, 0.0467])


def test_a_json_log_whose_step_time_shifts_and_stays() -> None:
    text = "\n".join(
        f'{{"step": {step}, "step_time": {t}, "tokens_per_sec": {tps}}}'
        for step, t, tps in (
            (1000, 0.611, 53621),
            (2000, 0.614, 53360),
            (3000, 1.402, 23370),
            (4000, 1.398, 23437),
        )
    )
    assert alarms(text) == ["training.step_slowdown"]
    steady = text.replace("1.402", "0.612").replace("1.398", "0.615")
    steady = steady.replace("23370", "53500").replace("23437", "53400")
    assert alarms(steady) == []


def test_one_worker_behind_its_peers_in_a_per_worker_listing() -> None:
    lines = [
        f"worker-{i}  step 7200  local_compute={t}s"
        for i, t in enumerate((0.318, 0.321, 0.319, 0.744, 0.317))
    ]
    assert alarms("\n".join(lines)) == ["peers.slow_device"]
    even = [line.replace("0.744", "0.322") for line in lines]
    assert alarms("\n".join(even)) == []


def test_an_elapsed_time_column_is_no_slowdown() -> None:
    text = "\n".join(
        f"2022-02-18 09:17:43,068 [INFO] Epoch {e}, Time {t}s, Loss 0.46, LR 0.2000"
        for e, t in ((30, 36133.8), (40, 44303.8), (50, 52489.6), (60, 60718.6), (70, 68951.5))
    )
    assert alarms(text) == []


def test_a_dated_logger_prefix_is_no_step_counter() -> None:
    text = "\n".join(
        f"[05/12 10:1{i}:12] ppdet.engine INFO: Epoch: [3] [ {400 + 200 * i}/1832] "
        f"batch_cost: {t} data_cost: 0.0012 ips: {ips} images/s"
        for i, (t, ips) in enumerate(
            ((0.5123, 15.61), (0.5139, 15.56), (1.2218, 6.54), (1.2241, 6.53))
        )
    )
    assert alarms(text) == ["training.step_slowdown"]


def test_a_figure_in_e_notation_is_read_whole_and_a_metric_s_path_names_it() -> None:
    espnet = (
        "3epoch:train:1001-2000batch: iter_time=1.201e-04, forward_time=0.212, train_time=0.611"
    )
    found = {f.field: f.seconds for f in work_figures(espnet)}
    assert found["iter_time"] == pytest.approx(1.201e-4)
    assert found["train_time"] == pytest.approx(0.611)
    composer = "\t Train throughput/batches_per_sec: 1.6212"
    assert [f.field for f in work_figures(composer)] == ["batches_per_sec"]


def test_a_step_time_line_s_other_named_figures_are_read_too() -> None:
    lines = [
        f"[gpu-n12] 2024-07-08 0{n}:12:40,001 (trainer:762) INFO: 3epoch:train:{n}001-{n + 1}000"
        f"batch: iter_time=1.2e-04, forward_time=0.2, loss=26.4, train_time={t}"
        for n, t in enumerate((0.611, 0.620, 1.530, 1.541), 1)
    ]
    assert "training.step_slowdown" in alarms("\n".join(lines))


def test_deepspeed_s_breakdown_gives_forward_and_backward_not_the_optimizer_s_step() -> None:
    line = (
        "[Rank 0] time (ms) | fwd_microstep: 121.44 | bwd_microstep: 241.90 | "
        "bwd_inner_microstep: 240.12 | bwd_allreduce_microstep: 1.61 | step_microstep: 0.03"
    )
    assert [f.field for f in work_figures(line)] == ["fwd_microstep", "bwd_microstep"]
