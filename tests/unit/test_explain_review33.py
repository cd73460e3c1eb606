"""A reviewer's breakers of session 21's rules (tests/fixtures/explain_review/review33.json,
2026-12-06): 70 texts written after reading the change, checked against it: 34 healthy
look-alikes it alarmed on, 19 faults it missed or misread, 17 that held. 17/70 before the
fixes (one GPU idle by design, a figure of another quantity `back to` a value, rates with
thousands separators, `seg faults` denied or fixed, the shells' own and localized reports,
XFS's older and other forms, verbs and UCX wordings, gcc's diagnostics in libfabric's tree,
fi_info, a DCGM client that connects later), 61/70 once a document's line that quotes a message
is no event (documents.quotes_in_document); the rest after them but these, listed by their
reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review33")
_LIMITS_BY_REASON = {
    "a fault injected on purpose by a test that passes (xfstests, UCX's gtest, a crash "
    "handler's test): the injected failure is read": ("r33-010", "r33-021", "r33-038", "r33-039"),
    "an event announced or caused on purpose (a switch's planned maintenance, a drive pulled "
    "as planned, a job the user cancelled): the event is read": ("r33-022", "r33-065", "r33-067"),
    "a failure to reach DCGM told in prose with its recovery (`until the new hostengine pod "
    "came up`): no line of the input connects": ("r33-046",),
    "a stall said in the same sentence as a crash in NCCL (`segv in ncclCommInitRank ..., the "
    "other ranks then hang`): one record yields one finding, and the stall's rule comes first": (
        "r33-036",
    ),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
