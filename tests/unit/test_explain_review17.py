"""Short reports of speed written by a reviewer who saw neither the rules nor the corpus
(tests/fixtures/explain_review/review17.json): one to three lines as people title an issue,
open a forum post, write in chat or as an alert says it, in thirteen languages. A speed that
changed and a member against its peers are read from their figures
(diagnosis/explain/rules_figures.py); a throttled GPU quoted in prose is the GPU's.

Labels: `straggler`, `benign` (must stay silent), `other` (two setups compared: no slowdown of
one job, so no straggler finding), and the other categories a slowness can have.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

REVIEW = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures/explain_review/review17.json").read_text()
)
KNOWN_LIMITS = {
    "r17-004": "a Megatron line quoted inside a sentence is read as one healthy iteration",
    "r17-047": "French `deux fois plus de temps ... que les autres`: a member's factor in words",
    "r17-085": "a detector's `gpu_relative_perf=0.71` without its tool's wording",
    "r17-108": "two quoted MXNet lines split by an ellipsis: one figure a sentence",
    "r17-006": "a power cap with the power draw low: the cap is normal alone (read: a slowdown)",
    "r17-024": "two setups compared: DDP against FSDP (read: a slowdown)",
    "r17-026": "two setups compared: two PyTorch versions (read: a slowdown)",
    "r17-028": "two setups compared: Docker against bare metal (read: a slowdown)",
    "r17-057": "two setups compared: A100 against H100 numbers (read: a slowdown)",
    "r17-082": "two setups compared: a cloud instance against a DGX (read: a slowdown)",
    "r17-103": "two setups compared: Windows against Ubuntu (read: a slowdown)",
    "r17-118": "two setups compared: two nodes against one, in Spanish (read: a slowdown)",
}
"""What the readers miss (a family-wide choice for setups compared: tests' KNOWN_LIMITS of
review 15)."""
_OTHER = "other"


def _cases(label: str) -> list[dict[str, str]]:
    return [c for c in REVIEW if c["label"] == label and c["id"] not in KNOWN_LIMITS]


@pytest.mark.parametrize("case", _cases("straggler"), ids=lambda c: c["id"])
def test_each_short_report_of_a_slowdown_is_a_straggler(case: dict[str, str]) -> None:
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


def test_the_review_is_read_but_for_its_known_limits() -> None:
    """The known limits are still misses (a reader that learns one moves it out of the list)."""
    for case in REVIEW:
        if case["id"] not in KNOWN_LIMITS:
            continue
        found = first(case["text"])
        if case["label"] == _OTHER:
            assert found is not None and found[0] == Category.STRAGGLER, case["id"]
        else:
            assert found is None or found[0].value != case["label"], case["id"]
