"""People's reports of a slowdown in words, written blind (tests/fixtures/explain_review/
review32_prose.json, 2026-12-06): 106 texts in the shape of issue titles and first paragraphs,
forum questions and chat, in twelve languages: 75 slowdowns or slow members and 31 look-alikes
(a steady run asked about, setups compared, a warm-up, a change the speaker made and accepts,
an evaluation slower than training, a profiler left on). Read 79/106 with 6 false alarms
before any rule was written for it; 94/106 and none now. What is still missed is listed by
its reason.
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review32_prose")
_LIMITS_BY_REASON = {
    "no reader for the language (Italian, Turkish, Vietnamese)": (
        "r32p-013",
        "r32p-014",
        "r32p-064",
        "r32p-065",
    ),
    "a server's latency that creeps up over a day at the same load, in English, Spanish and "
    "Japanese: requests and inference are read only with a word the rules know for a run's "
    "time": ("r32p-024", "r32p-050", "r32p-067"),
    "stalls that grow (read as a hang said, or as no speed) and a data loader that slows": (
        "r32p-028",
        "r32p-053",
    ),
    "one member's rate against its peers' given as lines of a chart (`15 lines sit around 41k, "
    "the one for node 12 is at ~29k`)": ("r32p-045",),
    "a utilization drop with a step time that doubled, in German (`hat sich ... verdoppelt` "
    "after other words)": ("r32p-051",),
    "a rate that falls over a machine's uptime (`fresh boot`: read as a boot's slowness)": (
        "r32p-058",
    ),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)


def test_the_set_is_the_one_described() -> None:
    assert len(_REVIEW) == 106
    assert sum(c["label"] == "benign" for c in _REVIEW) == 31
