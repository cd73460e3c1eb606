"""Classes added after the thirty-second corpus round (issue 21), written from its development
records (tests/fixtures/explain/corpus/fresh_42*.jsonl): a mining card's figure against the
one it should reach (`30mhs rather then ~68mhs`), a computing power that drops, a card that
downshifts, a hash rate in miners' slang (`33Mh`), a time of each iteration said to increase
gradually, a jump in the step time as a noun, a Chinese time that keeps growing to a figure a
clause away, all normal at first before it slows, inference slower as it runs or on one of two
identical machines, calculations that slow as they progress, DeepStream's frame rates, a local
NVMe disk that never appeared, libceph's monitor connect errors, the k8s device plugin's NVML
error, pciehp's lower-case slot Link Down, Talos' OOM controller, c10d's connect timeouts.

The positive texts are records of the development part of the corpus, read by id (the comment
names the source). The negative controls are records of the same round or lines written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_a = partial(corpus_text, "fresh_42")
_b = partial(corpus_text, "fresh_42b")
_c = partial(corpus_text, "fresh_42c")
_d = partial(corpus_text, "fresh_42d")
_e = partial(corpus_text, "fresh_42e")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (_a("0002"), Category.STRAGGLER),  # GMiner: 1-2 cards at 30mhs rather then ~68mhs
        (_a("0005"), Category.STRAGGLER),  # NBMiner: computing power drops from 43m to 22m
        (_a("0007"), Category.STRAGGLER),  # NiceHash: one of the 2 cards will downshift
        (_a("0012"), Category.STRAGGLER),  # GMiner: hashrate dropdown from 33Mh to 17 Mh
        (_b("0001"), Category.STRAGGLER),  # maskrcnn: time of each iteration increases
        (_b("0003"), Category.STRAGGLER),  # Paddle: 从一开始的70秒，不断增加到500秒
        (_b("0004"), Category.STRAGGLER),  # NeMo RL: a jump in the total step time
        (_b("0005"), Category.STRAGGLER),  # torchtitan: an increase in step time but one rank
        (_c("0005"), Category.STRAGGLER),  # SOMD2: FEP calculations slow down as they progress
        (_c("0006"), Category.STRAGGLER),  # DeepStream-Yolo: **PERF from 51 to 8.95 fps
        (_c("0008"), Category.STRAGGLER),  # onnxruntime: inference time slower over time
        (_c("0010"), Category.STRAGGLER),  # vLLM: 一切正常 at first, then 越来越慢
        (_c("0012"), Category.STRAGGLER),  # tensorrtx: one of two identical computers half slow
        (_d("0013"), Category.NETWORK),  # c10d: client socket connect timed out (errno 110)
        (_e("0002"), Category.HOST_STORAGE),  # CoreOS: dev-nvme0n1.device start timed out
        (_e("0010"), Category.HOST_STORAGE),  # libceph: mon connect error -101
        (_e("0016"), Category.HOST_HARDWARE),  # pciehp: slot(6): Link Down event
        (_e("0022"), Category.HOST_MEMORY),  # Talos: OOMController sends SIGKILL to a cgroup
        (_e("0024"), Category.GPU_HARDWARE),  # k8s-device-plugin: device handle Unknown Error
    ],
)
def test_each_class_finds_its_record(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


@pytest.mark.parametrize(
    "text",
    [
        _a("0015"),  # MultiPoolMiner: rates adjust over time, no need to worry
        _c("0016"),  # Jetson: the first few images take longer, then consistent
        _c("0019"),  # two GPU models' tok/s compared
        _e("0011"),  # libceph: session established
        # c10d refused (the host is up, its store not yet listening): a start-up race
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to "
        "[::ffff:10.0.0.1]:29500 (errno: 111 - Connection refused).",
        # a figure against another setting, not the one it should reach
        "We use bf16 rather than fp32 for speed.",
        "Inference is slow on my laptop, how do I speed it up?",
        "Over time the validation accuracy keeps increasing which is great to see here.",
    ],
)
def test_the_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == []
