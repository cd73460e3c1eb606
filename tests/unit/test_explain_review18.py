"""Short reports of speed with figures, written blind to the rules after review 17's readers
were built (tests/fixtures/explain_review/review18.json): 50/120 at the session's start, 69/120
with review 17's readers before any rule was written for this set. What the set then taught:
alerts against a baseline, past and present markers in either order, lists of figures per
member or over time, decimal commas and thousands separators, k and M suffixes, a slowdown
reported with its cause (the fabric's, the storage's, the GPU's), stops with a place or a
silence with a length.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

REVIEW = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/explain_review/review18.json").read_text()
)
KNOWN_LIMITS = {
    "r18-007": "two tqdm bars a line apart: too short a stream to call a trend",
    "r18-019": "members given as a range (`rank 0-6: 412ms/step, rank 7: 655ms/step`)",
    "r18-041": "`step_time_ms=` key-value lines: the generic step stream reads `step_time` only",
    "r18-046": "two setups compared (Slurm against Kubernetes): read as a slowdown",
    "r18-057": "an ETA on a clock (`03:12:00` then `07:40:00`) as progress grows",
    "r18-101": "a list of members' MFU with the member named once after it (`(node 4)`)",
}
_OTHER = "other"


def _cases(label: str) -> list[dict[str, str]]:
    return [c for c in REVIEW if c["label"] == label and c["id"] not in KNOWN_LIMITS]


@pytest.mark.parametrize("case", _cases("straggler"), ids=lambda c: c["id"])
def test_each_report_of_a_slowdown_is_a_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category.STRAGGLER, case["why"]


@pytest.mark.parametrize("case", _cases("benign"), ids=lambda c: c["id"])
def test_each_look_alike_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


@pytest.mark.parametrize("case", _cases(_OTHER), ids=lambda c: c["id"])
def test_two_setups_compared_are_no_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is None or found[0] != Category.STRAGGLER, case["why"]


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in REVIEW
        if c["label"] not in ("straggler", "benign", _OTHER) and c["id"] not in KNOWN_LIMITS
    ],
    ids=lambda c: c["id"],
)
def test_a_slowness_with_another_cause_is_read_as_that_cause(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category(case["label"]), case["why"]


def test_the_known_limits_are_still_misses() -> None:
    for case in REVIEW:
        if case["id"] in KNOWN_LIMITS:
            found = first(case["text"])
            if case["label"] == _OTHER:
                assert found is not None and found[0] == Category.STRAGGLER, case["id"]
            else:
                assert found is None or found[0].value != case["label"], case["id"]
