"""Long pasted training logs written by a reviewer who saw neither the rules nor the corpus
(tests/fixtures/explain_review/review16.json): tqdm's bar and PaddleNLP's interval as progress
fields, one slow Megatron iteration after a checkpoint, questions whether something is a
slowdown, a first epoch or interval that is slower, figures against the past (`where it used
to be`), a rate that falls to a share of itself, a member always behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

REVIEW = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/explain_review/review16.json").read_text()
)
KNOWN_LIMITS = {
    "r16-05": "flax's `steps_per_second went from ~12 to ~4`: a rate said to go, not to fall",
    "r16-08": "a dataloader worker that stalls every 8th step: periodic, not a slowdown that stays",
    "r16-16": "YOLOv8 epochs on a clock without a unit (`~2:40` to `~7:20`)",
}


@pytest.mark.parametrize(
    "case",
    [c for c in REVIEW if c["label"] == "straggler" and c["id"] not in KNOWN_LIMITS],
    ids=lambda c: c["id"],
)
def test_each_log_of_a_slowdown_is_read_as_a_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category.STRAGGLER, case["why"]


@pytest.mark.parametrize(
    "case", [c for c in REVIEW if c["label"] == "benign"], ids=lambda c: c["id"]
)
def test_each_healthy_log_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


def _bar(rates: list[str]) -> str:
    return "\n".join(
        f" {n:>2}%|##        | {n * 10}/1000 [01:{n:02d}<10:00,  {rate}]"
        for n, rate in enumerate(rates, start=1)
    )


def test_tqdm_bars_are_a_progress_stream_in_either_unit() -> None:
    slowed = _bar(["2.10it/s"] * 6 + ["1.52s/it"] * 4)
    steady = _bar(["2.10it/s", "2.12it/s", "2.08it/s", "2.11it/s", "2.09it/s"] * 2)
    found = first(slowed)
    assert found is not None and found[:2] == (Category.STRAGGLER, "training.step_slowdown")
    assert alarms(steady) == []


def test_one_slow_megatron_iteration_is_no_slowdown_but_two_are() -> None:
    line = (
        " [2024-06-03 16:20:23] iteration {i:>8}/  250000 | consumed samples: {s:>12} | elapsed "
        "time per iteration (ms): {t} | throughput per GPU (TFLOP/s/GPU): {f} | learning rate: "
        "2.999000E-04 | global batch size:   512 | lm loss: 2.7E+00 | loss scale: 1.0 | grad norm: "
        "0.290 | number of skipped iterations:   0 | number of nan iterations:   0 |"
    )

    def log(times: list[float]) -> str:
        return "\n".join(
            line.format(i=960 + 10 * k, s=491520 + 5120 * k, t=t, f=round(405 * 1835 / t, 1))
            for k, t in enumerate(times)
        )

    once = [1835.1, 1827.2, 1855.1, 1825.4, 3317.4, 1857.8, 1863.1, 1832.0]
    stays = [1835.1, 1827.2, 1855.1, 1825.4, 3317.4, 3320.8, 3299.1, 3310.0]
    assert "training.step_slowdown" not in alarms(log(once))
    assert "training.step_slowdown" in alarms(log(stays))
