"""A reviewer's breakers of session 23's rules (tests/fixtures/explain_review/review37.json,
2026-12-06): 66 texts written after reading bf12dec..ede6722 and before running them, 28
healthy look-alikes and 38 faults. Read 31/66: the new rules alarmed on a header's enum with its
doc comment, a catalogue's list of Xids, a README naming fail-slow events, a longer sequence
said as the setup changed, epoch times a curriculum plans; and missed ENOLCK in other bindings,
a journal that fails to replay, a QP state change `from RTR to RTS`, NVMe over RDMA failing on
the fabric, verbs and UCX without a device, Open MPI's banner wrapped after `with`, Rust's
`GpuLost`, one card idle in Chinese, Japanese and Korean, two-line reports in CJK, a speed back
only once the job moved, detectors' verdicts in other formats, dcgm-exporter's NVLink counters,
a Xid said in Japanese and GPU-Z's narrow link. Fixed as classes: 58/66; 59/66 once
`--nproc_per_node` leaves cards idle by design only where the text counts more GPUs than
processes. Left, by reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review37")
_LIMITS_BY_REASON = {
    "nvidia-smi's CSV with one card at 0 % beside the others at 100 %: utilisation columns are "
    "not read as members' speeds": ("r37-019",),
    "runs or epochs listed a line each under ordinal words (`first run:`, `第1个epoch耗时：`): "
    "the listing readers take numbered epochs and steps": ("r37-026", "r37-037"),
    "a two-line report whose second line names no step (its subject is the first line's)": (
        "r37-041",
    ),
    "NVLink counters told in a sentence (`~12k CRC errors on link 3`)": ("r37-055",),
    "a link's width only against its capability on another line or column (nvidia-smi -q's "
    "Max and Current, its CSV's current and max widths)": ("r37-059", "r37-060"),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
