"""Reports of speed told in sentences, written blind (tests/fixtures/explain_review/
review22_speed.json): 100 straggler reports told indirectly or across sentences (figures in
words or in two sentences, times of day, ETAs that move, crawls and nosedives, one member the
others wait for) and 50 look-alikes, 30 of the 150 in twelve other languages. Read 89/150 with
the rules of 8e581c0 before any rule was written for it; the readers of rules_slow_told and the
shapes added to rules_figures (a member's: now rules_member_figures) and rules_slowness were
written from it. What is still missed is listed with its reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/explain_review"
_WORDS = "a speed in words only"
KNOWN_LIMITS = {
    "r22spd-020": "a server at `roughly 60% of the throughput of server A`: a named peer's share",
    "r22spd-028": "epoch times in `3m12s` form under a label: the list reader reads bare figures",
    "r22spd-029": "workers done by a clock (`around 2am`, `at 7`): two clock times to subtract",
    "r22spd-040": "`under an hour` then `close to two`: the second figure without its unit",
    "r22spd-044": f"{_WORDS}: `twenty batches a second down to five or six`",
    "r22spd-046": "a member's rate in the sentence after its name (`its samples/sec ... 410`)",
    "r22spd-056": f"{_WORDS}: a step counter that goes up by ~50 a minute, then 12",
    "r22spd-067": f"{_WORDS}: an epoch in a coffee break, then a lunch hour",
    "r22spd-071": "`half as many files per hour as the rest`: a share of work in words",
    "r22spd-072": "a forecast by dinner and 40% done at 6pm: progress against a clock",
    "r22spd-076": "`handles only 14 while its siblings still do 24`: figures without a unit",
    "r22spd-097": "Italian `passi al secondo` (steps a second) is no unit the figures know",
}


def _cases(benign: bool) -> list[dict[str, str]]:
    review = json.loads((_FIXTURES / "review22_speed.json").read_text())
    return [c for c in review if (c["label"] == "benign") is benign and c["id"] not in KNOWN_LIMITS]


@pytest.mark.parametrize("case", _cases(benign=False), ids=lambda c: c["id"])
def test_each_report_of_a_slowdown_is_a_straggler(case: dict[str, str]) -> None:
    found = first(case["text"])
    assert found is not None and found[0] == Category.STRAGGLER, case["why"]


@pytest.mark.parametrize("case", _cases(benign=True), ids=lambda c: c["id"])
def test_each_look_alike_stays_silent(case: dict[str, str]) -> None:
    assert alarms(case["text"]) == [], case["why"]


def test_the_known_limits_are_still_misses() -> None:
    """A reader that learns one moves it out of the list."""
    review = json.loads((_FIXTURES / "review22_speed.json").read_text())
    known = [c for c in review if c["id"] in KNOWN_LIMITS]
    assert len(known) == len(KNOWN_LIMITS)
    for case in known:
        found = first(case["text"])
        assert found is None or found[0] != Category.STRAGGLER, case["id"]
