"""Classes added in the ninth corpus round (issue 21): a person's sentence naming a segfault
and NCCL together, CUDA's contained error, members said to move at different paces, and a
judged rule trying every match in a line.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_17.jsonl; the comment names the source). The negative
controls are the same texts with the verdict words changed, which the comment says.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_17")

INIT_SEGFAULT = _real("0007")  # NVIDIA/nccl#2159 (a segfault inside ncclCommInitRank)
BACKEND_SEGFAULT = _real("0009")  # pytorch/pytorch#11170 (NCCL backend, then a segfault)
CONTAINED = _real("0012")  # marin-community/marin#8934 (CUDA_ERROR_CONTAINED over nvlink)
SLOW_WORKER = _real("0001")  # horovod/horovod#867 (one of the workers, then one worker slower)
PACES = _real("0004")  # horovod/horovod#708 (GPUs progressing at different paces)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (INIT_SEGFAULT, Category.APPLICATION, "process.nccl_segfault"),
        (BACKEND_SEGFAULT, Category.APPLICATION, "process.nccl_segfault"),
        (CONTAINED, Category.GPU_HARDWARE, "cuda.contained"),
        (SLOW_WORKER, Category.STRAGGLER, "straggler.few_members_slow"),
        (PACES, Category.STRAGGLER, "straggler.uneven_pace"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def test_the_pace_names_the_members_it_speaks_of() -> None:
    found = first("the ranks are training at very different speeds since the restart")
    assert found is not None and found[2] == ComponentKind.JOB
    found = first("our 8 GPUs run at different rates in the same job")
    assert found is not None and found[2] == ComponentKind.GPU


# the same texts saying the opposite, or without NCCL (edited: the comment says how)
NO_NCCL = BACKEND_SEGFAULT.replace("NCCL", "Gloo")  # a segfault, but not NCCL's
SAME_PACE = PACES.replace("are progressing at drastically different paces", "keep one pace")
NOT_DIFFERENT = PACES.replace("are progressing", "are not progressing")
NO_SLOWER = SLOW_WORKER.replace("one worker is slower", "one worker is missing").replace(
    "became slower",
    "became unstable",  # the job slower is a report too (rules_slowness)
)


@pytest.mark.parametrize("text", [SAME_PACE, NOT_DIFFERENT, NO_SLOWER])
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == []


def test_a_segfault_without_nccl_is_not_blamed_on_nccl() -> None:
    found = first(NO_NCCL)
    assert found is None or found[1] != "process.nccl_segfault"
    assert alarms("NCCL INFO Bootstrap : Using eth0:10.4.167.14<0>") == []


def test_a_judged_rule_tries_every_match_in_the_line() -> None:
    # the first "one ... worker" is turned down (nothing slow in it), the second is taken
    line = "one of the workers restarted; later one worker is slower than the rest of the job"
    found = first(line)
    assert found is not None and found[1] == "straggler.few_members_slow"
    assert alarms("one of the workers restarted; later one worker restarted again") == []
