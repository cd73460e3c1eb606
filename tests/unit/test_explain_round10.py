"""Classes added in the tenth corpus round (issue 21): a job whose step, iteration or epoch time
rises and stays up, told in figures or in words; someone who found members slow; a member a
percentage slower than its peers; stragglers named in the plural; NVLink errors and inactive
links said in prose.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_18.jsonl; the comment names the source). The negative
controls are the same texts with the verdict words changed, which the comment says, and lines
written here for what the rules must leave alone.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.explain.quantities import figures
from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import alarms, corpus_text, first

_real = partial(corpus_text, "fresh_18")

FOUND_SLOW = _real("0000")  # sgl-project/sglang#10508 (found 2 gpus to be slow)
EPOCHS = _real("0001")  # junyanz/pytorch-CycleGAN-and-pix2pix#281 (390 s, then 1200 s)
ITERS = _real("0002")  # multimedia-eurecat/ELFW#5 (6 seconds, now 30 seconds per iteration)
S_PER_IT = _real("0003")  # ostris/ai-toolkit#225 (from 10 to 250 s/it)
GROWS = _real("0004")  # facebookresearch/mmf#27 (training time increases every iteration)
PERCENT = _real("0007")  # factryze.ai (a bar 25 % longer than its peers)
PLURAL = _real("0008")  # arxiv.org (node-level straggler GPUs)
NVLINK_PROSE = _real("0015")  # NVIDIA/open-gpu-kernel-modules#1355 (uncorrectable NVLink error)
LINKS_INACTIVE = _real("0017")  # ai-infrastructure.net runbook (links inactive)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (FOUND_SLOW, Category.STRAGGLER, "straggler.found_slow"),
        (EPOCHS, Category.STRAGGLER, "slowdown.step_time_rose"),
        (ITERS, Category.STRAGGLER, "slowdown.step_time_rose"),
        (S_PER_IT, Category.STRAGGLER, "slowdown.step_time_rose"),
        (GROWS, Category.STRAGGLER, "slowdown.time_said_to_grow"),
        (PERCENT, Category.STRAGGLER, "straggler.percent_behind_peers"),
        (PLURAL, Category.STRAGGLER, "straggler.called_straggler"),
        (NVLINK_PROSE, Category.GPU_HARDWARE, "cuda.nvlink"),
        (LINKS_INACTIVE, Category.GPU_HARDWARE, "nvlink.links_said_down"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def test_figures_are_read_in_seconds_in_order() -> None:
    assert figures("each iter took 6 seconds, then 500ms, now 30 s per iteration") == [
        6.0,
        0.5,
        30.0,
    ]
    assert figures("it/s goes up from 10 to 250 s/it") == [10.0, 250.0]
    assert figures("epoch 1 took 2 min, epoch 9 took 300s") == [120.0, 300.0]


def test_the_members_found_slow_are_named() -> None:
    found = first("we noticed two nodes were much slower after the switch firmware update")
    assert found is not None and found[1:] == ("straggler.found_slow", ComponentKind.NODE)


# the same texts saying the opposite (edited: the comment says how)
EPOCHS_FASTER = EPOCHS.replace("1200s", "450s").replace(  # rose less than twofold,
    "this slowdown",
    "this",  # and not called a slowdown (rules_slowness reads the word)
)
EPOCHS_WARMUP = "The first epoch took 1200s (compilation), then every epoch takes 390s."
NOT_GROWING = GROWS.replace("the training time increases", "the training time does not increase")
FASTER_PEERS = PERCENT.replace("25 % longer", "5 % longer")  # within the peers' jitter
FOUND_NONE = FOUND_SLOW.replace("found 2 gpus to be slow", "never found gpus to be slow")
NO_STRAGGLERS = "We see no straggler GPUs in this run; all ranks finish within 2 %."
ONE_LINK_DOWN = "GPU 0's NvLink link 0 is currently down"  # DCGM's warning: benign (README)
LINKS_ON_PCIE = "PCIe links down: 2 links are down on the switch"  # not NVLink


@pytest.mark.parametrize(
    "text",
    [
        EPOCHS_FASTER,
        EPOCHS_WARMUP,
        NOT_GROWING,
        FASTER_PEERS,
        FOUND_NONE,
        NO_STRAGGLERS,
        ONE_LINK_DOWN,
        LINKS_ON_PCIE,
        # a profile's phases, not one time changing; a speed that grows is not a slowdown
        "step 10: data 3ms, forward 40ms, backward 120ms",
        "training speed increases from 2 s/it to 1 s/it after the warm-up",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    found = first(text)
    assert found is None or found[0] not in (Category.STRAGGLER, Category.GPU_HARDWARE), found
    assert alarms(text) == []
