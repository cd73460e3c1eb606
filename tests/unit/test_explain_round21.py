"""Classes added in the twenty-first corpus round (issue 21): fast at first and slow later, in
Chinese (``刚开始训练速度快，后续训练速度很慢``); a time that keeps increasing; one member with
less of a rate than the others; PyTorch's symbolized native trace (``!!!!!!! Segfault
encountered !!!!!!!``) with frames in NCCL's sources; an NVLink bridge that is not seated.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_31.jsonl; the comment names the source). The negative
controls are the records edited as the comment says, or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_31")

FAST_THEN_SLOW_ZH = _real("0002")  # QTNet: 刚开始训练速度快，后续训练速度很慢
KEEPS_INCREASING = _real("0004")  # deepspeech.pytorch: the time to compute a batch keeps increasing
LESS_THAN_OTHERS = _real("0006")  # a miner: GPU zero pulls much less hashrate than the others
SYMBOLIZED_TRACE = _real("0014")  # vLLM: Segfault encountered, frames in misc/cudawrap.cc
BRIDGE_NOT_SEATED = _real("0022")  # NCCL 2.6.4 hang: the NVLink bridge cannot plug in fully


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (FAST_THEN_SLOW_ZH, Category.STRAGGLER, "straggler.slowness_in_chinese"),
        (KEEPS_INCREASING, Category.STRAGGLER, "straggler.slowness_in_words"),
        (LESS_THAN_OTHERS, Category.STRAGGLER, "straggler.slowness_in_words"),
        (SYMBOLIZED_TRACE, Category.APPLICATION, "process.nccl_frame"),
        (BRIDGE_NOT_SEATED, Category.GPU_HARDWARE, "nvlink.said_faulty"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Step time keeps climbing after epoch 2 on all ranks.", "straggler.slowness_in_words"),
        ("前几个step很快，后面的step很慢", "straggler.slowness_in_chinese"),
        (
            "Nov 11 14:00:32 valve002 multipathd: sdh: rdac checker reports path is down",
            "storage.multipath",
        ),
    ],
)
def test_written_variants_of_the_same_classes(text: str, rule: str) -> None:
    found = first(text)
    assert found is not None and found[1] == rule, found


@pytest.mark.parametrize(
    "text",
    [
        "Over time the validation accuracy keeps increasing which is great to see here.",
        "Every time I run it the memory usage keeps growing until the job gets OOM killed.",
        "刚开始训练时loss下降很快，后面慢慢趋于平稳",  # 慢慢: gradually
        "一开始训练很快，之后慢慢收敛到0.3左右",
        "刚开始训练很快，后来也没有变慢",  # denied
        "刚开始训练速度很快，后来也不慢",
        "Do I need an NVLink bridge if my two cards are not plugged into adjacent slots?",
        "The 3-slot NVLink bridge does not fit my board's 2-slot spacing, so I ordered the "
        "4-slot one.",
    ],
)
def test_written_look_alikes_are_no_slowdown_and_no_fault(text: str) -> None:
    found = first(text)
    assert found is None or found[1] not in {
        "straggler.slowness_in_words",
        "straggler.slowness_in_chinese",
        "nvlink.said_faulty",
    }, (text, found)


def test_a_symbolized_trace_outside_nccl_is_a_plain_segfault() -> None:
    text = "\n".join(
        [
            "!!!!!!! Segfault encountered !!!!!!!",
            '  File "<unknown>", line 0, in cuGraphLaunch',
            '  File "<unknown>", line 0, in at::cuda::CUDAGraph::replay()',
        ]
    )
    found = first(text)
    assert found is not None and found[:2] == (Category.APPLICATION, "process.segfault"), found


PYTHON_WRAPPER_TRACEBACK = "\n".join(
    [
        "Traceback (most recent call last):",
        '  File "/opt/vllm/distributed/device_communicators/pynccl.py", line 120, in all_reduce',
        '  File "/opt/vllm/distributed/device_communicators/pynccl_wrapper.py", line 300, in '
        "ncclAllReduce",
        "KeyboardInterrupt",
    ]
)


@pytest.mark.parametrize(
    "text",
    [
        "作者你好，为什么刚开始训练速度慢，后续训练速度很快？",  # slow at first, then fast
        KEEPS_INCREASING.replace("keeps increasing", "keeps decreasing"),
        LESS_THAN_OTHERS.replace("much less hashrate", "much more hashrate"),
        "The new ring algorithm uses less bandwidth than NCCL's tree on our cluster.",
        BRIDGE_NOT_SEATED.replace("cannot plug in fully", "plugs in fully")
        .replace("it can be fully plugged in", "it is fine")
        .replace("is 3-4mm thicker", "fits"),
        PYTHON_WRAPPER_TRACEBACK,  # a Python frame named like an NCCL call is not a crash in it
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
