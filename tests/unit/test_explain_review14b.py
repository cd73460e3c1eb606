"""Inputs a reviewer wrote to break this session's rules (issue 21, no corpus read): each is a
case the rules once got wrong, kept as a test.

Lines and sentences written here, in the shapes of real output (mlx5's kernel and rdma-core
prints, a miner's per-card lines) and of people's sentences.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first


@pytest.mark.parametrize(
    "text",
    [
        # a rate stuck at a figure that is high, normal, or zero (a hang, or a miner's start-up)
        "GPU utilization is stuck at 100 percent during training, which is what you want.",
        "The speed has been stuck at 100 it/s for the whole run, which is exactly the speed of the "
        "benchmark.",
        "The hashrate is stuck at 0.00 MH/s while the DAG is being generated, then it goes up to "
        "30 MH/s on all cards.",
        # half the rate, said to be expected
        "Training on 4 GPUs instead of 8 gives half the throughput, which is exactly what I "
        "expected.",
        "In dual mining mode the second coin gets about half the hashrate, as the miner "
        "documentation says.",
        # Chinese: the loss's descent speed, and a slowdown explained
        "loss下降速度大幅降低，是不是学习率太小了",
        "每个epoch结束做验证时耗时大幅增加，这是因为验证集很大",
        # different card models in one rig, with vendors' names: no peers
        "GPU 0: Sapphire RX 580 8GB, 29.81 MH/s\nGPU 1: XFX RX 580 8GB, 29.75 MH/s\n"
        "GPU 2: PowerColor RX 560 4GB, 12.10 MH/s\nGPU 3: Sapphire RX 580 8GB, 29.90 MH/s",
        "GPU 0: Dell RTX 3090, 121.5 Mh/s\nGPU 1: Dell RTX 3090, 120.9 Mh/s\n"
        "GPU 2: Zotac RTX 3060, 48.3 Mh/s\nGPU 3: Gigabyte RTX 3090, 121.1 Mh/s",
    ],
)
def test_written_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


def test_one_card_stuck_low_against_its_twin_is_a_straggler() -> None:
    text = (
        "I have two RTX 3070 cards. One of them always runs fine. The hash rate of the other "
        "card is stuck at 24 MH/s."
    )
    found = first(text)
    assert found is not None and found[0] == Category.STRAGGLER, found


@pytest.mark.parametrize(
    "text",
    [
        "[561889.198889] infiniband mlx5_0: dump_cqe:272:(pid 709): dump error cqe\n"
        "[561889.198945] 00000000: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "mlx5: n136-096-142: got completion with error:\n"
        "00000000 00000000 00000000 00000000\n00000000 00008716 0a001f8e 000027d2",
        "infiniband rocep8s0f0: dump_cqe:277:(pid 0): WC error: 6, Message: memory bind "
        "operation error",
    ],
)
def test_mlx5s_error_completion_prints_are_network_faults(text: str) -> None:
    found = first(text)
    assert found is not None and found[0] == Category.NETWORK, found
