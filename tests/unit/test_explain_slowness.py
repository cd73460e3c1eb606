"""The general slowdown rule (diagnosis/explain/rules_slowness.py; its denials and what else rules
a sentence out: slowness_sentences.py; issue 21): a sentence of prose with a word of slowness, a
subject it is about and no denial is a straggler warning.

Positives: sentences of straggler records of the corpus's development part (read by id), which
earlier phrase rules also explain, checked against this rule alone, so the general shape is
shown to cover them; and sentences written here in words no phrase rule reads. Negatives:
denials, slowness that is not training's, plain ``slow`` with nothing compared, log lines,
and every benign record of the development part.
"""

from __future__ import annotations

import pytest

from bench.explain import load, split_of
from diagnosis.explain import explain
from diagnosis.explain.rules import apply
from diagnosis.explain.rules_slowness import RULES, SAID_NORMAL
from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import corpus_text, first

SLOWNESS = next(r for r in RULES if r.id == "straggler.slowness_in_words")


def _reads(text: str) -> bool:
    """Return whether the rule alone finds a slowdown in some line of `text`."""
    return any(apply(SLOWNESS, line) is not None for line in text.splitlines())


@pytest.mark.parametrize(
    ("batch", "number"),
    [
        ("fresh_15", "0010"),  # slow GPUs because of overheat (a scheduling paper's intro)
        ("fresh_16", "0004"),  # rank 41 80 ms behind (the same 80 ms quoted twice: no change)
        ("fresh_16", "0007"),  # the whole code slows down to the slowest node's pace
        ("fresh_18", "0007"),  # a bar 25 % longer than its peers
        ("fresh_17", "0001"),  # horovod: the job became slower, one worker suspected
        ("fresh_17", "0004"),  # GPUs progressing at drastically different paces
        ("fresh_19", "0015"),  # throughput bottlenecked on the slowest node
        ("fresh_22", "0004"),  # training speed (it/s) 2x slower after the first epoch
        ("fresh_22", "0012"),  # step time takes linearly more time with each step
    ],
)
def test_the_general_shape_reads_development_reports_phrase_rules_also_read(
    batch: str, number: str
) -> None:
    assert _reads(corpus_text(batch, number))


@pytest.mark.parametrize(
    ("text", "component"),
    [
        ("Rank 3 is lagging behind the other ranks in every all-reduce on this job.", None),
        ("The throughput of the job dropped by half after we added the third node.", None),
        ("We see a 30% slowdown in training speed on the new cluster.", ComponentKind.JOB),
        ("Since Monday the whole job slows down whenever node 3 joins.", ComponentKind.NODE),
        ("The bandwidth of GPU 2 is very different from the others in our job.", ComponentKind.GPU),
        ("Training is slow only on the second machine.", ComponentKind.NODE),
        ("I don't know why the iteration time doubled after the restart.", ComponentKind.JOB),
        # a member slower than its own past: a fail-slow GPU (no peer comparison needed)
        ("Nicehashminer is always showing GPU 2 much slower than before.", ComponentKind.GPU),
        # no degree, but one member named slower than the others
        ("Nicehashminer is always showing GPU 2 slower, then the other 5 GPUs.", ComponentKind.GPU),
        # figures and names count as neither words nor noise in a sentence
        ("GPU 3 is about 40 percent slower than the other GPUs.", ComponentKind.GPU),
        ("Training got 3x slower after upgrading to PyTorch 2.1.", ComponentKind.JOB),
        ("Training is twice as slow as last week.", ComponentKind.JOB),
    ],
)
def test_a_slowdown_in_general_words_is_a_straggler_warning(
    text: str, component: ComponentKind | None
) -> None:
    found = first(text)
    assert found is not None and found[:2] == (Category.STRAGGLER, SLOWNESS.id), found
    if component is not None:
        assert found[2] == component


