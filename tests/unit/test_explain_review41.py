"""A reviewer's breakers as whole issue bodies (tests/fixtures/explain_review/review41.json,
2026-12-06): 60 texts of 10 to 40 lines with templates, environment dumps, pip lists, code and
logs, one fault decisive in each, 24 healthy look-alikes whose noise holds `timeout`, `nan`,
`Xid`, `OOM` and `killed` in harmless places. Read 42/60 before any change, with 11 false
alarms: a pull request, release notes, a changelog, feature requests, a docs change and a
comment closing an issue as fixed, each quoting the message it is about. Fixed as classes: an
input whose first lines announce a change (`documents.is_a_document`: `## PR #2281: ...`,
`# Release notes - ...`, `### 🚀 Feature request: ...`, `Closing this: verified fixed`) keeps only
its informational findings; TensorFlow's `OOM when allocating tensor ... GPU:0` and XLA's
`RESOURCE_EXHAUSTED: Out of memory while trying to allocate` are a GPU's OOM; lspci's NVIDIA GPU
at `(rev ff)` fell off the bus. 53/60 after; 54/60 since the seventy-ninth round filed a job
cancelled by its own time limit as no fault (`slurm.time_limit` is benign). Left, by reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review41")
_LIMITS_BY_REASON = {
    "Ray workers' timings grouped by node address: no member word names them": ("r41-009",),
    "a job said to print nothing for hours, an evaluation bar at 0/32 for 50 minutes: a stop "
    "told in words with py-spy stacks, no producer's line": ("r41-013", "r41-015"),
    "the TCPStore timing out while waiting for clients (`15/16 clients joined`): read as the "
    "store's network, the reviewer files a hang": ("r41-014",),
    "an OOM quoted as history under a question (`used to die ... with the message below`)": (
        "r41-037",
    ),
    "a step time that doubles with the user's own curriculum, told over several lines": (
        "r41-058",
    ),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
