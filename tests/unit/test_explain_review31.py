"""A reviewer's breakers of session 20's rules (tests/fixtures/explain_review/review31.json,
2026-12-06): 67 texts written after reading the change, checked against it: 36 healthy
look-alikes it alarmed on, 21 faults it missed or misread, 10 that held. 10/67 before the
fixes, the rest after them but these, listed by their reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review31")
_LIMITS_BY_REASON = {
    "a message in a closed ticket, a runbook's decoding example or a CI probe that expects no "
    "GPU: the rules read the message, not the document around it (a runbook line that quotes "
    "it is read as a document since session 21: documents.quotes_in_document)": (
        "r31-007",
        "r31-008",
        "r31-011",
    ),
    "Fabric Manager's `NV_WARN_NOTHING_TO_DO` read as the fabric's failure (the corpus and "
    "gpud file it so; this set calls it FM's refusal on a machine without NVSwitch)": ("r31-010",),
    "a perftest retry that reached its server on the next try: the failed try is read": (
        "r31-016",
    ),
    "Open MPI's registered-memory warning (`may ... hang`) read as a stall said": ("r31-017",),
    "`Stale File Handle` named in a program's help text": ("r31-018",),
    "one replica's rate that fell against the others' (`fell to 9 while the other replicas "
    "still do 38`)": ("r31-057",),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
