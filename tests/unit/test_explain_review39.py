"""A reviewer's breakers of the straggler rules (tests/fixtures/explain_review/review39.json,
2026-12-06): 69 texts written after reading the rules and before running them, 28 healthy
look-alikes and 41 slowdowns or slow members. Read 36/69: the rules alarmed on a step time a
longer sequence explains (`switching max_seq_length from 2048 to 8192`), gradient accumulation,
a bigger model (`from Llama-3-8B to Llama-3-70B`, `what the ~9x parameter count predicts`), a
curriculum's ramp, ranks even again after a fix and decoding set against prefill; and missed
people's words for slowing in German, French, Spanish, Portuguese and Russian (`zäher`,
`hinkt hinterher`, `traîne`, `se queda atrás`, `mais devagar`, `тормозит`), in Japanese (`重く
なる`, `4枚中1枚だけ遅い`) and Korean (`시간이 배로 늘어나요`), a member at a share of its peers'
throughput, and a tool's `looks normal` taken for the speaker's explanation. Fixed as classes:
52/69. Left, by reason:
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review39")
_LIMITS_BY_REASON = {
    "members' figures in a CSV, on one line under host names, or in a tool's per-device status "
    "(hashcat's `Speed.#3`), and nvidia-smi's CSV: the table readers split on bars, tabs and "
    "double spaces and name members by GPU, rank and node words": (
        "r39-003",
        "r39-011",
        "r39-035",
        "r39-041",
    ),
    "NVRx's relative-performance report (`Rank=131 Node=dgx-b033 Score=0.58`) without its "
    "warning line": ("r39-004",),
    "llama.cpp's timing blocks and runs listed by night or by job (sacct): streams of figures "
    "over runs that the step readers do not key": ("r39-008", "r39-031", "r39-036"),
    "figures said in words (`半小时`, `6点几`)": ("r39-014", "r39-015"),
    "one card idle told in Korean with counts of cards (`3번 GPU만 30%대 ... 나머지 7장은 99%`)": (
        "r39-019",
    ),
    "a rate over a run said in one sentence with no word of change (`~410 img/sec in epoch 1, "
    "by epoch 10 it's around 260`), or over successive runs listed in a sentence": (
        "r39-026",
        "r39-030",
    ),
    "Lightning's RichProgressBar lines (`1563/1563 0:02:12 • 0:00:00 11.84it/s`): not tqdm's "
    "shape": ("r39-029",),
    "members named by their count (`7 of them land between`, `15 of the 16 tasks`, `One of my "
    "3 P40s`)": ("r39-038", "r39-039", "r39-040"),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
