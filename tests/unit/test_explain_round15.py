"""Classes added in the fifteenth corpus round (issue 21): durations on a clock (``1:20 min``), a
time judged from its best earlier figure, rates quoted as they fell (hash rates, samples/s), a
time said to get longer and longer, some members given a figure apart from the others' (or
most of them), either way, the NFS lock manager's failed statd monitor calls (``SM_MON
failed``), the cells of xmr-stak's HASHRATE REPORT table in the slow-peer check, and a kernel
crash's lone instruction-pointer line (``RIP: 0010:func+0x1b/0x350``).

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_25.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.quantities import figures, quoted_rates
from diagnosis.explain.rules_slowdown import rose
from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_25")

CLOCK = _real("0000")  # RVC-Project WebUI (1:20 min, then 6:30 and 10:00 min an epoch)
SOME_BELOW = _real("0007")  # T-Rex (some gpus in the 30s or early 50s, the others 58 mh/s)
RATE_DROPPED = _real("0009")  # NiceHash QuickMiner (41 MH/s, then dropped to 32-33 MH/s)
MOST_AND_SOME = _real("0011")  # WildRig (most cards 450-480MH, some only 220MH)
RATE_FROM_TO = _real("0012")  # nheqminer (Sol/s rate drops from 26 to 20)
LONGER_AND_LONGER = _real("0014")  # CenterNet (data and net time go longer and longer)
PERF_STRANGE = corpus_text("fresh_17", "0003")  # silentarmy (first cards 100-110, other 2 35-40)
LONE_RIP = corpus_text("fresh_9d", "0003")  # open-gpu-kernel-modules#1107 (RIP in nvidia)
SM_MON = _real("0028")  # nfs-ganesha (NLM SM_MON failed: RPC: Timed out)
TABLE = _real("0006")  # xmr-stak (one card's two threads at ~215 H/s, the others ~500)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (CLOCK, Category.STRAGGLER, "slowdown.step_time_rose"),
        (SOME_BELOW, Category.STRAGGLER, "straggler.members_apart"),
        (RATE_DROPPED, Category.STRAGGLER, "slowdown.rate_fell"),
        (MOST_AND_SOME, Category.STRAGGLER, "straggler.members_apart"),
        (RATE_FROM_TO, Category.STRAGGLER, "slowdown.rate_fell"),
        (LONGER_AND_LONGER, Category.STRAGGLER, "straggler.slowness_in_words"),
        (SM_MON, Category.HOST_STORAGE, "storage.nfs"),
        (LONE_RIP, Category.HOST_HARDWARE, "kernel.crash_rip"),
        (  # the older format, with the address twice
            "RIP: 0010:[<ffffffff8107a7d1>]  [<ffffffff8107a7d1>] warn_slowpath_common+0x81/0xa0",
            Category.HOST_HARDWARE,
            "kernel.crash_rip",
        ),
        (TABLE, Category.STRAGGLER, "peers.slow_device"),
        (PERF_STRANGE, Category.STRAGGLER, "straggler.members_apart"),
        # the slow group named as the others (edited: the slow ones are the many)
        (
            "Two nodes take 4 s per step while the rest take 12 s.",
            Category.STRAGGLER,
            "straggler.members_apart",
        ),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def test_clock_durations_are_read_and_a_time_is_judged_from_its_best() -> None:
    assert figures("It only took 1:20 min, then it took 6:30 min and then 2:05 h") == [
        80.0,
        390.0,
        2 * 3600.0 + 5 * 60.0,
    ]
    assert figures("at 12:30 the epoch took 5 min") == [300.0]  # a time of day: no duration
    assert rose([1.7, 0.7, 1.5])  # fell to its best first, then doubled from it
    assert not rose([1200.0, 390.0, 450.0])  # compilation first, then steady


def test_rates_are_read_with_their_ranges_and_bare_figures() -> None:
    assert quoted_rates("around 41 MH/s ... dropped to 32-33 MH/s") == [41e6, 32.5e6]
    assert quoted_rates("Sol/s rate drops from 26 to 20") == [26.0, 20.0]
    assert quoted_rates("the learning rate drops from 0.1 to 0.01") == []


@pytest.mark.parametrize(
    "text",
    [
        CLOCK.replace("6:30 min", "1:25 min").replace("10:00 min", "1:30 min"),  # barely rose
        RATE_DROPPED.replace("32-33 MH/s", "40 MH/s"),  # within the rate's jitter
        RATE_DROPPED.replace("dropped to", "stayed at").replace("32-33", "41"),  # no fall
        "the learning rate drops from 0.1 to 0.01 after epoch 30 as scheduled",
        "The hash rate dropped from 30.5 to 29.9 MH/s after the update, nothing to worry about.",
        "The epoch time increased from 100 s to 105 s after the update.",
        MOST_AND_SOME.replace("220MH", "460MH"),  # the same figure
        SOME_BELOW.replace("in the 30s or early 50s", "at 57 or 58"),  # within the others'
        "Some GPUs run at 31 MH/s while the others are getting 31.5 MH/s.",
        "I have 3 GPUs and the others are in another box with 2 nodes.",  # no figures compared
        LONGER_AND_LONGER.replace("goes longer and longer", "stays the same"),
        "Aug 19 13:00:04 srv rpc.statd[811]: Version 2.6.1 starting",
        "RIP: 0033:0x7f1c2d3e4f50",  # a user-space address (a process's, not the kernel's)
        TABLE.replace("214.7", "504.7").replace("214.6", "505.6"),  # every thread even
        TABLE.replace("HASHRATE REPORT", "REPORT"),  # rows outside the tool's table
        TABLE.replace("HASHRATE REPORT", "HASHRATE").replace(
            "|  6 |  214.7", "Totals\n|  6 |  214.7"
        ),
        "Aug 19 13:00:04 srv ganesha.nfsd[27399]: nsm_connect :NLM :EVENT :Monitor SM_MON ok",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
