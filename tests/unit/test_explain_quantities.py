"""Durations and rates read from a line (diagnosis/explain/quantities.py), and the slowdown
rules that compare them: units that end their word, prefixes, the order a quantity changed
in, clocks, and figures given against the job's own past."""

from __future__ import annotations

import pytest

from diagnosis.explain.quantities import figures, quoted_rates, value
from diagnosis.model import Category
from tests.explain_helpers import alarms, first


def test_a_unit_must_end_its_word() -> None:
    assert figures("we now train on 2 hosts and 64 samples per GPU over 3 minibatches") == []
    assert quoted_rates("we set the batch size to 64 samples instead of 32 samples") == []


def test_durations_in_every_spelling() -> None:
    assert figures("from 300 milliseconds to 900 msecs") == pytest.approx([0.3, 0.9])
    assert figures("an epoch took 1:10:00 h, now 3:30:00 h") == [4200.0, 12600.0]
    assert figures("1 sec/it, then 5 sec/it") == [1.0, 5.0]
    assert value("5", "sec/it") == (5.0, True)


def test_rates_are_scaled_by_their_prefix_and_read_in_the_order_they_changed() -> None:
    assert quoted_rates("the hashrate went from 950 kH/s to 1.2 MH/s") == [950e3, 1.2e6]
    assert quoted_rates("from 2 GB/s to 500 MB/s") == [2e9, 500e6]
    assert quoted_rates("recovered to 2000 samples/s from 300 samples/s") == [300.0, 2000.0]
    assert quoted_rates("samples per second fell from 3000 to 1500") == [3000.0, 1500.0]
    # a learning rate, or figures of something else than a rate, are not rates of work
    assert quoted_rates("the learning rate drops from 0.1 to 0.01") == []
    assert quoted_rates("throughput drops if we cut the batch from 256 to 64") == []


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("The hashrate fell from 1.2 MH/s to 900 kH/s overnight.", "slowdown.rate_fell"),
        ("Bandwidth dropped from 2 GB/s to 500 MB/s after the reboot.", "slowdown.rate_fell"),
        ("Throughput dropped to 300 samples/s from 2000 samples/s today.", "slowdown.rate_fell"),
        (
            "Now it runs at 5 sec/it instead of 1 sec/it after the update.",
            "slowdown.against_its_past",
        ),
        ("Each epoch took 1:10:00 h and now takes 3:30:00 h.", "slowdown.step_time_rose"),
    ],
)
def test_a_slowdown_in_any_unit_is_found(text: str, rule: str) -> None:
    found = first(text)
    assert found is not None and found[:2] == (Category.STRAGGLER, rule), found


@pytest.mark.parametrize(
    "text",
    [
        "the hashrate went from 950 kH/s to 1.2 MH/s.",  # a rise, once the prefixes count
        "Throughput recovered to 2000 samples/s from 300 samples/s after the fix.",
        "Now it runs at 1 sec/it instead of 5 sec/it after the fix.",
        "We now train on 2 hosts instead of 1 host for this job.",
        "We set the batch size to 64 samples instead of 32 samples per GPU.",
        "I set the NCCL timeout to 60 min instead of 30 min for the large job.",  # not a step
        "Each epoch takes 2 hours instead of 1 hour because we doubled the dataset.",
        "The per-GPU throughput drops from 1000 to 900 samples/s when scaling from 8 to 64 GPUs, "
        "as expected for weak scaling.",
        "FlashAttention is a drop-in replacement: 1500 tokens/s vs 1300 tokens/s with SDPA.",
        "Throughput drops if we cut the batch from 256 to 64",
    ],
)
def test_figures_that_are_no_slowdown_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