@pytest.mark.parametrize(
    "text",
    [
        "The training is not slower after the upgrade, all ranks finish within 1%.",
        "No straggler was detected in the last 24 hours of the job.",
        "We saw no slowdown in training speed on the new cluster.",
        "Loading the dataset from NFS is slow on the first epoch.",  # storage, not training
        "The download of the model weights is slow from our region.",
        "Our inference server is slower than the others after the update.",
        "Training is slow.",  # plain slow, nothing compared or changed
        "How can I make my training run faster on 8 GPUs?",
        "The GPU runs at full speed and the training finishes in 3 hours as expected.",
        "I set the learning rate lower for the second run of the job.",
        "step 100 time 1.2 s lower bound 0.9 slow 0",  # a log line, not prose
        "The T4 GPU is slower than the other GPUs we benchmarked for this model size.",
        "With 16 GPUs each step is about 5% slower than with 8, which is expected.",
        "A 64-GPU all-reduce runs at the speed of its slowest rank.",  # a truism, no report
        "There is a slightly slower node in the pool but the job is fine.",
        "Our training job sometimes does not get slower even after a day.",
        # sentences a reviewer wrote to find false alarms
        "The first step is always slower because of memory allocation and cudnn autotuning.",
        "I don't think the training is slower than before, the numbers look the same.",
        "Training speed went up after we fixed the slow node.",
        "The job was preempted and resumed 10 minutes later on another node.",
        "Each worker process takes longer to start than the others.",
        "The first node took 3 minutes to boot while the rest took only 1 minute.",
        "Some slowdown is expected due to curriculum learning, later batches get slower.",
        "训练速度并没有明显变慢",  # did not noticeably slow down
        "训练变慢是正常的",  # the slowdown is normal
        "模型推理速度下降了",  # inference, not training
    ],
)
def test_denials_other_slowness_and_log_lines_are_silent(text: str) -> None:
    assert not _reads(text)


def test_no_benign_record_of_the_development_part_is_read_as_a_slowdown() -> None:
    benign = [
        r for r in load() if r.label == Category.BENIGN.value and split_of(r.source_key) == "dev"
    ]
    assert len(benign) > 100
    # a slowness one line tells that another line of the same input calls normal (a reply) is
    # read by the rule alone, and dropped by the engine for the other line's explanation; so is
    # one of a text that speaks of stragglers in general (documents.speaks_in_general)
    read = [r for r in benign if _reads(r.text)]
    dropped: tuple[set[str], ...] = ({SAID_NORMAL}, set())
    assert [r.id for r in read if {f.rule for f in explain(r.text)} not in dropped] == []


@pytest.mark.parametrize(
    "text",
    [
        "Each epoch now takes 2 hours instead of 20 minutes on the same cluster.",
        "It is at 30 s per step while it used to take 3 s per step.",
        "I expected about 1 s/step but I get 5 s/step with 8 GPUs.",
        "The rig does 25 H/s instead of 31 H/s since the update.",  # a rate, not hours
    ],
)
def test_a_figure_against_the_jobs_own_past_is_a_slowdown(text: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (Category.STRAGGLER, "slowdown.against_its_past")


@pytest.mark.parametrize(
    "text",
    [
        "Each epoch takes 21 minutes instead of 20 minutes.",  # within the ratio
        "It takes 20 minutes instead of 2 hours now, great.",  # faster
        "The rig does 31 H/s instead of 25 H/s since the update.",
        "I expected about 5 s/step but I get 1 s/step with 8 GPUs.",
    ],
)
def test_a_figure_no_worse_than_its_past_is_silent(text: str) -> None:
    assert not any(f.category == Category.STRAGGLER for f in explain(text))


def test_a_plain_slow_needs_a_member_named_or_a_comparison() -> None:
    found = first("GPU 3 is slow on this job.")
    assert found is not None and found[:2] == (Category.STRAGGLER, SLOWNESS.id)
    assert first("My GPU is slow.") is None


def test_a_slowness_another_line_calls_normal_is_dropped() -> None:
    asked = "My training is getting slower after epoch 3, any idea?"
    reply = "As the replay buffer grows, it is normal that each iteration takes longer."
    assert "straggler.slowness_in_words" in {f.rule for f in explain(asked)}
    assert {f.rule for f in explain(asked + "\n" + reply)} == {SAID_NORMAL}
    # a normal thing of another kind explains nothing
    other = "It is normal that the first epoch compiles the kernels."
    assert "straggler.slowness_in_words" in {f.rule for f in explain(asked + "\n" + other)}
