"""A running training job in the twin: steps, their records, collective progress, its end."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from ingest.schema import CollectiveProgress, CollectiveState, EventBase, TrainStep
from sim.cluster import JobLayout
from sim.steps import Phase, StepResult, run_step

Emit = Callable[[EventBase], None]
_OPS = {
    "tp": ("all_reduce", 64 << 20),
    "ep": ("all_to_all", 32 << 20),
    "pp": ("send", 16 << 20),
    "dp": ("all_reduce", 1 << 30),
}


@dataclass
class JobRun:
    """Mutable state of one job while the twin runs."""

    layout: JobLayout
    rng: np.random.Generator
    status: str = "pending"  # pending, running, stalled, crashed
    step: int = 0
    step_started: float = 0.0
    loss_scale: float = 65536.0
    absent: np.ndarray | None = None  # ranks that stopped arriving (hang)
    stalled_since: float | None = None
    nan_from_step: int | None = None
    nan_rank: int | None = None
    crashed_at: float | None = None
    comm_slow: dict[str, np.ndarray] = field(default_factory=dict)
    current: StepResult | None = None  # the step in progress, simulated when it starts

    @property
    def grid_shape(self) -> tuple[int, int, int]:
        """Return (pp, dp, tp)."""
        j = self.layout.job
        return (j.pp, j.dp, j.tp)

    def rank_coords(self, rank: int) -> tuple[int, int, int]:
        """Return (pp, dp, tp) coordinates of a rank."""
        j = self.layout.job
        return rank // (j.tp * j.dp), (rank // j.tp) % j.dp, rank % j.tp

    def compute_mult(self, gpu_slow: np.ndarray) -> np.ndarray:
        """Return per-rank compute multipliers from the GPUs' slowness, in grid shape."""
        lay = self.layout
        return gpu_slow[lay.rank_node, lay.rank_gpu].reshape(self.grid_shape)

    def next_step(self, base_s: float, gpu_slow: np.ndarray) -> StepResult:
        """Simulate the step that starts at step_started."""
        j = self.layout.job
        warm = 1.0 + (1.5 / (self.step + 1) if self.step < j.warmup_steps else 0.0)
        mult = self.compute_mult(gpu_slow) * warm
        mult = mult * np.exp(self.rng.normal(0, 0.004, mult.shape))  # per-step kernel jitter
        if j.step_jitter:  # the whole step: input pipeline, host work, network contention
            base_s = base_s * float(np.exp(self.rng.normal(0, j.step_jitter)))
        return run_step(base_s, mult, self.comm_slow, self.absent, ep=j.ep)

    def step_record(self, result: StepResult, end: datetime) -> TrainStep:
        """Return the job-level step record a trainer logs at the end of a step."""
        j = self.layout.job
        k = self.step
        nan = self.nan_from_step is not None and k >= self.nan_from_step
        skipped = (not nan) and self.rng.random() < 0.002  # fp16 overflow: benign skip
        if skipped:
            self.loss_scale = max(1.0, self.loss_scale / 2)
        elif k % 1000 == 999:
            self.loss_scale = min(2.0**24, self.loss_scale * 2)
        loss = 2.1 + 8.5 * math.exp(-k / 400) + float(self.rng.normal(0, 0.015))
        duration = result.duration_s
        return TrainStep(
            job_id=j.id,
            step=k,
            ts=end,
            loss=float("nan") if nan else round(loss, 4),
            grad_norm=float("nan") if nan else round(0.9 + float(self.rng.gamma(4, 0.05)), 4),
            tokens_per_s=round(j.tokens_per_step / duration, 1),
            mfu=round(j.mfu * j.step_time_s / duration, 4),
            step_time_s=round(duration, 4),
            lr=round(3e-4 * min(1.0, (k + 1) / 2000), 8),
            loss_scale=self.loss_scale,
            skipped=skipped,
        )

    def rank_grad_norms(self, end: datetime) -> list[TrainStep]:
        """Return per-rank grad-norm records (enabled per job); a corrupting GPU shows first."""
        j = self.layout.job
        k = self.step
        norms = 0.9 + self.rng.gamma(4, 0.05, self.layout.world)
        if self.nan_from_step is not None and self.nan_rank is not None:
            if k >= self.nan_from_step - 1:
                norms[self.nan_rank] = np.nan
            if k >= self.nan_from_step:
                norms[:] = np.nan
        nodes = self.layout.rank_node
        return [
            TrainStep(
                job_id=j.id,
                step=k,
                rank=r,
                ts=end,
                grad_norm=float(norms[r]),
                node=f"node-{int(nodes[r]):04d}",
            )
            for r in range(self.layout.world)
        ]

    def collectives(
        self, result: StepResult, start: datetime, node_names: list[str]
    ) -> list[CollectiveProgress]:
        """Return every rank's progress record on each communicator for this step."""
        j = self.layout.job
        out: list[CollectiveProgress] = []
        grid = self.layout.grid()
        lay = self.layout
        for phase in result.phases:
            if phase.name == "tp" and j.tp == 1 or phase.name == "dp" and j.dp == 1:
                continue
            if phase.name == "pp" and j.pp == 1:
                continue
            out.extend(self._phase_records(phase, grid, start, lay, node_names))
        return out

    def _phase_records(
        self, phase: Phase, grid: np.ndarray, start: datetime, lay: JobLayout, node_names: list[str]
    ) -> list[CollectiveProgress]:
        op, size = _OPS[phase.name]
        arrive = phase.arrive.ravel().tolist()
        done = phase.done.ravel().tolist()
        ranks = grid.ravel().tolist()
        k, j = self.step, self.layout.job
        out = []
        for idx, rank in enumerate(ranks):
            a = arrive[idx]
            if a != a:  # nan: the rank never reached this collective
                continue
            created = start + timedelta(seconds=a)
            fin = done[idx]
            state = CollectiveState.COMPLETED if fin == fin else CollectiveState.STARTED
            completed = start + timedelta(seconds=fin) if fin == fin else None
            for comm, rank_op in self._comms_of(phase.name, rank, op):
                out.append(
                    CollectiveProgress(
                        job_id=j.id,
                        rank=rank,
                        node=node_names[int(lay.rank_node[rank])],
                        comm=comm,
                        op=rank_op,
                        seq=k,
                        p2p_seq=k if phase.name == "pp" else None,
                        state=state,
                        bytes=size,
                        dtype="BFloat16",
                        ts=completed or created,
                        time_created=created,
                        time_started=created,
                        time_completed=completed,
                        duration_ms=round((fin - a) * 1000, 3) if fin == fin else None,
                        timeout_ms=None,
                        reporter="flight_recorder",
                    )
                )
        return out

    def _comms_of(self, phase: str, rank: int, op: str) -> list[tuple[str, str]]:
        """Return (communicator, op) pairs a rank reports for a phase.

        A middle pipeline stage belongs to two neighbour pairs: it receives from the stage before
        and sends to the stage after.
        """
        j = self.layout.job
        p, d, t = self.rank_coords(rank)
        if phase == "tp":
            return [(f"tp-p{p}-d{d}", op)]
        if phase == "ep":
            return [(f"ep-p{p}-t{t}-e{d // j.ep}", op)]
        if phase == "dp":
            return [(f"dp-p{p}-t{t}", op)]
        pairs = []
        if p > 0:
            pairs.append((f"pp-p{p - 1}-d{d}-t{t}", "recv"))
        if p < j.pp - 1:
            pairs.append((f"pp-p{p}-d{d}-t{t}", "send"))
        return pairs
