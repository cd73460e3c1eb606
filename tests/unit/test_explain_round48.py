"""Classes of the forty-eighth round's development misses (fresh_62, in Chinese, and fresh_63),
each read as a class: one card busy and the others idle in Chinese, in its several wordings
(`一张跑满，一张空载`, `只有一张卡有利用率`, `另外一个GPU利用率为0`, `只有第一块卡的gpu利用率高，
其他的很低`, `0卡占用率51% 其它7张卡占用率0-1`), a speed that drops suddenly during inference, a
second inference of the same input that takes twice as long, and a multi-card run that stops
after a while with its GPUs at 0 (a hang)."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, round_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_62", "0001", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0002", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0003", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0004", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0007", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0010", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0011", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        ("fresh_62", "0018", Category.HANG, "stalled.said_elsewhere"),
    ]
)


@pytest.mark.parametrize(
    "text",
    [
        # one card by the speaker's choice; low utilisation said of no member; all busy
        "我只用了一张卡，所以一张跑满，一张空载",
        "显卡利用率很低",
        "GPU利用率一直是100%，速度正常",
        # a run that stopped and came back by itself
        "训练一段时间后卡住了，10 秒后自己恢复了",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
