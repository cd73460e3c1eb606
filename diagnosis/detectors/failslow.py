"""Fail-slow: a change-point test on a job's step time that knows the job's own jitter.

A GPU, NIC or host that turns slow costs a synchronous job a few percent, well under the
1.1x the `StragglerDetector` waits for. This detector learns the job's healthy step time
(median of recent healthy steps) and its jitter (1.4826 x their median absolute deviation,
never under `jitter_floor` of the median) and runs a one-sided CUSUM of the normalised step
time, tuned for a shift of `min_shift`: S = max(0, S + (x - mu - min_shift mu / 2) / sigma).
It reports once per episode when S passes `threshold` *and* the median of the last `window`
steps is at least `min_shift` over the baseline, so a burst of slow steps (a checkpoint, a
power-brake event, a throttling GPU for a step or two) never reports. The episode ends when
that median falls back under `recover` over the baseline.

Guarantees: nothing is reported before `min_baseline` healthy steps; a report says how
much slower the job is and since when (`change_at`: the last step at which S was zero,
the change point's estimate), which localization uses to compare the ranks' timing
before and after. Only the job-level TrainStep a trainer logs is read.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime
from statistics import median

from diagnosis.detectors.trend import job_slowdown
from diagnosis.model import Finding
from ingest.schema import EventBase, TrainStep

RULE = "implicit.failslow.step_time"


@dataclass(frozen=True)
class FailSlowConfig:
    """Thresholds of `FailSlowDetector` (docs/diagnosis.md says how they were chosen)."""

    warmup_steps: int = 5  # first steps seen are slow (compilation, allocator, data warm-up)
    min_baseline: int = 15  # healthy steps before any verdict
    history: int = 200  # healthy steps kept for the baseline and the jitter
    min_shift: float = 0.04  # the smallest job-level slowdown reported (4%)
    jitter_floor: float = 0.005  # sigma is never taken under this share of the median
    threshold: float = 12.0  # CUSUM decision level, in sigmas
    window: int = 9  # recent steps whose median must confirm the shift
    recover: float = 0.02  # the episode ends when the recent median is under this excess


class FailSlowDetector:
    """Detect a persistent small step-time slowdown of one job."""

    def __init__(self, job_id: str, config: FailSlowConfig | None = None) -> None:
        self.job_id = job_id
        self.config = config or FailSlowConfig()
        self._seen = 0
        self._healthy: deque[float] = deque(maxlen=self.config.history)
        self._recent: deque[float] = deque(maxlen=self.config.window)
        self._cusum = 0.0
        self._zero_at: datetime | None = None  # the last step at which the CUSUM was zero
        self._last: TrainStep | None = None
        self.in_episode = False
        self.change_at: datetime | None = None  # estimated onset of the reported episode
        self._unreported: tuple[float, float, float] | None = None  # ratio, current, baseline

    @property
    def baseline_s(self) -> float | None:
        """The healthy step time (s) the job is compared with; None before it is known."""
        return median(self._healthy) if self._healthy else None

    @property
    def quiet(self) -> bool:
        """Whether the job looks healthy now (no accumulated evidence, no episode)."""
        return not self.in_episode and self._cusum == 0.0

    def observe(self, event: EventBase) -> None:
        """Take a job-level, not skipped TrainStep of this job."""
        if not isinstance(event, TrainStep) or event.job_id != self.job_id:
            return
        if event.rank is not None or event.skipped or event.step_time_s is None:
            return
        self._seen += 1
        value = float(event.step_time_s)
        if self._seen <= self.config.warmup_steps or value <= 0:
            return
        self._last = event
        self._recent.append(value)
        if len(self._healthy) < self.config.min_baseline:
            self._healthy.append(value)
            self._zero_at = event.ts
            return
        self._step(value, event.ts)

    def _step(self, value: float, ts: datetime) -> None:
        cfg = self.config
        mu = median(self._healthy)
        sigma = max(1.4826 * median(abs(v - mu) for v in self._healthy), cfg.jitter_floor * mu)
        self._cusum = max(0.0, self._cusum + (value - mu - cfg.min_shift * mu / 2) / sigma)
        current = median(self._recent)
        if self.in_episode:
            if current < mu * (1 + cfg.recover):
                self.in_episode, self._cusum = False, 0.0
            return
        if self._cusum == 0.0:
            self._zero_at = ts
            self._healthy.append(value)  # only quiet steps move the baseline
            return
        full = len(self._recent) == cfg.window
        if self._cusum >= cfg.threshold and full and current >= mu * (1 + cfg.min_shift):
            self.in_episode = True
            self.change_at = self._zero_at
            self._unreported = (current / mu, current, mu)

    def check(self, now: datetime) -> list[Finding]:
        """Return a finding once per slowdown episode."""
        if self._unreported is None or self._last is None:
            return []
        ratio, current, baseline = self._unreported
        self._unreported = None
        since = "" if self.change_at is None else f" since {self.change_at:%H:%M:%S}"
        line = (
            f"job {self.job_id}: step time {ratio:.3f}x its healthy baseline{since} "
            f"(median {current:.4g} s vs {baseline:.4g} s, change-point test over its own "
            f"jitter, at step {self._last.step})"
        )
        return [job_slowdown(line, min(0.9, 0.5 + 2 * (ratio - 1.0)), RULE)]
