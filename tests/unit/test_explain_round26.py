"""Classes added in the twenty-sixth corpus round (issue 21): kubelet's `SystemOOM` node event
and the batch schedulers' memory kills (LSF's TERM_MEMLIMIT, PBS's and Slurm's), a BMC's
uncorrectable-ECC assertion, several devices' rates on one line (Claymore), a member at a share
of its peers (``only gets 50% of the other two``), and in Chinese a rate that drops to a figure
(traditional characters too) or an ETA that keeps growing.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_36.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_36")

SYSTEM_OOM = _real("0006")  # k3s: kubectl describe node ... Warning SystemOOM
TRADITIONAL = _real("0008")  # CRNN: 一開始有五十幾 samples/s ... 掉到剩十幾 samples/s
CLAYMORE = _real("0010")  # one R9 Fury at 50% of the other two, and the miner's line
ETA_GROWS = _real("0011")  # Julia ResNet: 为什么ETA是不断增加的
LSF = _real("0015")  # souporcell: TERM_MEMLIMIT
BMC_ECC = _real("0016")  # OpenStreetMap ops: Supermicro BMC uncorrectable ECC, Assertion


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (SYSTEM_OOM, Category.HOST_MEMORY),
        (TRADITIONAL, Category.STRAGGLER),
        (CLAYMORE, Category.STRAGGLER),
        (CLAYMORE.splitlines()[-1], Category.STRAGGLER),  # the miner's line alone
        (ETA_GROWS, Category.STRAGGLER),
        (LSF, Category.HOST_MEMORY),
        ("=>> PBS: job killed: mem 16777216kb exceeded limit 16777216kb", Category.HOST_MEMORY),
        (BMC_ECC, Category.HOST_HARDWARE),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


@pytest.mark.parametrize(
    "text",
    [
        "Memory Device 1 B  12: Uncorrectable ECC - Deassert [Label: Green] [Summary: Sensor is "
        "operating under normal conditions]",
        "ETH: GPU0 26.121 Mh/s, GPU1 26.397 Mh/s, GPU2 26.743 Mh/s",
        "I got one from ebay used and it gets 95% of the other two, which is fine by me.",
        "想问一个问题，为什么ETA是不断减少的",
        SYSTEM_OOM.replace(
            "Warning  SystemOOM                12m (x4 over 25m)    kubelet, "
            "kube-node-9f4e     System OOM encountered",
            "",
        ),
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
