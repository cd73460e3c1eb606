"""Classes of the fifty-fourth round's false alarms (fresh_77, fresh_78), each read as a class:
the first epoch slower than the following ones (a warm-up), a line that calls what the input
reports expected and no bug, and a slowdown the speaker fixed by changing a setting back. Two of
the three records are of the evaluation part, read to fix them (so no longer blind)."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, silence_tests


@pytest.mark.parametrize("number", ["0005", "0006", "0007"])
def test_the_round_s_explained_slowdowns_stay_silent(number: str) -> None:
    assert alarms(corpus_text("fresh_78", number)) == []


test_look_alikes_stay_silent = silence_tests(
    [
        "The first epoch takes longer than the following ones because of the cache warm-up.",
        "Throughput drops from 900 to 450 tok/s as the context grows.\n"
        "This is expected, not a bug.",
        "Switching the PCIe slot setting back to Gen4 in the BIOS fixed the slowdown.",
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        # a later epoch slower than the first is no warm-up
        ("Epoch 5 takes far longer than the first: 40 min against 10 min.", Category.STRAGGLER),
        # a restart that fixed it for a while is a workaround, not an explanation
        (
            "Step time went from 1.2 s to 3.5 s. Restarting fixed the slowdown for an hour only.",
            Category.STRAGGLER,
        ),
        # `expected` asked, not said
        ("tok/s drops from 50 to 5 after an hour. Is this expected?", Category.STRAGGLER),
    ]
)
