"""Classes added in the eleventh corpus round (issue 21): per-device hash rates; a member slower
than the others, below the rest's figure, performing badly, or pacing the job; step times quoted
over several sentences; nvidia-smi's Fabric block; NVLink said faulty; segfaults named SIGSEGV
with NCCL and Python's faulthandler.

The positive texts are records of the development part of the corpus, read by id
(tests/fixtures/explain/corpus/fresh_19.jsonl and fresh_20.jsonl; the comment names the
source). The negative controls are the same texts with the verdict words or figures changed,
which the comment says, and lines written here for what the rules must leave alone.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category, ComponentKind
from tests.explain_helpers import alarms, corpus_text, first

_slow = partial(corpus_text, "fresh_19")
_weak = partial(corpus_text, "fresh_20")

HASH_LINES = _slow("0000")  # zjazz/zjazz_cuda_miner#10 (#0 at 2.9 MH/s, peers at 7.2)
ONE_BELOW = _slow("0002")  # ethereum-mining/ethminer#855 (GPUs 1 - 5 at 31.6, GPU/0 at 25)
ONE_OF_MY = _slow("0004")  # nicehash/NiceHashMiner-Archived#964 (one of my gpu low hashrate)
OTHERS_WAIT = _slow("0005")  # NVIDIA/nccl#893 (a GPU slower than the others, which wait)
SECOND_NODE = _slow("0006")  # horovod/horovod#124 (bad performance on the second node)
TWO_SENTENCES = _slow("0007")  # daveredrum/Scan2Cap#9 (2 seconds, then about a minute)
HOURS = _slow("0011")  # FoundationVision/ByteTrack#60 (30 minutes, now 8 hours per epoch)
CARDS = _slow("0014")  # fireice-uk/xmr-stak#466 (2nd and 3rd cards lower hashrate)
SLOWEST = _slow("0015")  # www.aiexpert.news (bottlenecked on the slowest node)
FABRIC = _weak("0000")  # NVIDIA/gpu-operator#2511 (Fabric State: In Progress)
NVLINK_SAID = _weak("0001")  # NVIDIA/open-gpu-kernel-modules#1118 (an error in the NVLink)
SIGSEGV_IN = _weak("0004")  # NVIDIA/nccl#2186 (SIGSEGV in `ncclCommInitRank`)
FAULTHANDLER = _weak("0005")  # sgl-project/sglang#28299 (interleaved faulthandler dumps)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (HASH_LINES, Category.STRAGGLER, "peers.slow_device"),
        (ONE_BELOW, Category.STRAGGLER, "straggler.one_below_the_rest"),
        (ONE_OF_MY, Category.STRAGGLER, "straggler.few_members_slow"),
        (OTHERS_WAIT, Category.STRAGGLER, "straggler.slower_than_the_others"),
        (SECOND_NODE, Category.STRAGGLER, "straggler.member_performs_badly"),
        (TWO_SENTENCES, Category.STRAGGLER, "slowdown.step_time_rose"),
        (HOURS, Category.STRAGGLER, "slowdown.step_time_rose"),
        (CARDS, Category.STRAGGLER, "straggler.member_performs_badly"),
        (SLOWEST, Category.STRAGGLER, "straggler.paced_by_the_slowest"),
        (FABRIC, Category.GPU_HARDWARE, "nvlink.fabric_state"),
        (NVLINK_SAID, Category.GPU_HARDWARE, "nvlink.said_faulty"),
        (SIGSEGV_IN, Category.APPLICATION, "process.nccl_segfault"),
        (FAULTHANDLER, Category.APPLICATION, "process.segfault"),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (category, rule), found


def test_the_member_performing_badly_is_named() -> None:
    found = first(SECOND_NODE)
    assert found is not None and found[2] == ComponentKind.NODE
    found = first(CARDS)
    assert found is not None and found[2] == ComponentKind.GPU


# the same texts with the verdict taken out (edited: the comment says how)
EVEN_HASH = HASH_LINES.replace("2889.51 kH/s", "7189.51 kH/s")  # GPU #0 as fast as its peers
CLOSE_BELOW = ONE_BELOW.replace("25 Mhs", "30 Mhs")  # 5 % below the rest: jitter
SLIGHTLY = OTHERS_WAIT.replace("which is slower", "which is slightly slower")
# a model compared with others, no degree and no one waiting: not a member of one job
NO_WAIT = "The T4 GPU is slower than the other GPUs we benchmarked for this model size"
GOOD_NODE = SECOND_NODE.replace("really bad performance", "really good performance")
STEADY = TWO_SENTENCES.replace("about a minute", "about 3 seconds")  # 1.5x: not twofold
FABRIC_DONE = FABRIC.replace("In Progress", "Completed")  # status N/A: a GPU without a fabric
FABRIC_OK = "    Fabric\n        State   : Completed\n        Status  : Success\n"
STATUS_ELSEWHERE = "Job\n    State   : In Progress\n    Status  : Insufficient Resources\n"
NO_NVLINK_ERROR = NVLINK_SAID.replace("has an error in the NVLink", "has no error in the NVLink")


@pytest.mark.parametrize(
    "text",
    [
        EVEN_HASH,
        CLOSE_BELOW,
        SLIGHTLY,
        NO_WAIT,
        GOOD_NODE,
        STEADY,
        FABRIC_DONE,
        FABRIC_OK,
        STATUS_ELSEWHERE,
        NO_NVLINK_ERROR,
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
