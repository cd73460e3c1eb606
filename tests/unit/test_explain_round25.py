"""Classes added in the twenty-fifth corpus round (issue 21): a time that becomes ``more and
more long``, a GPU that falls into a low-clock performance state (P2, P8), one member named by
its place (``the second PS instance is very slow``), and the slowdown reader in Korean
(``학습속도가 현저히 느려졌습니다``; rules_slowness_cjk).

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_35.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_35")

MORE_AND_MORE = _real("0003")  # temporal ensembling: the step becomes more and more long
LOW_CLOCK = _real("0004")  # MCX: a 980 Ti drops to a low-clock state after some time
PERF_STATE = _real("0005")  # OpenPAI: GPU perf state changes to P8 and the job is slow
SECOND_PS = _real("0006")  # ElasticDL: the second PS instance is very slow
KOREAN = _real("0007")  # 갑자기 학습속도가 현저히 느려졌습니다


@pytest.mark.parametrize("text", [MORE_AND_MORE, LOW_CLOCK, PERF_STATE, SECOND_PS, KOREAN])
def test_each_class_finds_its_record(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == Category.STRAGGLER, found


@pytest.mark.parametrize(
    "text",
    [
        "The GPU goes to the P8 state when it is idle, which is normal for a card with no work.",
        "학습 속도가 느려지지 않았습니다. 코드도 그대로입니다.",  # it did not get slower
        "데이터셋을 두 배로 늘렸기 때문에 학습 속도가 느려졌습니다.",  # explained: the data doubled
        MORE_AND_MORE.replace("become more and more long", "stays the same"),
        SECOND_PS.replace("is very slow  and may hang", "is as fast as the first"),
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
