"""Short streams: two readings only, a before and an after a person pasted
(training.before_and_after), a slowdown when the steps are far apart and the second takes twice
the first (consecutive reports, a smaller change or a speed-up stay silent); and readings that
each take longer than the one before (training.step_time_climb)."""

from __future__ import annotations

import pytest

from diagnosis.explain.training import before_and_after, step_time_climb
from tests.explain_helpers import alarms


def _pair(first: tuple[int, float], second: tuple[int, float]) -> str:
    return "\n".join(
        f"2024-05-02 10:0{n}:00 INFO Epoch[0] Batch [{step}]\tSpeed: {rate:.2f} samples/sec"
        for n, (step, rate) in enumerate((first, second))
    )


def test_a_before_and_an_after_far_apart_at_half_the_speed_is_a_slowdown() -> None:
    assert "training.step_slowdown" in alarms(_pair((5450, 429.55), (6250, 75.35)))


@pytest.mark.parametrize(
    "first,second",
    [
        ((5450, 429.55), (5451, 75.35)),  # consecutive reports: a bar, a download
        ((5450, 429.55), (6250, 300.00)),  # 1.4x: no clear change from two readings
        ((5450, 75.35), (6250, 429.55)),  # faster
    ],
)
def test_consecutive_reports_a_small_change_or_a_speed_up_are_silent(
    first: tuple[int, float], second: tuple[int, float]
) -> None:
    assert alarms(_pair(first, second)) == []


def test_readings_without_step_counts_are_no_before_and_after() -> None:
    assert not before_and_after([1.0, 3.0], [None, 800])
    assert not before_and_after([1.0, 3.0, 3.1], [1, 800, 900])
    assert before_and_after([1.0, 3.0], [1, 800])


@pytest.mark.parametrize(
    "times,clock,position",
    [
        ([0.612, 0.668, 1.482], False, 2),  # mmdet's last line: no steady start
        ([3.2, 4.98, 7.04], False, 2),  # a rate falling by steady amounts (read inverted)
        ([0.45, 0.49, 0.97, 1.2], True, 3),  # a named time climbing unevenly
        ([100.0, 200.0, 300.0], True, None),  # an elapsed clock: steady amounts
        ([0.6, 0.7, 1.1], False, None),  # under twice the first
        ([0.6, 1.3, 1.2, 1.4], False, None),  # not every reading longer than the one before
        ([0.6, 1.3], False, None),  # two readings: training.before_and_after decides
    ],
)
def test_a_climb_to_twice_the_first_reading_is_a_slowdown(
    times: list[float], clock: bool, position: int | None
) -> None:
    assert step_time_climb(times, clock) == position
