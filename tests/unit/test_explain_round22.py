"""Classes added in the twenty-second corpus round (issue 21): a rate said to be stuck at a low
figure or to be half what it should be; per-card rates of one model from different board
vendors as peers; the mlx5 driver's error completions and perftest's; a progress rate that falls
and stays down (MXNet's Speedometer), read as step times; 速度大幅降低 in Chinese.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_32.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, records of healthy output of the same
round, or lines written here.
"""

from __future__ import annotations

import re
from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_32")

STUCK_AT = _real("0000")  # T-Rex: one of two RTX 3070s stuck at 24 MH/s
HALF_THE_RATE = _real("0001")  # T-Rex: 2 of 4 cards get half the hashrate
VENDORS = _real("0002")  # ccminer: GTX 1070s of three vendors, two at half the rate
ERROR_CQE = _real("0009")  # mlx5: responder error cqe on a RoCE port
PERFTEST = _real("0011")  # ib_write_bw: completion with error, status 4
SPEEDOMETER = _real("0018")  # mxnet-ssd: 95 samples/sec, then 46 and 23
SPEED_FELL_ZH = _real("0028")  # mmdetection: 单卡GPU利用率为0 ... 训练速度大幅降低
RISING = _real("0020")  # healthy: an MXNet rate that climbs from 15 to 513 samples/sec
STEADY = _real("0030")  # healthy: tf_cnn_benchmarks at 133-135 images/sec


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (STUCK_AT, Category.STRAGGLER, "straggler.slowness_in_words"),
        (HALF_THE_RATE, Category.STRAGGLER, "straggler.slowness_in_words"),
        (VENDORS, Category.STRAGGLER, "peers.slow_device"),
        (ERROR_CQE, Category.NETWORK, "rdma.error_completion_dump"),
        (PERFTEST, Category.NETWORK, "rdma.error_completion_dump"),
        (SPEEDOMETER, Category.STRAGGLER, "training.step_slowdown"),
        (SPEED_FELL_ZH, Category.STRAGGLER, "straggler.slowness_in_chinese"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def _steady(text: str) -> str:
    """The Speedometer log with every rate made 95.0 samples/sec (edited)."""
    return re.sub(r"Speed: [\d.]+ samples/sec", "Speed: 95.00 samples/sec", text)


@pytest.mark.parametrize(
    "text",
    [
        RISING,
        STEADY,
        _steady(SPEEDOMETER),
        STUCK_AT.replace("stuck at 24 MH/s", "steady at 62 MH/s"),
        HALF_THE_RATE.replace("half the hashrate", "the same hashrate"),
        VENDORS.replace("3067.58", "7401.10").replace("3066.29", "7388.02"),
        "训练速度没有大幅降低，和单卡差不多",  # denied
        "infiniband mlx5_0: mlx5_ib_add:4213:(pid 1234): counters are not supported on this port",
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        " 65536      5000             11536.05            11535.92             0.184575",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
