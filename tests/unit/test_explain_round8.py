"""Classes added in the eighth corpus round (issue 21): per-member score maps, figures listed
per member, the slowest member N times the fastest, a member a measured time behind, a
sentence wrapped by an editor, and the OFI plugin or EFA test finding no EFA provider.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_16.jsonl; the comment names the source). The negative
controls are the same texts with the figures made even or the verdict words changed, which
the comment says.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.records import records
from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_16")

SCORES = _real("0000")  # NVIDIA/nvidia-resiliency-ext straggler usage guide (rank 6 at 0.591)
RESPECTIVELY = _real("0002")  # NVIDIA/nvbandwidth#6 (host to device 0 at a quarter)
SLOWEST = _real("0003")  # gonka-ai/gonka#818 (slowest node ~4x the fastest, wrapped prose)
BEHIND = _real("0004")  # dev.to Ingero post (rank 41 80 ms behind the cohort)
OFI = _real("0016")  # aws/aws-ofi-nccl#67 (no optimal provider)
EFA_TEST = _real("0017")  # aws-samples/aws-efa-nccl-baseami-pipeline#2 (efa_installer test)


@pytest.mark.parametrize(
    ("text", "rule", "component"),
    [
        (SCORES, "straggler.score_map", ComponentKind.GPU),
        (RESPECTIVELY, "straggler.listed_figures", ComponentKind.GPU),
        (SLOWEST, "straggler.slowest_times_fastest", ComponentKind.NODE),
        (BEHIND, "straggler.member_late", ComponentKind.JOB),
        (OFI, "nic.efa_provider_missing", ComponentKind.NIC),
        (EFA_TEST, "nic.efa_provider_missing", ComponentKind.NIC),
    ],
)
def test_each_class_finds_its_record(text: str, rule: str, component: ComponentKind) -> None:
    found = first(text)
    assert found is not None and found[1:] == (rule, component), found
    expected = Category.NETWORK if rule.startswith("nic.") else Category.STRAGGLER
    assert found[0] == expected


# the same texts with even figures, or saying the opposite (edited: the comment says how)
EVEN_SCORES = SCORES.replace("0.591", "0.991").replace("0.788", "0.988")
EVEN_BANDWIDTH = RESPECTIVELY.replace("14.2,", "56.2,")
FASTEST_CLOSE = SLOWEST.replace("~4×", "~1.2×")
NOT_BEHIND = BEHIND.replace("rank 41 is 80 ms behind the cohort", "no rank is behind")


@pytest.mark.parametrize("text", [EVEN_SCORES, EVEN_BANDWIDTH, FASTEST_CLOSE, NOT_BEHIND])
def test_the_same_texts_with_even_figures_stay_silent(text: str) -> None:
    assert alarms(text) == []


def test_a_score_map_needs_enough_members_and_scores_between_0_and_1() -> None:
    assert alarms("scores: {0: 0.99, 1: 0.41, 2: 0.98}") == []  # three members: too few
    assert alarms("elapsed: {0: 99.0, 1: 41.0, 2: 98.0, 3: 97.5}") == []  # not scores
    assert alarms("Relative GPU performance scores: {0: 0.99, 1: 0.41, 2: 0.98, 3: 0.97}")


def test_listed_figures_follow_what_they_measure() -> None:
    # a time far above the others' is slow; the same figures as a bandwidth are not
    times = "the step time of rank 0, 1, 2 and 3 were 1.1, 1.0, 3.2 and 1.05 s respectively"
    found = first(times)
    assert found is not None and found[1] == "straggler.listed_figures"
    rates = "the bandwidth of GPU 0, 1, 2 and 3 were 1.1, 1.0, 3.2 and 1.05 GB/s respectively"
    assert alarms(rates) == []
    counts = "the ids of node 0, 1, 2 and 3 were 11, 10, 32 and 15 respectively"
    assert alarms(counts) == []  # neither a rate nor a time


def test_an_editor_wrapped_sentence_is_one_record_but_log_lines_are_not() -> None:
    prose = (
        "CV=0.68 means the slowest node delivers the same request in ~4x the time of\n"
        "the fastest. Current routing sends both the same share of requests."
    )
    assert [r.body for r in records(prose)] == [prose.replace("\n", " ")]
    logs = (
        "nvme nvme0: I/O 210 QID 4 timeout, completion polled\n"
        "nvme nvme0: I/O 195 QID 4 timeout, completion polled"
    )
    assert len(list(records(logs))) == 2
    sentence_then_log = (
        "the job was running fine until this appeared in the kernel log of\n"
        "node-3: mlx5_core 0000:3b:00.0: cmd_work_handler timeout"
    )
    assert len(list(records(sentence_then_log))) == 2
