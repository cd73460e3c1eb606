"""Speed told with figures over 2-10 lines, written blind (tests/fixtures/explain_review/
review27_speed.json): 95 straggler reports a reader must compare numbers to see (progress output
of thirty frameworks, per-rank, per-node and per-GPU listings, alerts, shippers' JSON, sentences
with two figures, 24 in other languages) and 45 healthy look-alikes. Read 64/140 before any rule
was written for it. Then, reader by reader: 96/140 (the named figures of work, the shift that
stays, the epochs a step count goes back in), 103/140 (the listings of members' figures:
diagnosis/explain/listings.py), 105/140 (a before and an after far apart:
training.before_and_after), 107/140 (tables over time, an epoch's time a row:
tables.TableReader.sequences), 110/140 (a climb: training.step_time_climb), 111/140 (timm's
epoch, `Train: 12 [`) 112/140 (Megatron's detector: a spread in its last interval) and 113/140
(dated step lines without a step time: progress.clocked_steps); later sessions' readers took
more, the last a resolved alert whose dip came back (explained.came_back). What is still
missed, and the healthy texts still read as a slowdown, are listed by their reason.
"""

from __future__ import annotations

import pytest

from tests.explain_helpers import alarms, read_as_labelled, review, review_cases

_REVIEW = review("review27_speed")
_LIMITS_BY_REASON = {
    "members' figures in a table whose header or labels the readers do not know (`compute` "
    "beside a wait, ranges of GPUs in a table's cells, node pairs numbered by twos)": (
        "r27-043",
        "r27-050",
        "r27-065",
    ),
    "a profiler's or detector's per-rank summary (min and max across ranks, Self CUDA per "
    "rank, py-spy shares)": ("r27-015", "r27-027", "r27-110"),
    "clocks and power per GPU: a slow GPU's cause, not its speed": (
        "r27-129",
        "r27-132",
    ),
    "two readings only, before and after, of no stream the readers know (a profiler's block, "
    "an alert's summary)": (
        "r27-096",
        "r27-137",
    ),
    "epoch durations on a clock in a sentence (`12:30`)": ("r27-005",),
    "figures in sentences of other languages with decimal commas": (
        "r27-022",
        "r27-035",
        "r27-111",
    ),
    "timestamps only, as a CSV of wall time in seconds (TensorBoard's export)": ("r27-103",),
    "formats of their own (`t=0.93|0.31|0.58`; Composer's metric lines under a `[batch=N]` "
    "header: two readings without a step count), or the whole job slowed told in prose after "
    "steady lines": (
        "r27-024",
        "r27-026",
        "r27-037",
    ),
}
_ALARMS_BY_REASON = {
    "Megatron's straggler report in words (`straggler detector`) with min and max 2 % apart": (
        "r27-002",
    ),
    "a speed-up after a fix, read from `from 2.1 s/it to 0.6 s/it` in a line that also says "
    "it held": ("r27-033",),
    "a step time that grows with the planned sequence length (the work per step doubled)": (
        "r27-074",
    ),
    "a batch-size sweep: slower per step, faster per sample": ("r27-075",),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}
KNOWN_ALARMS = {i for ids in _ALARMS_BY_REASON.values() for i in ids}


@pytest.mark.parametrize("case", review_cases(_REVIEW, False, KNOWN_LIMITS), ids=lambda c: c["id"])
def test_each_slowdown_is_read_as_a_straggler(case: dict[str, str]) -> None:
    assert read_as_labelled(case), case["why"]


@pytest.mark.parametrize("case", review_cases(_REVIEW, True, KNOWN_ALARMS), ids=lambda c: c["id"])
def test_each_healthy_text_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


def test_the_known_limits_are_still_what_they_were() -> None:
    """A reader that learns one (or stops alarming on one) moves it out of the lists."""
    for case in _REVIEW:
        if case["id"] in KNOWN_LIMITS:
            assert not read_as_labelled(case), case["id"]
        elif case["id"] in KNOWN_ALARMS:
            assert alarms(case["text"]), case["id"]
