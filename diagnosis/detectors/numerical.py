"""Numerical health: NaN/Inf loss or gradient norm, and loss or gradient-norm spikes.

A non-finite value is blamed on the application, unless per-rank gradient norms show one
rank (or very few) going non-finite first while the others stay finite: that is the
signature of silent data corruption on one GPU, so the finding names that rank and blames
the infrastructure (category numerical, component gpu). fp16 loss-scale skips are benign.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from statistics import median

from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from diagnosis.spikes import spike_baseline
from ingest.schema import EventBase, JobTopology, TrainStep

RULE_NONFINITE = "implicit.numerical.nonfinite"
RULE_CORRUPT_RANK = "implicit.numerical.corrupt_rank"
RULE_SPIKE = "implicit.numerical.spike"


@dataclass(frozen=True)
class NumericalConfig:
    """Thresholds of `NumericalDetector`."""

    spike_factor: float = 5.0  # a spike is at least this many times the recent median
    history: int = 50  # recent finite values kept per metric
    min_history: int = 10  # no spike verdict before this many values
    spike_cooldown_steps: int = 20  # one spike finding per metric in this many steps
    recover_steps: int = 10  # finite steps in a row that end a non-finite episode
    max_culprits: int = 2  # at most this many first-bad ranks still point at hardware
    steps_kept: int = 8  # recent steps whose per-rank grad norms are kept


@dataclass
class _RankNorms:
    finite: int = 0
    bad: dict[int, str | None] = field(default_factory=dict)  # rank -> node


class NumericalDetector:
    """Detect non-finite and spiking loss or gradient norms of one job."""

    def __init__(self, job_id: str, config: NumericalConfig | None = None) -> None:
        self.job_id = job_id
        self.config = config or NumericalConfig()
        self._latest = -1
        self._job_bad: dict[int, TrainStep] = {}  # step -> non-finite, not skipped job record
        self._skipped: deque[int] = deque(maxlen=self.config.steps_kept)
        self._ranks: dict[int, _RankNorms] = {}
        self._gpu_of: dict[int, tuple[str, int]] = {}
        self._in_episode = False
        self._finite_streak = 0
        self._history: dict[str, deque[float]] = {
            m: deque(maxlen=self.config.history) for m in ("loss", "grad_norm")
        }
        self._last_spike: dict[str, int] = {}
        self._spikes: list[Finding] = []

    def observe(self, event: EventBase) -> None:
        """Take TrainSteps (job-level and per-rank) and the JobTopology of this job."""
        if isinstance(event, JobTopology) and event.job_id == self.job_id:
            self._gpu_of = {p.rank: (p.node, p.gpu) for p in event.ranks}
        if not isinstance(event, TrainStep) or event.job_id != self.job_id:
            return
        self._latest = max(self._latest, event.step)
        if event.rank is None:
            self._observe_job(event)
        else:
            self._observe_rank(event)

    def check(self, now: datetime) -> list[Finding]:
        """Return spike findings, and one non-finite finding per episode."""
        out, self._spikes = self._spikes, []
        if self._in_episode:
            return out
        job_bad = min(self._job_bad, default=None)
        rank_bad = min(
            (
                s
                for s, r in self._ranks.items()
                if r.bad and s < self._latest and s not in self._skipped
            ),
            default=None,
        )
        if job_bad is None and rank_bad is None:
            return out
        self._in_episode = True
        if rank_bad is not None and (job_bad is None or rank_bad <= job_bad):
            culprit = self._culprit(rank_bad)
            if culprit is not None:
                return [*out, culprit]
        return [*out, self._application(job_bad, rank_bad)]

    def _rank_step_bad(self, step: int) -> bool:
        # A step is judged once a later step was seen, so all its ranks have reported.
        return bool(self._ranks[step].bad) and step < self._latest and step not in self._skipped

    def _observe_job(self, step: TrainStep) -> None:
        if step.skipped:
            self._skipped.append(step.step)
            return
        values = {"loss": step.loss, "grad_norm": step.grad_norm}
        if any(v is not None and not math.isfinite(v) for v in values.values()):
            self._finite_streak = 0
            if not self._in_episode and len(self._job_bad) < self.config.steps_kept:
                self._job_bad[step.step] = step
            return
        self._finite_streak += 1
        if self._in_episode and self._finite_streak >= self.config.recover_steps:
            self._in_episode = False
            self._job_bad.clear()
            self._ranks.clear()
        for metric, value in values.items():
            if value is not None:
                self._spike(metric, value, step.step)

    def _observe_rank(self, step: TrainStep) -> None:
        if step.grad_norm is None or self._in_episode:
            return
        norms = self._ranks.setdefault(step.step, _RankNorms())
        if math.isfinite(step.grad_norm):
            norms.finite += 1
        else:
            norms.bad[step.rank or 0] = step.node
        while len(self._ranks) > self.config.steps_kept:
            del self._ranks[min(self._ranks)]

    def _spike(self, metric: str, value: float, step: int) -> None:
        history = self._history[metric]
        factor, least = self.config.spike_factor, self.config.min_history
        typical = spike_baseline(value, history, factor, median, least)
        if typical is not None:
            last = self._last_spike.get(metric)
            if last is None or step - last >= self.config.spike_cooldown_steps:
                self._last_spike[metric] = step
                self._spikes.append(self._spike_finding(metric, value, typical, step))
            return  # a spike does not enter the history it is judged against
        history.append(value)

    def _spike_finding(self, metric: str, value: float, typical: float, step: int) -> Finding:
        return Finding(
            category=Category.NUMERICAL,
            blame=Blame.UNKNOWN,
            component=ComponentKind.JOB,
            severity=Severity.WARNING,
            action=Action.MONITOR,
            line=(
                f"job {self.job_id}: {metric} spike at step {step}: {value:.4g} is "
                f"{value / typical:.1f}x the recent median {typical:.4g}"
            ),
            confidence=0.6,
            rule=RULE_SPIKE,
        )

    def _culprit(self, step: int) -> Finding | None:
        norms = self._ranks[step]
        bad = sorted(norms.bad)
        if len(bad) > self.config.max_culprits or norms.finite < len(bad):
            return None
        rank = bad[0]
        node, gpu = self._gpu_of.get(rank, (norms.bad[rank], None))
        return Finding(
            category=Category.NUMERICAL,
            blame=Blame.INFRASTRUCTURE,
            component=ComponentKind.GPU,
            severity=Severity.ERROR,
            action=Action.HARDWARE_INSPECTION,
            line=(
                f"job {self.job_id}: grad norm of rank(s) {bad} went non-finite at step {step} "
                f"while {norms.finite} other rank(s) stayed finite (suspected silent data "
                f"corruption on {node or '?'} gpu {'?' if gpu is None else gpu})"
            ),
            confidence=0.7,
            rule=RULE_CORRUPT_RANK,
            node=node,
            gpu=gpu,
            rank=rank,
        )

    def _application(self, job_bad: int | None, rank_bad: int | None) -> Finding:
        if job_bad is not None:
            rec = self._job_bad[job_bad]
            what = f"loss={rec.loss} grad_norm={rec.grad_norm} at step {job_bad}"
        else:
            bad = self._ranks[rank_bad].bad if rank_bad is not None else {}
            what = f"grad norms of {len(bad)} ranks at step {rank_bad}"
        return Finding(
            category=Category.NUMERICAL,
            blame=Blame.APPLICATION,
            component=ComponentKind.JOB,
            severity=Severity.ERROR,
            action=Action.FIX_APPLICATION,
            line=f"job {self.job_id}: non-finite {what} (not an fp16 skip)",
            confidence=0.7,
            rule=RULE_NONFINITE,
        )
