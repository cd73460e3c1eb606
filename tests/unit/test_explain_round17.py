"""Classes added in the seventeenth and eighteenth corpus rounds (issue 21): a rate per second
spelled out that decreases (``iterations/s ... decrease``), ``越跑越慢`` (slower the longer
it runs), a pronoun for a step time that grows, a slowdown said to be expected (an
explanation, not a report), a hung task whose name and pid were redacted, Slurm's count of a
step's OOM kills, and ProcessGroupNCCL's timeout in blocking wait; then a step said to take a
measured time longer on one member, and the NVMe timeout that names its opcode (``I/O 193 (I/O
Cmd) QID 14``).

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_27.jsonl and fresh_28.jsonl; the comment names the
source). The negative controls are the records edited as the comment says, or lines written
here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_27")

ITS_DECREASE = _real("0001")  # Lightning (iterations/s decrease by a factor of about 2-5)
SLOWER_AS_IT_RUNS = _real("0003")  # LLaMA-Factory (2.5s/it, 然后越跑越慢)
IT_GROWS = _real("0004")  # kohya_ss (1.8 s/it, then it grows by ~2 seconds per iteration)
EXPECTED = _real("0013")  # DeepSpeech maintainer: some slowdown is expected (benign)
REDACTED_TASK = _real("0018")  # Univention: INFO: task $NAME:$PID blocked for more than 120 s
SLURM_OOM = _real("0024")  # slurmstepd: Detected 1 oom-kill event(s) in StepId=191.batch
BLOCKING_WAIT = _real("0026")  # diffusers: WorkNCCL(...) timed out in blocking wait


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (ITS_DECREASE, Category.STRAGGLER, "straggler.slowness_in_words"),
        (SLOWER_AS_IT_RUNS, Category.STRAGGLER, "straggler.slowness_in_chinese"),
        (IT_GROWS, Category.STRAGGLER, "straggler.slowness_in_words"),
        (REDACTED_TASK, Category.HOST_HARDWARE, "kernel.hung_task"),
        (SLURM_OOM, Category.HOST_MEMORY, "host.oom_killer"),
        (BLOCKING_WAIT, Category.HANG, "hang.watchdog_timeout"),
        # a question whether it is expected still reports the slowdown
        (
            "Training got 3x slower after the upgrade. Is this expected?",
            Category.STRAGGLER,
            "straggler.slowness_in_words",
        ),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


@pytest.mark.parametrize(
    "text",
    [
        EXPECTED,  # the maintainer explains the slowdown as expected
        "The loss starts at 2.1 and as the training continues it grows every 1000 steps.",
        "本地服务器跑llama-factory，启动的时候2.5s/it，一直稳定在2.5 s/it",  # steady
        "slurmstepd: error: Detected 0 oom-kill event(s) in StepId=191.batch cgroup.",
        "export TORCH_NCCL_BLOCKING_WAIT=1 makes a timed out collective raise in blocking wait",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


# the eighteenth round (tests/fixtures/explain/corpus/fresh_28.jsonl, development part)
MINUTE_LONGER = corpus_text("fresh_28", "0005")  # Horovod: a minute longer per epoch on one
NVME_OPCODE = corpus_text("fresh_28", "0010")  # NVMeVirt: I/O 193 (I/O Cmd) QID 14 timeout


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (MINUTE_LONGER, "straggler.slowness_in_words"),
        (NVME_OPCODE, "storage.nvme"),
    ],
)
def test_the_eighteenth_rounds_classes(text: str, rule: str) -> None:
    found = first(text)
    assert found is not None and found[1] == rule, found
