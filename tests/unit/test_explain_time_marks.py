"""A line that tells time passed between two pasted readings (diagnosis/explain/time_marks.py)
and the speed reader's comparison across it (``slowdown.slower_later``), and a service's
slowdown told after an amount of its own work (``after 300-400 LLM calls``)."""

from __future__ import annotations

import pytest

from diagnosis.explain.time_marks import tells_time_passed
from diagnosis.model import Category
from tests.explain_helpers import alarms, record_read_as

FPS = "INFO pipeline::stats > FPS counter: FPS = {fps}, frame_delta = 10000"
BAR = "Total progress: 100% 20/20 [00:03<00:00,  {rate}it/s]"
MINER = "HBR 0:       |  3.07/ 0.46/ {rate}Gh/s | A:  1 R:0+0(none) HW:  2/5.4%"


@pytest.mark.parametrize(
    "line",
    [
        "after ~1 hour",
        "after 3 mins",
        "and after 58 hours, this is what I am seeing:",
        "after 10 renders",
        "**2 hours later**",
        "The next day:",
        "then after a while:",
        "Later:",
        "45 minutes in:",
        "after 20k steps:",
        # a heading of the later readings alone on its line
        "**Last time**",
        "Now:",
    ],
)
def test_marks_of_time_passed(line: str) -> None:
    assert tells_time_passed(line), line


@pytest.mark.parametrize(
    "line",
    [
        "after I doubled the batch size to 64",  # the speaker's own change: two setups
        "after the driver upgrade",  # an event, not time passing
        "It runs at 5 it/s after 3 epochs",  # a reading, not a heading
        "Last time I checked it was fine",  # a sentence, not a heading
        "now you can see the rate below",
        "After 2 hours of training the loss is at 0.4 and the accuracy keeps improving, which is "
        "what I expected from the paper's curves.",  # a story, too long for a heading
    ],
)
def test_not_marks(line: str) -> None:
    assert not tells_time_passed(line), line


@pytest.mark.parametrize(
    "text",
    [
        "\n".join([FPS.format(fps=109.72), "", "after ~1 hour", FPS.format(fps=68.90)]),
        "\n".join([BAR.format(rate=5.06), "after 10 renders", BAR.format(rate=4.03)]),
        "\n".join(
            [MINER.format(rate=0.42), "after 3 mins", MINER.format(rate=0.35)]
            + ["after 10 mins", MINER.format(rate=0.18)]
        ),
    ],
)
def test_a_reading_slower_after_time_passed_is_a_slowdown(text: str) -> None:
    assert alarms(text) == ["slowdown.slower_later"], text


@pytest.mark.parametrize(
    "text",
    [
        # as fast or faster later: a warm-up
        "\n".join([FPS.format(fps=68.9), "after ~1 hour", FPS.format(fps=109.7)]),
        # a drop below RATE_DROP_PCT
        "\n".join([FPS.format(fps=100.0), "after ~1 hour", FPS.format(fps=95.0)]),
        # slower, but no line says time passed: two runs side by side
        "\n".join([FPS.format(fps=109.72), "", FPS.format(fps=68.90)]),
        # slower after the speaker's own change
        "\n".join([BAR.format(rate=5.06), "after I doubled the batch", BAR.format(rate=2.5)]),
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    "text",
    [
        "After approximately 300-400 LLM calls, the API response time degrades drastically, "
        "taking around 2000-3000 seconds (compared to the normal 5-10 seconds).",
        "After using the server for dozens of conversations, conversations suddenly become "
        "very slow.",
    ],
)
def test_a_service_slower_after_its_own_work_is_a_slowdown(text: str) -> None:
    assert alarms(text) == ["straggler.slowness_in_words"], text


@pytest.mark.parametrize(
    "text",
    [
        # a warm-up: slow at first, fast after minutes
        "Inference requests are slow at first, after a few minutes the timing cache is "
        "populated and p50 drops to 35 ms.",
        # slower for a heavier request, not over the run
        "The chat is slow when the prompt is long.",
        # a gap below MIN_GAP_PCT, whichever order the figures come in
        "Response time after 300 requests is 1.02 s compared to 1.0 s at the start, slower.",
    ],
)
def test_service_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


@pytest.mark.parametrize(
    "record", [("fresh_42c", "0007"), ("fresh_45b", "0018"), ("fresh_47", "0004")]
)
def test_corpus_reports_read_across_their_marks(record: tuple[str, str]) -> None:
    assert record_read_as(*record) == (Category.STRAGGLER, "slowdown.slower_later")
