"""The digital twin's clock: jobs step, faults strike, agents scrape, events flow out."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import numpy as np

from ingest.schema import EventBase, LogLine, LogSource
from sim import logtext
from sim.cluster import Hardware, layout_jobs
from sim.gpus import COMPUTE, IDLE, SPIN, STALLED, GpuState
from sim.jobs import JobRun
from sim.scenario import Scenario
from sim.wear import Wear

Emit = Callable[[EventBase], None]
DEFAULT_START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
KERNEL_PATH = "dmesg"
BENIGN_XID63_PER_GPU_DAY = 0.05


@dataclass(order=True)
class _Scheduled:
    at_s: float
    order: int
    action: Callable[[float], None] = field(compare=False)


class Twin:
    """Simulates a scenario and hands every event to `emit`, in time order per tick."""

    def __init__(
        self,
        scenario: Scenario,
        emit: Emit,
        start: datetime = DEFAULT_START,
        on_tick: Callable[[float], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.emit = emit
        self.on_tick = on_tick
        self.start = start
        self.hw = Hardware.of(scenario)
        self.rng = np.random.default_rng(scenario.seed)
        c = scenario.cluster
        self.state = GpuState(c.nodes, c.gpus_per_node, c.nics_per_node, self.rng)
        shape = (c.nodes, c.gpus_per_node)
        self.speed = np.exp(self.rng.normal(0, c.gpu_speed_jitter, shape))  # healthy jitter
        self.fault_slow = np.ones(shape)
        # Its own stream: benign wear leaves the draws of jobs and faults as they were.
        self.wear = Wear(shape, np.random.default_rng([scenario.seed, 0x3EA2]), scenario.wear)
        self.node_names = [scenario.node_name(i) for i in range(c.nodes)]
        self.jobs = [
            JobRun(layout, np.random.default_rng(scenario.seed + i + 1))
            for i, layout in enumerate(layout_jobs(scenario))
        ]
        self.truth: list[dict[str, Any]] = []
        self._queue: list[_Scheduled] = []
        self._order = itertools.count()
        self._log_offsets: dict[tuple[str, str], int] = {}
        self.boot = start - timedelta(days=3, seconds=float(self.rng.uniform(0, 86_400)))

    # ------------------------------------------------------------------ scheduling
    def at(self, at_s: float, action: Callable[[float], None]) -> None:
        """Run action(t) when the clock reaches at_s."""
        heapq.heappush(self._queue, _Scheduled(at_s, next(self._order), action))

    def ts(self, t: float) -> datetime:
        """Return the wall time of simulation second t."""
        return self.start + timedelta(seconds=t)

    # ------------------------------------------------------------------ running
    def run(self) -> list[dict[str, Any]]:
        """Simulate the whole scenario; return the ground truth."""
        from sim.faults import schedule_faults

        s = self.scenario
        schedule_faults(self)
        for job in self.jobs:
            self.at(job.layout.job.start_s, partial(self._start_job, job))
        dt = s.metrics_interval_s
        host_every = max(1, round(s.host_interval_s / dt))
        for tick in range(int(s.duration_s / dt) + 1):
            t = tick * dt
            self._run_due(t)
            self._benign_row_remaps(t, dt)
            for n, g in self.wear.tick(self.state, t, dt):
                self._xid63(n, g, t, self.wear.rng)
            for job in self.jobs:
                self._advance_job(job, t)
            self._update_activity()
            self.state.advance(dt)
            ts = self.ts(t)
            for scrape in self.state.gpu_scrapes(ts, self.node_names):
                self.emit(scrape)
            if tick % host_every == 0:
                for host in self.state.host_scrapes(ts, self.node_names):
                    self.emit(host)
            if self.on_tick is not None:
                self.on_tick(t)
        return self.truth

    def _run_due(self, t: float) -> None:
        while self._queue and self._queue[0].at_s <= t:
            item = heapq.heappop(self._queue)
            # Steps that ended before the action ran without it, however coarse the tick.
            for job in self.jobs:
                self._advance_job(job, item.at_s)
            item.action(item.at_s)

    def _start_job(self, job: JobRun, t: float) -> None:
        job.status = "running"
        job.step_started = t
        self.emit(job.layout.topology_event(self.scenario, self.ts(t)))
        lay = job.layout
        # Benign: a few ranks dial peers that are not listening yet and retry (NCCL bootstrap).
        for rank in self.rng.choice(lay.world, size=max(1, lay.world // 64), replace=False):
            node, gpu = int(lay.rank_node[rank]), int(lay.rank_gpu[rank])
            line = logtext.nccl_connect_retry(self.node_names[node], int(rank), gpu)
            self.log(
                node,
                t,
                LogSource.NCCL,
                [line],
                f"/var/log/train/{lay.job.id}/stderr.err",
                job=lay.job.id,
                rank=int(rank),
            )

    def _benign_row_remaps(self, t: float, dt: float) -> None:
        """Benign: an occasional Xid 63 row-remap event (about 0.05 per GPU-day)."""
        p = BENIGN_XID63_PER_GPU_DAY * dt / 86_400
        for n, g in zip(*np.nonzero(self.rng.random(self.state.shape) < p), strict=True):
            self.state.counters["remapped_correctable"][n, g] += 1
            self._xid63(int(n), int(g), t, self.rng)

    def _xid63(self, n: int, g: int, t: float, rng: np.random.Generator) -> None:
        pid = int(rng.integers(1000, 4_000_000))
        line = logtext.kernel_prefix(self.ts(t), self.boot, self.node_names[n])
        self.log(
            n,
            t,
            LogSource.KERNEL,
            [line + logtext.xid_lines(self.state.pci[g], 63, pid)[0]],
            KERNEL_PATH,
        )

    def stack_dump(self, job_id: str, rank: int) -> str:
        """Return what `py-spy dump` would print for a rank now (on request, e.g. by actions)."""
        job = next(j for j in self.jobs if j.layout.job.id == job_id)
        if job.status == "stalled":
            absent = job.absent is not None and bool(job.absent.ravel()[rank])
            return logtext.stack_dump(rank, "stalled" if absent else "waiting")
        if job.status == "running":
            return logtext.stack_dump(rank, "compute")
        raise ValueError(f"job {job_id} is {job.status}: no process to dump")

    def gpu_slow(self) -> np.ndarray:
        """Return every GPU's compute-time multiplier now."""
        slow = self.fault_slow / self.speed
        if self.scenario.wear.throttle_slowdown:  # healthy GPUs throttling right now
            slow = slow * np.where(
                self.state.benign_throttle != 0, 1 + self.scenario.wear.throttle_slowdown, 1.0
            )
        return slow

    def _advance_job(self, job: JobRun, t: float) -> None:
        spec = job.layout.job
        while job.status == "running":
            if job.current is None:
                job.current = job.next_step(spec.step_time_s, self.gpu_slow())
            result = job.current
            if not result.completed:
                self._stall(job, result)
                return
            end_s = job.step_started + result.duration_s
            if end_s > t:
                return
            start = self.ts(job.step_started)
            end = self.ts(end_s)
            record = job.step_record(result, end)
            self.emit(record)
            if spec.per_rank_grad_norm:
                for rank_step in job.rank_grad_norms(end):
                    self.emit(rank_step)
            if self._sampled(job.step):
                for progress in job.collectives(result, start, self.node_names):
                    self.emit(progress)
            self._training_log(job, record)
            job.step += 1
            job.step_started = end_s
            job.current = None

    def _sampled(self, step: int) -> bool:
        """Whether a completed step's collective records are emitted (the last steps of a burst)."""
        every = self.scenario.collective_every_steps
        return every == 1 or step % every >= every - self.scenario.collective_burst_steps

    def _stall(self, job: JobRun, result: Any) -> None:
        """A rank stopped arriving: record the collectives that started and never finished."""
        reached = [np.nanmax(p.arrive) for p in result.phases if np.isfinite(p.arrive).any()]
        stall_s = job.step_started + (max(reached) if reached else 0.0)
        for event in job.collectives(result, self.ts(job.step_started), self.node_names):
            self.emit(event)
        job.status = "stalled"
        job.stalled_since = stall_s
        from sim.faults import watchdog_timeout

        self.at(
            stall_s + self.scenario.watchdog_timeout_s, lambda t: watchdog_timeout(self, job, t)
        )

    def _update_activity(self) -> None:
        act = self.state.activity
        act[:] = IDLE
        for job in self.jobs:
            lay = job.layout
            if job.status == "running":
                act[lay.rank_node, lay.rank_gpu] = COMPUTE
            elif job.status == "stalled":
                act[lay.rank_node, lay.rank_gpu] = SPIN
                if job.absent is not None:
                    culprit = job.absent.ravel()
                    act[lay.rank_node[culprit], lay.rank_gpu[culprit]] = STALLED
        for n, g in self.state.nvml_error:
            act[n, g] = IDLE

    # ------------------------------------------------------------------ logs
    def log(
        self,
        node: int,
        t: float,
        source: LogSource,
        lines: list[str],
        path: str,
        job: str | None = None,
        rank: int | None = None,
    ) -> None:
        """Emit log lines as the agent on `node` would read them from `path`."""
        name = self.node_names[node]
        key = (name, path)
        offset = self._log_offsets.get(key, 0)
        for line in lines:
            self.emit(
                LogLine(
                    node=name,
                    ts=self.ts(t),
                    source=source,
                    line=line,
                    path=path,
                    seq=offset,
                    job_id=job,
                    rank=rank,
                )
            )
            offset += len(line.encode()) + 1
        self._log_offsets[key] = offset

    def _training_log(self, job: JobRun, record: Any) -> None:
        lay = job.layout
        last = lay.world - 1  # Megatron logs from the last rank
        line = logtext.megatron_iteration(record, self.ts(job.step_started + record.step_time_s))
        self.log(
            int(lay.rank_node[last]),
            job.step_started + record.step_time_s,
            LogSource.TRAIN_STDOUT,
            [line],
            f"/var/log/train/{lay.job.id}/stdout.log",
            job=lay.job.id,
            rank=last,
        )
        every = lay.job.save_interval
        if every and record.step > 0 and record.step % every == 0:
            self.log(  # rank 0 saves and reports (instant: the twin charges no save time)
                int(lay.rank_node[0]),
                job.step_started + record.step_time_s,
                LogSource.TRAIN_STDOUT,
                logtext.megatron_checkpoint(record.step, lay.job.id, lay.job.tp, lay.job.pp),
                f"/var/log/train/{lay.job.id}/stdout.log",
                job=lay.job.id,
                rank=0,
            )
