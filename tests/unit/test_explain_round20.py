"""Classes added in the twentieth corpus round (issue 21): a job said to get worse at a speed
(``runs pretty fast at the beginning, but gets worse after several epochs``), and a counted
epoch whose time is given on a clock (``epoch: 10, ... time delta: 0:00:00.208632``), read as
generic step times.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_30.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.training import parse_step_seconds
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_30")

GETS_WORSE = _real("0000")  # TFFRCNN: fast at the beginning, but gets worse after epochs
CLOCK_DELTAS = _real("0006")  # a PyTorch LSTM: time delta per 10 epochs grows from 0.006 s


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (GETS_WORSE, "straggler.slowness_in_words"),
        (CLOCK_DELTAS, "training.step_slowdown"),
    ],
)
def test_each_class_finds_its_record(text: str, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (Category.STRAGGLER, rule), found


def test_a_clock_time_on_a_counted_epoch_line_is_its_duration() -> None:
    line = "epoch:  80,     loss: 0.1076,   time delta: 0:00:02.262113"
    assert parse_step_seconds(line) == pytest.approx(2.262113)
    assert parse_step_seconds("[12:00:01] epoch 3 done at 12:00:01") is None


def _steady(text: str) -> str:
    """The same log with every epoch's time delta made 0:00:01.0 (edited)."""
    lines = text.splitlines()
    return "\n".join(
        line.rsplit("time delta:", 1)[0] + "time delta: 0:00:01.000000" for line in lines
    )


@pytest.mark.parametrize(
    "text",
    [
        _steady(CLOCK_DELTAS),
        "My model trains fine at first, but the validation loss gets worse after several epochs.",
        GETS_WORSE.replace("gets worse", "stays the same"),
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
