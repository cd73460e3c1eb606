"""Persistent degradation of a job against its own healthy baseline: step time and MFU.

A rolling median of the last `window` steps is compared with the median of recent healthy
steps; `consecutive` steps over `threshold` start an episode, reported once, and the episode
ends when the ratio falls back under `recover`. Warm-up steps and fp16-skipped steps are
left out, and a single slow step cannot move a median.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime
from statistics import median

from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from ingest.schema import EventBase, TrainStep


@dataclass(frozen=True)
class TrendConfig:
    """Thresholds of a degradation detector."""

    warmup_steps: int = 5  # first steps seen are slow (compilation, allocator, data warm-up)
    baseline_steps: int = 30  # healthy steps kept for the baseline median
    min_baseline: int = 10  # no verdict before this many healthy steps
    window: int = 9  # recent steps whose median is compared with the baseline
    threshold: float = 1.1  # degraded when worse than the baseline by this factor
    consecutive: int = 3  # ... for this many steps in a row
    recover: float = 1.05  # the episode ends when the ratio falls under this


class _Trend:
    """Degradation ratio of one metric series (ratio > 1 means worse)."""

    def __init__(self, config: TrendConfig, higher_is_worse: bool) -> None:
        self.config = config
        self.higher_is_worse = higher_is_worse
        self._seen = 0
        self._baseline: deque[float] = deque(maxlen=config.baseline_steps)
        self._window: deque[float] = deque(maxlen=config.window)
        self._streak = 0
        self.in_episode = False
        self.unreported: float | None = None  # ratio of an episode not yet reported
        self.baseline = 0.0
        self.current = 0.0

    def add(self, value: float) -> None:
        """Take the next step's value."""
        self._seen += 1
        if self._seen <= self.config.warmup_steps or value <= 0:
            return
        self._window.append(value)
        if len(self._baseline) < self.config.min_baseline:
            self._baseline.append(value)
            return
        ratio = self._ratio(median(self._window))
        if ratio > self.config.threshold and len(self._window) == self.config.window:
            self._streak += 1
        else:
            self._streak = 0
        if self.in_episode and ratio < self.config.recover:
            self.in_episode = False
        if not self.in_episode and self._streak >= self.config.consecutive:
            self.in_episode = True
            self.unreported = ratio
            self.baseline, self.current = median(self._baseline), median(self._window)
        if not self.in_episode and self._streak == 0 and self._ratio(value) < self.config.threshold:
            self._baseline.append(value)  # only healthy steps move the baseline

    def _ratio(self, value: float) -> float:
        base = median(self._baseline)
        return value / base if self.higher_is_worse else base / value


class _TrendDetector:
    """Shared observe/check of the degradation detectors."""

    rule = ""
    metric = ""
    higher_is_worse = True

    def __init__(self, job_id: str, config: TrendConfig | None = None) -> None:
        self.job_id = job_id
        self.config = config or TrendConfig()
        self._trend = _Trend(self.config, self.higher_is_worse)
        self._last_step = -1

    def observe(self, event: EventBase) -> None:
        """Take a job-level, not skipped TrainStep of this job."""
        if not isinstance(event, TrainStep) or event.job_id != self.job_id:
            return
        if event.rank is not None or event.skipped:
            return
        value = getattr(event, self.metric)
        if value is None:
            return
        self._last_step = event.step
        self._trend.add(float(value))

    def check(self, now: datetime) -> list[Finding]:
        """Return a finding once per degradation episode."""
        ratio = self._trend.unreported
        if ratio is None:
            return []
        self._trend.unreported = None
        t = self._trend
        line = (
            f"job {self.job_id}: {self.metric} degraded {ratio:.2f}x vs healthy baseline "
            f"(median {t.current:.4g} vs {t.baseline:.4g}, last {self.config.window} steps, "
            f"at step {self._last_step})"
        )
        return [job_slowdown(line, min(0.95, 0.5 + (ratio - 1.0)), self.rule)]


def job_slowdown(line: str, confidence: float, rule: str) -> Finding:
    """Return the finding of a job whose steps slowed (the blame is localization's to find)."""
    return Finding(
        category=Category.STRAGGLER,
        blame=Blame.UNKNOWN,
        component=ComponentKind.JOB,
        severity=Severity.WARNING,
        action=Action.CAPTURE_DIAGNOSTICS,
        line=line,
        confidence=confidence,
        rule=rule,
    )


class StragglerDetector(_TrendDetector):
    """Detect a persistent step-time slowdown (a straggler somewhere in the job)."""

    rule = "implicit.straggler.step_time"
    metric = "step_time_s"
    higher_is_worse = True


class MfuDetector(_TrendDetector):
    """Detect a persistent MFU decline."""

    rule = "implicit.straggler.mfu"
    metric = "mfu"
    higher_is_worse = False
