"""Hang detection: the job's steps and its collectives both stop making progress.

Fires within seconds of onset (a multiple of the recent median step time, at least a floor),
long before the NCCL watchdog aborts the job. Nothing is reported before the first step
(start-up may load checkpoints for minutes), and a generous limit holds during warm-up.
One finding per stall episode: a new step ends the episode. Which rank is to blame is left
to `diagnosis.localize.localize_hang`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from ingest.schema import CollectiveProgress, CollectiveState, EventBase, TrainStep

RULE = "implicit.hang"


@dataclass(frozen=True)
class HangConfig:
    """Thresholds of `HangDetector`."""

    step_factor: float = 5.0  # stall when no step for step_factor x the recent median step time
    floor_s: float = 10.0  # ... but never sooner than this
    collective_stall_s: float = 10.0  # a started collective this old without completing is stuck
    min_steps: int = 3  # warm-up steps: kept out of the median
    warmup_floor_s: float = 120.0  # the stall limit while only warm-up steps have been seen
    window: int = 20  # recent step times kept for the median


class HangDetector:
    """Detect a job whose steps and collectives have both stalled."""

    def __init__(self, job_id: str, config: HangConfig | None = None) -> None:
        self.job_id = job_id
        self.config = config or HangConfig()
        self._times: deque[float] = deque(maxlen=self.config.window)
        self._warmup: list[float] = []
        self._steps_seen = 0
        self._last_step: TrainStep | None = None
        # Latest pending collective and latest completed seq per (rank, communicator).
        self._pending: dict[tuple[int, str], tuple[int, datetime]] = {}
        self._completed_seq: dict[tuple[int, str], int] = {}
        self._last_completed_at: datetime | None = None
        self._reported = False
        self._ended = False

    def observe(self, event: EventBase) -> None:
        """Take a job-level TrainStep or a CollectiveProgress of this job."""
        if isinstance(event, TrainStep) and event.job_id == self.job_id and event.rank is None:
            self._observe_step(event)
        elif isinstance(event, CollectiveProgress) and event.job_id == self.job_id:
            self._observe_collective(event)

    def end(self) -> None:
        """Mark the job as finished (cleanly or not): no hang is reported afterwards."""
        self._ended = True

    def check(self, now: datetime) -> list[Finding]:
        """Return a hang finding once per stall episode."""
        last = self._last_step
        if self._ended or self._reported or last is None:
            return []
        limit = self.step_limit()
        silence = now - last.ts
        if silence < limit:
            return []
        evidence = self._collective_evidence(now, limit)
        if evidence is None:
            return []
        self._reported = True
        text, confidence = evidence
        line = (
            f"job {self.job_id}: no step for {silence.total_seconds():.0f}s after step "
            f"{last.step} (limit {limit.total_seconds():.0f}s); {text}"
        )
        return [
            Finding(
                category=Category.HANG,
                blame=Blame.UNKNOWN,
                component=ComponentKind.JOB,
                severity=Severity.CRITICAL,
                action=Action.CAPTURE_DIAGNOSTICS,
                line=line,
                confidence=confidence,
                rule=RULE,
            )
        ]

    def step_limit(self) -> timedelta:
        """Return how long without a step counts as a stall."""
        if not self._times:  # still warming up: slow, uneven steps, so a generous limit
            slowest = max(self._warmup, default=0.0)
            limit_s = max(self.config.step_factor * slowest, self.config.warmup_floor_s)
            return timedelta(seconds=limit_s)
        typical = median(self._times)
        return timedelta(seconds=max(self.config.step_factor * typical, self.config.floor_s))

    def _observe_step(self, step: TrainStep) -> None:
        self._steps_seen += 1
        if step.step_time_s is not None and not step.skipped:
            warm = self._steps_seen <= self.config.min_steps
            (self._warmup if warm else self._times).append(step.step_time_s)
        if self._last_step is None or step.ts >= self._last_step.ts:
            if self._last_step is not None and step.ts > self._last_step.ts:
                self._reported = False  # progress resumed: a later stall is a new episode
            self._last_step = step

    def _observe_collective(self, rec: CollectiveProgress) -> None:
        key = (rec.rank, rec.comm)
        if rec.state == CollectiveState.COMPLETED:
            done_at = rec.time_completed or rec.ts
            if self._last_completed_at is None or done_at > self._last_completed_at:
                self._last_completed_at = done_at
            self._completed_seq[key] = max(rec.seq, self._completed_seq.get(key, -1))
            pending = self._pending.get(key)
            if pending is not None and pending[0] <= rec.seq:
                del self._pending[key]
            return
        if rec.seq <= self._completed_seq.get(key, -1):
            return  # a late "started" for a collective already seen completing
        since = rec.time_started or rec.time_created or rec.ts
        current = self._pending.get(key)
        if current is None or rec.seq > current[0]:
            self._pending[key] = (rec.seq, since)

    def _collective_evidence(self, now: datetime, limit: timedelta) -> tuple[str, float] | None:
        pending = self._describe_pending(now)
        oldest = min((since for _, since in self._pending.values()), default=None)
        if oldest is not None and now - oldest >= timedelta(seconds=self.config.collective_stall_s):
            return pending, 0.9
        done = self._last_completed_at
        if done is None:
            return "no collective completion reported" + (f"; {pending}" if pending else ""), 0.6
        if now - done >= limit:
            silent = f"no collective completed for {(now - done).total_seconds():.0f}s"
            return (f"{silent}; {pending}", 0.8) if pending else (silent, 0.7)
        return None

    def _describe_pending(self, now: datetime) -> str:
        if not self._pending:
            return ""
        first: dict[str, datetime] = {}
        for (_, comm), (_, since) in self._pending.items():
            first[comm] = min(since, first.get(comm, since))
        comms = sorted(first, key=lambda c: (first[c], c))  # the longest-stuck group first
        oldest = first[comms[0]]
        shown = ", ".join(comms[:4]) + (f" (+{len(comms) - 4})" if len(comms) > 4 else "")
        age = (now - oldest).total_seconds()
        count = len(self._pending)
        return f"{count} collective(s) started, not completed for {age:.0f}s on {shown}"
