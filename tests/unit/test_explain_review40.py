"""A reviewer's breakers of faults told in words (tests/fixtures/explain_review/review40.json,
2026-12-06): 68 texts as on-call tickets, Slack threads, drain reasons, node conditions and alert
bodies put them, 26 healthy look-alikes: NFS and other network filesystems, RDMA and its NICs,
NVLink, a GPU's PCIe link, NVML and row remapping. Read 15/68 before any change, with 11 false
alarms: a maintenance notice, a closed incident, a runbook step quoting the kernel's line, a
slowdown caused on purpose, an alert that resolved by itself, a port fixed since, work announced
ahead, an idle GPU saving power, a login node without GPUs and a remap a reset applied. Fixed as
classes (rules_said, rules_monitors.live reading a ruled-out word in the match's sentence only,
rules_monitors' `_NOT_NOW`, a runbook's `when a node logs`): 64/68. Left, by reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review40")
_LIMITS_BY_REASON = {
    "a NIC's speed only against its peers' (ethtool's `Speed: 100000Mb/s` beside `400000Mb/s`)": (
        "r40-011",
    ),
    "a device plugin's RDMA resource at 0, a RoCE GID missing from show_gids: configuration "
    "told in words no producer prints": ("r40-016", "r40-020"),
    "a pod without the NVIDIA runtime told in words (`no runtimeClassName: nvidia`)": ("r40-039",),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
