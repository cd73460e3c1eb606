"""Straggler classes added in the seventh corpus round (issue 21): reports in people's words
and tables that single one member out.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_15.jsonl; the comment names the source). The negative
controls are the same kinds of text saying nothing is slow: real where the corpus has them,
otherwise the real text with the verdict words changed, which the comment says.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.rules_straggler import UTIL_SKEW
from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_15")

STRUGGLER = _real("0001")  # facebookresearch/spdl docs (optimization guide, "The Struggler")
LATE_BATCH = _real("0002")  # ultralytics/ultralytics#8566
THROTTLED = _real("0004")  # jingchaozhang.github.io (FSDP on H100 nodes, two of ten throttling)
STRAGGLING_NODE = _real("0005")  # dev.to (a vendor's post on the slow node of a 4-node job)
LATE_BARRIER = _real("0006")  # www.codcompass.com (8-GPU all-reduce, one rank late)
CLUSTERKIT = _real("0007")  # Azure/azurehpc#410 (ClusterKit report)
UTILISATION = _real("0008")  # facebookarchive/fb.resnet.torch#61
FEW_SLOW = _real("0010")  # kubeflow/kubeflow#68
OUTLIER = _real("0000")  # awslabs/ai-on-sagemaker-hyperpod nccl-tests guide (bad node detection)


@pytest.mark.parametrize(
    ("text", "rule", "component"),
    [
        (STRUGGLER, "straggler.called_straggler", ComponentKind.JOB),
        (STRAGGLING_NODE, "straggler.called_straggler", ComponentKind.NODE),
        (THROTTLED, "straggler.few_members_slow", ComponentKind.GPU),
        (FEW_SLOW, "straggler.few_members_slow", ComponentKind.GPU),
        (LATE_BARRIER, "straggler.member_late", ComponentKind.JOB),
        (LATE_BATCH, "straggler.member_late", ComponentKind.GPU),
        (OUTLIER, "straggler.outlier_row", ComponentKind.NODE),
        (CLUSTERKIT, "straggler.outlier_row", ComponentKind.NODE),
        (UTILISATION, "straggler.utilisation_skew", ComponentKind.GPU),
    ],
)
def test_a_report_singling_out_one_slow_member_is_a_straggler(
    text: str, rule: str, component: ComponentKind
) -> None:
    assert first(text) == (Category.STRAGGLER, rule, component)


@pytest.mark.parametrize(
    "text",
    [
        # the spdl sentence denied (changed): no member is called a straggler
        "The plot suggests that there is no straggler rank: every rank is fast enough.",
        "Straggler detection found no straggling node in the last 100 steps.",  # changed
        # the kubeflow sentence without slowness (changed)
        "We found that one GPU per node is enough for the distributed DL frameworks we run.",
        # a single slow GPU with nothing about a job or other members (changed)
        "A single GPU can be slow to boot.",
        # the nccl-tests table with every row within the threshold (changed: node3 at -0.9 %)
        OUTLIER.replace("310.00", "362.00").replace("-0.1512   OUTLIER", "-0.0090   OK"),
        # utilisation of two GPUs close to each other (changed)
        UTILISATION.replace("less than 20%", "about 85%"),
        # a checkpoint logged by a rank some seconds after a step: no "late"
        "rank 3 saved its checkpoint shard in 12 s",
    ],
)
def test_the_same_texts_saying_nothing_is_slow_stay_silent(text: str) -> None:
    assert alarms(text) == []


def test_utilisation_skew_needs_its_ratio() -> None:
    even = UTILISATION.replace("less than 20%", f"less than {90 / UTIL_SKEW + 1:.0f}%")
    assert alarms(even) == []
    assert first(UTILISATION.replace("less than 20%", "less than 10%")) == (
        Category.STRAGGLER,
        "straggler.utilisation_skew",
        ComponentKind.GPU,
    )


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            "At some point the GPU utilization drops, with 2 units at 100%, and the rest at 0%.",
            "straggler.one_member_idle",
        ),
        (
            "There is always one card that is therefore at a low speed.",
            "straggler.slowness_in_words",
        ),
    ],
)
def test_members_set_apart_from_the_rest(text: str, rule: str) -> None:
    assert alarms(text) == [rule], text


@pytest.mark.parametrize(
    "text",
    [
        "With 4 GPUs at 100% and the others at 0% while I only use 4 of 8.",
        "I only use 2 GPUs, so 2 GPUs at 100% and the rest at 0%.",
        "My one card is at a low speed when I game.",
    ],
)
def test_members_apart_by_design_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
