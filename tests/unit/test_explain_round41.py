"""Classes of the forty-first round's development misses (fresh_51*), each read as a class: a
tqdm bar whose description names an iteration (the bar's count is the step, not the
description's percentage), one GPU of a job idle while the others work (or busy while they wait
at 0 %), XFS's errors without a device and a log force that failed, Open MPI's openib BTL that
cannot poll or resize a completion queue, UCX's error completions, asynchronous error events and
unhandled endpoint timeouts, libfabric's EFA provider by its older `prov/rxr` path (not a disk's
I/O error), a seg fault in NCCL in words, and a DCGM client that cannot reach its host engine."""

from __future__ import annotations

import pytest

from diagnosis.explain.progress import step_counter
from diagnosis.explain.quantities import quoted_rates
from diagnosis.model import Category
from tests.explain_helpers import alarms, record_read_as


@pytest.mark.parametrize(
    ("batch", "number", "category", "rule"),
    [
        ("fresh_51", "0013", Category.STRAGGLER, "training.step_slowdown"),
        ("fresh_51", "0003", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_51", "0007", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_51b", "0007", Category.HOST_STORAGE, "storage.fs_error"),
        ("fresh_51b", "0009", Category.HOST_STORAGE, "storage.fs_error"),
        ("fresh_51c", "0009", Category.NETWORK, "rdma.verbs_failed"),
        ("fresh_51c", "0010", Category.NETWORK, "rdma.error_completion_dump"),
        ("fresh_51c", "0013", Category.NETWORK, "nic.efa_libfabric"),
        ("fresh_51c", "0023", Category.APPLICATION, "process.nccl_segfault"),
        ("fresh_51c", "0024", Category.APPLICATION, "dcgm.hostengine_unreachable"),
        # earlier rounds' development misses of the same session: the shell's bare report of a
        # segfault, a verbs call's errno in a program's own words, a program that could not get
        # EFA as its provider, a rate's fall judged in its own report, not against another
        # card's figure a later sentence gives
        ("fresh_49", "0001", Category.APPLICATION, "process.segfault"),
        ("fresh_49b", "0017", Category.NETWORK, "rdma.verbs_failed"),
        ("fresh_44b", "0006", Category.NETWORK, "nic.efa_provider_missing"),
        ("fresh_45b", "0013", Category.STRAGGLER, "slowdown.rate_fell"),
    ],
)
def test_each_class_of_the_round_is_read(
    batch: str, number: str, category: Category, rule: str
) -> None:
    assert record_read_as(batch, number) == (category, rule)


@pytest.mark.parametrize(
    ("line", "step"),
    [
        ("Iteration:  29%|##9       | 4313/14774 [3:51:45<10:33:14,  3.63s/it]", 4313),
        ("Step 12:  40%|####      | 40/100 [00:10<00:15,  4.0it/s]", 40),
        ("iter: 19, loss: 0.5", 19),
    ],
)
def test_a_bars_count_is_its_step(line: str, step: int) -> None:
    assert step_counter(line) == step


@pytest.mark.parametrize(
    "text",
    [
        # one GPU used on purpose, a warm-up, a fraction, a hidden device
        "I only use one GPU so the utilization of one of the cards is always 0.",
        "Utilization of one of the GPUs was 0 during warm-up, then all reach 99%.",
        "The utilization of one of the GPUs is always 0.5 lower than the others.",
        "With CUDA_VISIBLE_DEVICES=0 the utilization of one of the GPUs is always 0.",
        # a fabric's normal asynchronous events, a host engine that started or connected
        "ib_device.c:171  UCX  ERROR IB Async event on mlx5_0: port active",
        "Started host engine version 3.1.7 using port number: 5555",
        "Successfully connected to host engine",
        # a steady tqdm bar whose description names an iteration
        "Iteration:  29%|##9  | 4313/14774 [3:51:45<10:33:14,  3.63s/it]\n"
        "Iteration:  29%|##9  | 4314/14774 [3:51:49<10:31:50,  3.62s/it]\n"
        "Iteration:  29%|##9  | 4315/14774 [3:51:52<10:31:40,  3.64s/it]",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    "text",
    [
        # a dip that came back by itself, in a later sentence
        "My hashrate dropped from 60 MH/s to 30 MH/s yesterday. Today it went back to 60 MH/s.",
        # NCCL's retries, a segfault named as a topic
        "NCCL INFO ibv_post_send failed: retrying 1/35 (errno: 11)",
        "Segmentation fault is the error people see when the binary mismatches.",
    ],
)
def test_more_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    "text",
    [
        # back only after a restart (a workaround), or back for a while only
        "My hashrate dropped from 60 MH/s to 30 MH/s yesterday. After a reboot it is back to "
        "60 MH/s.",
        "Step time went from 1.2 s to 2.5 s at step 40k. It was back to 1.2 s for a while, "
        "then slow again.",
        "bash: line 1: 1234 Segmentation fault      python train.py",
    ],
)
def test_reports_that_only_look_explained_still_alarm(text: str) -> None:
    assert alarms(text) != [], text


@pytest.mark.parametrize(
    ("line", "rates"),
    [
        ("Throughput dropped from 5,100 to 4,980 tok/s", [5100.0, 4980.0]),
        ("went down to 4,980 tok/s from 5,100 tok/s", [5100.0, 4980.0]),
        ("the miner shows 4,98 MH/s", [4.98e6]),
        ("1,234,567 H/s", [1234567.0]),
    ],
)
def test_rates_read_thousands_separators_and_decimal_commas(line: str, rates: list[float]) -> None:
    found = quoted_rates(line)
    assert [found[0], found[-1]] == pytest.approx([rates[0], rates[-1]])
