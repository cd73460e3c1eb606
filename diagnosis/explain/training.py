"""Megatron iteration lines: judge one line, and find spikes and slowdowns.

The values come from the one parser of the format, `ingest.readers.train_log.parse_megatron`
(Megatron-LM's ``training_log`` format strings, sim/formats/training.py, and the
Megatron-DeepSpeed (BLOOM) lines of real_logs loss-spike and perf-degradation-slow-gpu). The
sequence checks compare each iteration with the recent past of the same stream (rank):

- a loss spike: loss at least ``SPIKE_LOSS_RATIO`` times the lowest of the last
  ``WINDOW`` iterations, or a grad norm ``SPIKE_GRAD_RATIO`` times the lowest (the one spike
  rule, `diagnosis.spikes`, with the explainer's thresholds);
- a step-time regression: time per iteration ``SLOW_RATIO`` above the fastest of the window,
  and throughput (TFLOPs) down as much when it is printed, in that iteration and the next (one
  slow iteration after an evaluation or a checkpoint is none; the input's last iteration counts
  alone); a step that skipped or hit NaN is not a slowdown signal (real_logs nan-loss: the NaN
  step took 19% longer).

Both are heuristics with low confidence; the straggler detector over step telemetry decides.

Other frameworks print only a duration per step (``Iteration took 32.5 s.``, ``step time:
1.2s``, ``batch_time=0.41``). Those lines feed a coarser check, since they carry no throughput
and their jitter is unknown: a slowdown is two consecutive steps at least
``GENERIC_SLOW_RATIO`` times the median of the (at least ``GENERIC_MIN_HISTORY``) steps before.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import accumulate

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import verdict
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity
from diagnosis.spikes import spike_baseline
from ingest.readers.train_log import StepLine, parse_megatron

WINDOW = 10
SPIKE_LOSS_RATIO = 1.5
SPIKE_GRAD_RATIO = 10.0
SLOW_RATIO = 1.03

STEP_TIME = re.compile(
    r"\b(?:iteration|iter|step|batch)[ _](?:took|time)\s*(?:\((?:ms|s)\))?\s*[:=]?\s*"
    r"(?P<value>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s*(?P<unit>ms|s|sec|secs|seconds)?\b"
    r"|\btime\s+(?:this|per|of\s+(?:this|the))\s+(?:epoch|iteration|iter|step|batch)\s*[:=]\s*"
    r"(?P<value2>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s*(?P<unit2>ms|s|sec|secs|seconds)?\b"
    # a counted epoch or step whose time is a clock (`epoch: 10, ... time delta: 0:00:00.208`)
    r"|^\W*(?:epoch|iteration|iter|step|batch)\b[^\n]{0,80}?\b(?:time\s+delta|elapsed|duration"
    r"|time\s+taken|epoch\s+time|step\s+time)\s*[:=]\s*(?P<h>\d+):(?P<m>[0-5]\d):"
    r"(?P<s>[0-5]\d(?:\.\d+)?)\b",
    re.IGNORECASE,
)
"""A line that reports one step's (or epoch's) duration in any framework's words (`Iteration
took 2.1 s`, `step_time: 850 ms`, `time this epoch= 1.75`; seconds unless 'ms'; a counted epoch
with its time on a clock, `epoch: 10, ... time delta: 0:00:00.208632`)."""
GENERIC_SLOW_RATIO = 1.5
GENERIC_MIN_HISTORY = 3
GENERIC_DRIFT_RATIO = 1.3
"""The median of the last three steps this many times that of the first three (six steps or
more): a slowdown that crept in step by step and stayed."""

NUMERICAL = verdict(
    Category.NUMERICAL, Blame.APPLICATION, ComponentKind.JOB, Severity.ERROR, Action.MONITOR, 0.8
)
SPIKE = verdict(
    Category.NUMERICAL, Blame.APPLICATION, ComponentKind.JOB, Severity.WARNING, Action.MONITOR, 0.5
)
SLOWDOWN = verdict(
    Category.STRAGGLER, Blame.UNKNOWN, ComponentKind.JOB, Severity.WARNING, Action.MONITOR, 0.3
)
MISSING_LOSS = verdict(
    Category.NUMERICAL, Blame.APPLICATION, ComponentKind.JOB, Severity.ERROR, Action.MONITOR, 0.6
)
_LOSS_FIELDS = re.compile(r"number of (?:skipped|nan) iterations|grad norm:", re.IGNORECASE)
HEALTHY = verdict(
    Category.BENIGN, Blame.UNKNOWN, ComponentKind.JOB, Severity.INFO, Action.NONE, 0.9
)


def _finite(value: float | None) -> bool:
    """Return whether `value` is a finite number."""
    return value is not None and math.isfinite(value)


def _fp16_skip(it: StepLine) -> bool:
    """Return whether `it` is fp16 dynamic loss scaling skipping a step (scale > 1, skipped)."""
    return it.skipped and it.loss_scale is not None and it.loss_scale > 1.0


def judge_iteration(m: re.Match[str]) -> Verdict | None:
    """Return the verdict of one iteration line on its own.

    - a NaN/inf loss or grad norm is numerical, unless fp16 loss scaling skipped the step
      (loss scale above 1 and a skipped iteration: the mechanism working, benign);
    - no loss on a training line under bf16 (loss scale 1.0, nothing skipped) is numerical:
      Megatron leaves a NaN loss out of the line (Megatron-DeepSpeed#434);
    - NaN iterations counted: a warning; anything else is healthy.
    """
    it = parse_megatron(m.string)
    if it is None:
        return None
    nonfinite = (it.loss is not None and not _finite(it.loss)) or (
        it.grad_norm is not None and not _finite(it.grad_norm)
    )
    if nonfinite:
        return HEALTHY if _fp16_skip(it) else NUMERICAL
    if (
        it.loss is None
        and it.loss_scale == 1.0
        and not it.skipped
        and _LOSS_FIELDS.search(m.string)
    ):
        return MISSING_LOSS
    if it.nan_iterations > 0:
        return SPIKE
    return HEALTHY


def _spiked(window: Sequence[StepLine], it: StepLine) -> bool:
    """Return whether `it` spikes in loss or grad norm against the lowest of `window`."""
    losses = (w.loss for w in window)
    norms = (w.grad_norm for w in window)
    return (
        spike_baseline(it.loss, losses, SPIKE_LOSS_RATIO, min) is not None
        or spike_baseline(it.grad_norm, norms, SPIKE_GRAD_RATIO, min) is not None
    )


def _slowed(window: Sequence[StepLine], it: StepLine) -> bool:
    """Return whether `it` is slower than the fastest of `window` (and, if known, lower TFLOPs)."""
    if it.skipped or it.nan_iterations:
        return False
    times = [w.step_time_s for w in window if w.step_time_s]
    if not times or not it.step_time_s or it.step_time_s < SLOW_RATIO * min(times):
        return False
    flops = [w.tflops for w in window if w.tflops]
    if it.tflops and flops:
        return it.tflops * SLOW_RATIO <= max(flops)
    return True


def sequence_findings(stream: Sequence[StepLine]) -> list[tuple[int, Verdict, str]]:
    """Return (position in `stream`, verdict, rule id) for the spikes and slowdowns in it."""
    found: list[tuple[int, Verdict, str]] = []
    seen: set[str] = set()
    for i in range(1, len(stream)):
        window = stream[max(0, i - WINDOW) : i]
        if "training.loss_spike" not in seen and _spiked(window, stream[i]):
            found.append((i, SPIKE, "training.loss_spike"))
            seen.add("training.loss_spike")
        # a slowdown stays: the next iteration is slow too (one slow iteration after an
        # evaluation or a checkpoint is no slowdown), unless the input ends with it
        stays = i == len(stream) - 1 or _slowed(window, stream[i + 1])
        if "training.step_slowdown" not in seen and _slowed(window, stream[i]) and stays:
            found.append((i, SLOWDOWN, "training.step_slowdown"))
            seen.add("training.step_slowdown")
    return found


def parse_step_seconds(body: str) -> float | None:
    """Return the step duration in seconds of a generic step-time line, or None."""
    m = STEP_TIME.search(body)
    if m is None:
        return None
    if m["h"] is not None:
        return int(m["h"]) * 3600 + int(m["m"]) * 60 + float(m["s"])
    value = float(m["value"] or m["value2"])
    return value / 1000 if (m["unit"] or m["unit2"] or "").lower() == "ms" else value


def step_time_slowdown(seconds: Sequence[float]) -> int | None:
    """Return the position of the first of two consecutive slow steps in `seconds` when the
    last step is still slow, or None.

    A step is slow when it takes ``GENERIC_SLOW_RATIO`` times the median of the (up to
    ``WINDOW``) steps before it, given at least ``GENERIC_MIN_HISTORY`` of them. A slowdown the
    steps recover from before the input ends (a checkpoint's pause in a moving average) is none.
    """
    for i in range(GENERIC_MIN_HISTORY, len(seconds) - 1):
        window = sorted(seconds[max(0, i - WINDOW) : i])
        median = window[len(window) // 2]
        slow = GENERIC_SLOW_RATIO * median
        if median > 0 and all(t >= slow for t in seconds[i : i + 2]) and seconds[-1] >= slow:
            return i
    return None


SHIFT_STEADY = 1.25
"""Steps before a shift agree within this ratio (a baseline, not a warm-up or jitter)."""
SHIFT_ONE_BEFORE_RATIO = 2.0
"""With one step before, two steps after must take twice its time."""
TWO_READINGS_RATIO = 2.0
"""Of two readings only (a before and an after pasted), the second must take this many times
the first."""


def step_time_shift(seconds: Sequence[float]) -> int | None:
    """Return the position of the first step of a lasting shift, or None: every step from it
    on takes ``GENERIC_SLOW_RATIO`` times the slowest step before it, and the steps before agree
    within ``SHIFT_STEADY`` (two steady steps then two slow ones, one step then three slow
    ones, or one step then two at ``SHIFT_ONE_BEFORE_RATIO`` times it: what a person pastes
    from before and after a slowdown)."""
    if len(seconds) < 3:
        return None
    # (one pass: the fastest step from each position on, and the range of the steps before)
    fastest_from = list(accumulate(reversed(seconds), min))[::-1]
    low = high = seconds[0]
    for i in range(1, len(seconds) - 1):
        if low <= 0 or high > SHIFT_STEADY * low:
            return None  # the steps before do not agree: no baseline
        # one step before: three slow ones after it, or two at twice its time
        ratio = GENERIC_SLOW_RATIO if i > 1 or len(seconds) - i >= 3 else SHIFT_ONE_BEFORE_RATIO
        if fastest_from[i] >= ratio * high:
            return i
        low, high = min(low, seconds[i]), max(high, seconds[i])
    return None


CLIMB_RATIO = 2.0
"""Readings that each take longer than the one before must end at this many times the first."""
CLIMB_STEP = 1.05
"""Each reading of a climb takes this many times the one before at least: a flat line that
ends in one long reading (a checkpoint, a last evaluation) is no climb."""
CLIMB_DIP = 0.9
"""Readings after a climb's peak stay at this share of it or more: a climb that levels off."""


def step_time_climb(seconds: Sequence[float], may_be_clock: bool) -> int | None:
    """Return the position of the last reading when the readings climb to their peak, each
    taking ``CLIMB_STEP`` times the one before or longer (three readings or more: a decline
    with no steady start, `0.61 s, 0.67 s, 1.48 s`), and every reading from the peak on takes
    ``CLIMB_RATIO`` times the first and stays within ``CLIMB_DIP`` of the peak (a climb that
    levels off: `12.9, 18.2, 24.9, 28.1, 26.0 s/it`), or None; readings that may be an elapsed
    clock must not climb by steady amounts (increments within 2x of each other)."""
    peak = max(range(len(seconds)), key=lambda i: (seconds[i], i)) if seconds else 0
    climb, after = seconds[: peak + 1], seconds[peak:]
    if len(climb) < 3 or seconds[0] <= 0:
        return None
    pairs = list(zip(climb, climb[1:], strict=False))
    steps = [b - a for a, b in pairs]
    if any(b < CLIMB_STEP * a for a, b in pairs):
        return None
    if any(t < CLIMB_RATIO * seconds[0] or t < CLIMB_DIP * seconds[peak] for t in after):
        return None
    if may_be_clock and max(steps) <= 2 * min(steps):
        return None
    return len(seconds) - 1


def before_and_after(seconds: Sequence[float], counters: Sequence[int | None]) -> bool:
    """Whether two readings only are a before and an after: steps far apart (their counts
    differ by more than one: a person skipped the lines between; consecutive reports of a bar
    or a download are no before and after) and the second at ``TWO_READINGS_RATIO`` times
    the first."""
    if len(seconds) != 2 or len(counters) != 2:
        return False
    first, last = counters
    if first is None or last is None:
        return False
    return last - first > 1 and 0 < TWO_READINGS_RATIO * seconds[0] <= seconds[1]


def elapsed_clock(seconds: Sequence[float]) -> bool:
    """Whether figures only add up, by steady amounts: an elapsed clock read at each report
    (four readings or more, each above the last, the increments within 2x of each other), not
    the time of a step."""
    if len(seconds) < 4:
        return False
    steps = [b - a for a, b in zip(seconds, seconds[1:], strict=False)]
    return min(steps) > 0 and max(steps) <= 2 * min(steps)


def step_time_drift(seconds: Sequence[float]) -> int | None:
    """Return the position of the first of the last three steps when they crept up to
    ``GENERIC_DRIFT_RATIO`` times the first three (medians), or None."""
    if len(seconds) < 6:
        return None
    first, last = sorted(seconds[:3])[1], sorted(seconds[-3:])[1]
    return len(seconds) - 3 if first > 0 and last >= GENERIC_DRIFT_RATIO * first else None


def judge_step_time(m: re.Match[str]) -> Verdict | None:
    """Return the verdict of one generic step-time line on its own: healthy (the sequence
    check decides whether the steps slowed down)."""
    return HEALTHY if parse_step_seconds(m.string) is not None else None
