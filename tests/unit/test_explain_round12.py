"""Classes added in the twelfth corpus round (issue 21): a job whose epoch or step time crept up
(a drift, not a jump), step rates that fall (`12it/s ... drops to ~6it/s`), times quoted
against how they began (`at first`, `from the beginning ... however`), and steps said to take
longer or more time, or the training speed to get slower.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_22.jsonl; the comment names the source). The negative
controls are the same texts with the figures or verbs changed, which the comment says.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.quantities import figures
from diagnosis.explain.training import step_time_drift
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_22")

DRIFT = _real("0001")  # tensorflow/tensorflow#198 (time this epoch= 1.75 ... 2.64)
LONGER = _real("0002")  # keras-team/keras#4494 (epochs take significantly longer)
GETS_SLOWER = _real("0004")  # Lightning-AI/pytorch-lightning#12924 (2x slower after epoch 1)
AT_FIRST = _real("0005")  # horovod/horovod#196 (at first under 3 s, then 7-17 s)
RATES = _real("0006")  # Unbabel/COMET#158 (~12it/s drops to ~6it/s)
BEGINNING = _real("0009")  # Zeta36/chess-alpha-zero#79 (300 s from the beginning, then 3000 s)
MORE_TIME = _real("0012")  # EleutherAI/gpt-neox#1322 (step time takes more time each step)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (DRIFT, "training.step_slowdown"),
        (LONGER, "slowdown.time_said_to_grow"),
        (GETS_SLOWER, "slowdown.time_said_to_grow"),
        (AT_FIRST, "slowdown.step_time_rose"),
        (RATES, "slowdown.step_time_rose"),
        (BEGINNING, "slowdown.step_time_rose"),
        (MORE_TIME, "slowdown.time_said_to_grow"),
    ],
)
def test_each_class_finds_its_record(text: str, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (Category.STRAGGLER, rule), found


def test_a_drift_needs_six_steps_and_a_lasting_rise() -> None:
    assert step_time_drift([1.0, 1.1, 1.0, 1.4, 1.5, 1.4]) == 3
    assert step_time_drift([1.0, 1.1, 1.0, 1.4, 1.5]) is None  # too few steps
    assert step_time_drift([1.0, 1.1, 1.0, 1.1, 2.0, 1.0]) is None  # one slow step: a spike
    assert step_time_drift([3.0, 1.1, 1.0, 1.0, 1.1, 1.0]) is None  # warm-up, then steady


def test_step_rates_count_as_the_inverse_time() -> None:
    assert figures("~12it/s at 30% which drops to ~6it/s at 90%") == [1 / 12, 1 / 6]


# the same texts with the slowdown taken out (edited: the comment says how)
STEADY = "\n".join(
    f"Epoch: 000{i} cost= 2{i}.0\ntime this epoch= {1.75 + 0.01 * i:.2f}" for i in range(1, 8)
)
RATES_RISE = RATES.replace("~7it/s", "~13it/s").replace("~6it/s", "~14it/s")  # faster
AT_FIRST_SAME = AT_FIRST.replace("7-17s", "3-4s")  # barely changed
SHORTER = LONGER.replace("take significantly longer", "take about as long").replace(
    "a strange slowdown",
    "something strange",  # the word alone is a report (rules_slowness)
)
NOT_SLOWER = GETS_SLOWER.replace("get 2x slower", "does not get slower").replace(
    "seems to get slower", "seems steady"
)


@pytest.mark.parametrize("text", [STEADY, RATES_RISE, AT_FIRST_SAME, SHORTER, NOT_SLOWER])
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
