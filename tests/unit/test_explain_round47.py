"""Classes of the forty-seventh round's development misses (fresh_60, fresh_61), each read as a
class: a ZFS pool degraded, one card nearly idle beside the other in Chinese (training or
inference), an inference speed that falls as the requests since the start grow (Chinese), a
service's time for a request against what it normally takes, delays said to be increasing; and
its false alarm's class: a reply that gives the slowness as the consequence of the schedule or
the setup, and a run on several cards against one card (two setups)."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, round_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_60", "0003", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_60", "0002", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_60", "0005", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_60", "0009", Category.STRAGGLER, "slowdown.against_its_past"),
        ("fresh_60", "0017", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_61", "0000", Category.HOST_STORAGE, "storage.zpool_degraded"),
    ]
)


@pytest.mark.parametrize(
    "text",
    [
        # the slowness given as the schedule's or the setup's consequence
        "Why is the speed decreasing?\nAfter 2K iterations the second loss is used. So the "
        "speed will be slower after that.",
        "Iterations will always be slower on multiple cards due to the need to synchronize.",
        "With 3 GPUs the training was slower than a single card.",
        # a healthy pool, one card only, a request that takes what it normally takes
        "  pool: tank\n state: ONLINE\n  scan: scrub repaired 0B in 00:10:12 with 0 errors",
        "我只有一张卡，推理的时候利用率很低",
        # a speed that falls as the work per step grows: the speaker's setting
        "训练速度随着batch size增加而降低",
        "Each request takes 5 s, while normally it would take about 5 s too.",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
