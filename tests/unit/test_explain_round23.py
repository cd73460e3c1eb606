"""Classes added in the twenty-third corpus round (issue 21): durations in words (``from less
than an hour to over eight hours``), UCX's ``Transport retry count exceeded``, and a sentence in
markdown's emphasis about a collective (``**all-gather is ~1.5x slower**``).

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_33.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.quantities import figures
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_33")

EIGHT_HOURS = _real("0000")  # YOLOv6: an epoch from less than an hour to over eight hours
RETRY_COUNT = _real("0022")  # UCX on mlx5: Transport retry count exceeded
MARKDOWN = _real("0026")  # Tenstorrent: **f10cs05's 2-chip all-gather is ~1.5x slower**


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (EIGHT_HOURS, Category.STRAGGLER),
        (RETRY_COUNT, Category.NETWORK),
        (MARKDOWN, Category.STRAGGLER),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


def test_durations_in_words_are_figures() -> None:
    assert figures("from less than an hour to over eight hours") == [3600.0, 8 * 3600.0]
    assert figures("it takes twenty minutes per epoch") == [1200.0]
    assert figures("I added a second GPU") == []  # the ordinal
    assert figures("it takes a second per step") == [1.0]


@pytest.mark.parametrize(
    "text",
    [
        EIGHT_HOURS.replace("to over eight hours", "to about an hour")
        .replace("significant change", "small change")
        .replace("Epoch 20: 1:36:48", "Epoch 20: 57:01")
        .replace("Epoch 21: 4:53:35", "Epoch 21: 56:40")
        .replace("Epoch 22: 8:16:27", "Epoch 22: 57:10")
        .replace("Epoch 23: 5:34:24", "Epoch 23: 56:52")
        .replace("Epoch 24: 7:01:41", "Epoch 24: 57:03"),
        "UCX_RC_RETRY_COUNT=7 sets the transport retry count for the mlx5 transports.",
        "**The all-gather is ~3% slower at the decode shape** — within noise on this host.",
        "**The all-gather is not slower on f10cs05** — both hosts match the healthy figure.",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
