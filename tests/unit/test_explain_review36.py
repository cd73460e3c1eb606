"""A reviewer's breakers of session 22's rules (tests/fixtures/explain_review/review36.json,
2026-12-06): 70 texts written after reading 940d6d9..54b1269 and before running them, 30
healthy look-alikes and 40 faults. Read 37/70: the new rules alarmed on a rig of mixed cards,
a card that drives the displays, runs pinned to cards or split layer by layer, a dip that
`bounced back`, a volume mount that timed out and then attached, a narrow link on a NIC in a
GPU node, a troubleshooting table's row and a line of code quoting a message; and missed AER's
real spacing, rping's perror, NVML's other spellings, a CSI driver's deadline, the time per step
said singular, `after generating N images`, marks such as `45 minutes in:`, `20k` steps. Fixed
as classes (the lspci device header above a narrow link decides whose it is; identical peers
need one model and no display duty; RECOVERED_BY for the kubelet's volume; a ConfigMap that
does not exist explains the mount timeout): 60/70; 61/70 with `each image` as a step's
work (`takes 25 s instead of 6 s`); 62/70 in session 23, once `--nproc_per_node` leaves cards
idle by design only where the text counts more GPUs than processes. Left, by reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review36")
_LIMITS_BY_REASON = {
    "a narrow link the text says is wired so by design (a NIC in an x4 slot)": ("r36-023",),
    "per-device rates in formats not read (ffmpeg's padded fps beside an unchanged bitrate, "
    "lolMiner's rates by position, PhoenixMiner's `GPUs:` line) and gpu-burn's report, read "
    "as its healthy verdict": ("r36-038", "r36-041", "r36-042", "r36-043"),
    "a link's width only against its capability on another line (older lspci without "
    "`(downgraded)`, nvidia-smi -q's Max and Current)": ("r36-064", "r36-066"),
    "a service slower over its run told in German": ("r36-068",),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
