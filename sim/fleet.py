"""A compact fleet generator: the twin's GPU state and wear for many GPUs over weeks.

It drives `sim.gpus.GpuState` and `sim.wear` at a coarse scrape interval with the twin's
random GPU failures (the Llama 3 mix, a share with precursors), publishes the events an
agent would (GpuMetrics scrapes and kernel Xid lines) and turns them into table columns
with the sink's own converter, a day at a time. Failed GPUs are replaced after a repair
delay. The ground truth is returned separately, as the twin's truth.json has it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from analytics.columns import ColumnBatch
from analytics.tables import GPU_METRICS, LOGS
from ingest.schema import LogLine, LogSource
from sim import logtext
from sim.cluster import Hardware
from sim.gpus import _COUNTERS, COMPUTE, IDLE, GpuState
from sim.random_faults import draw_random_faults
from sim.scenario import ClusterSpec, GpuFault, RandomFaults, Scenario
from sim.twin import BENIGN_XID63_PER_GPU_DAY, KERNEL_PATH
from sim.wear import BENIGN_HEAT, Wear, WearSpec, precursor_step

HARDWARE_KINDS = ("xid79", "ecc_dbe", "gsp_timeout")
_POS = ("sim", 0, 0)


@dataclass(frozen=True)
class FleetSpec:
    """Size, length and failure rates of a generated fleet."""

    nodes: int = 128
    gpus_per_node: int = 8
    days: float = 30.0
    scrape_s: float = 900.0
    fault_rate_per_gpu_day: float = 0.01  # all kinds; ~60% are GPU hardware (Llama 3 mix)
    precursor_share: float = 0.7
    new_weak_cells_per_gpu_day: float = 0.002  # the fleet ages: benign SBE emitters appear
    busy_share: float = 0.85
    repair_s: float = 6 * 3600.0
    seed: int = 11
    wear: WearSpec = BENIGN_HEAT
    start: datetime = field(default_factory=lambda: datetime(2026, 9, 1, tzinfo=UTC))


@dataclass
class FleetDay:
    """One simulated day: gpu_metrics and logs rows as the sink would write them."""

    day: int
    gpu_metrics: pd.DataFrame
    logs: pd.DataFrame


class Fleet:
    """Simulates a fleet; iterate `days()`, then read `truth`."""

    def __init__(self, spec: FleetSpec) -> None:
        self.spec = spec
        self.scenario = Scenario(
            seed=spec.seed,
            cluster=ClusterSpec(nodes=spec.nodes, gpus_per_node=spec.gpus_per_node),
            duration_s=spec.days * 86_400,
            metrics_interval_s=spec.scrape_s,
            random_faults=RandomFaults(
                rate_per_gpu_day=spec.fault_rate_per_gpu_day,
                precursor_share=spec.precursor_share,
            ),
        )
        self.rng = np.random.default_rng(spec.seed)
        shape = (spec.nodes, spec.gpus_per_node)
        self.state = GpuState(spec.nodes, spec.gpus_per_node, 1, self.rng)
        self.wear = Wear(shape, np.random.default_rng([spec.seed, 1]), spec.wear)
        self.names = [self.scenario.node_name(i) for i in range(spec.nodes)]
        self.boot = spec.start - timedelta(days=3)
        faults = draw_random_faults(self.scenario, Hardware.of(self.scenario), self.rng)
        self.faults = sorted(
            (
                f
                for f in faults
                if isinstance(f, GpuFault) and f.kind in (*HARDWARE_KINDS, "precursor")
            ),
            key=lambda f: f.at_s,
        )
        self.truth: list[dict[str, Any]] = []
        self._down_until: dict[tuple[int, int], float] = {}
        self._seq: dict[str, int] = {}

    def ts(self, t: float) -> datetime:
        """Return the wall time of simulation second t."""
        return self.spec.start + timedelta(seconds=t)

    def days(self) -> Iterator[FleetDay]:
        """Simulate day by day; yield each day's rows."""
        s = self.spec
        ticks_per_day = int(86_400 / s.scrape_s)
        pending = list(self.faults)
        for day in range(int(s.days)):
            batch = ColumnBatch()
            if day % 1 == 0:
                self._reschedule_jobs()
            self._age(s.scrape_s * ticks_per_day)
            for k in range(ticks_per_day):
                t = (day * ticks_per_day + k) * s.scrape_s
                self._tick(t, pending, batch)
            yield FleetDay(day, _frame(batch, GPU_METRICS.name), _frame(batch, LOGS.name))

    # ------------------------------------------------------------------ one tick
    def _tick(self, t: float, pending: list[GpuFault], batch: ColumnBatch) -> None:
        dt = self.spec.scrape_s
        while pending and pending[0].at_s <= t:
            self._fail(pending.pop(0), t, batch)
        for n, g in self.wear.tick(self.state, t, dt):
            self._xid(batch, n, g, t, 63)
        benign = self.rng.random(self.state.shape) < BENIGN_XID63_PER_GPU_DAY * dt / 86_400
        for n, g in zip(*np.nonzero(benign), strict=True):
            self.state.counters["remapped_correctable"][n, g] += 1
            self._xid(batch, int(n), int(g), t, 63)
        for f in self.faults:
            onset = f.at_s - f.lead_s
            if (
                f.kind == "precursor"
                and onset <= t < f.at_s
                and (f.node, f.gpu) not in self._down_until
            ):
                progress = (t - onset) / f.lead_s
                if precursor_step(
                    self.state, self.rng, f.node, f.gpu, progress, dt, f.style, f.intensity
                ):
                    self._xid(batch, f.node, f.gpu, t, 63)
        for key, until in list(self._down_until.items()):
            if until <= t:
                self._replace(*key)
        self.state.advance(dt)
        for scrape in self.state.gpu_scrapes(self.ts(t), self.names):
            batch.add_event(scrape, _POS)

    def _fail(self, f: GpuFault, t: float, batch: ColumnBatch) -> None:
        key = (f.node, f.gpu)
        if key in self._down_until:
            return
        kind = f.then if f.kind == "precursor" else f.kind
        st = self.state
        if kind == "xid79":
            self._lines(
                batch, f.node, t, logtext.xid79_lines(st.pci[f.gpu], st.uuids[f.node][f.gpu])
            )
            st.nvml_error[key] = "NVML_ERROR_GPU_IS_LOST"
        elif kind == "ecc_dbe":
            for name in ("ecc_dbe_vol", "ecc_dbe_agg", "remapped_uncorrectable"):
                st.counters[name][key] += 1
            st.counters["remap_pending"][key] = 1
            self._xid(batch, f.node, f.gpu, t, 48)
            self._xid(batch, f.node, f.gpu, t, 95)
            st.nvml_error[key] = "NVML_ERROR_UNKNOWN"  # drained for an HBM swap
        else:
            self._lines(batch, f.node, t, logtext.gsp_timeout_lines(f.gpu, st.pci[f.gpu], 4242))
            st.nvml_error[key] = "NVML_ERROR_TIMEOUT"
        self.truth.append(
            {
                "kind": kind,
                "component": {
                    "type": "gpu",
                    "node": self.names[f.node],
                    "gpu": f.gpu,
                    "uuid": st.uuids[f.node][f.gpu],
                },
                "onset_s": t,
                "onset": self.ts(t).isoformat(),
                "precursor": None
                if f.kind != "precursor"
                else {"style": f.style, "intensity": f.intensity, "lead_s": f.lead_s},
            }
        )
        self._down_until[key] = t + self.spec.repair_s

    def _replace(self, n: int, g: int) -> None:
        """Swap in a new, healthy GPU (new UUID, counters at zero)."""
        st = self.state
        del self._down_until[(n, g)]
        st.nvml_error.pop((n, g), None)
        for name in _COUNTERS:
            st.counters[name][n, g] = 0
        st.temp_offset[n, g] = 0.0
        st.throttle[n, g] = 0
        for rates in (
            self.wear.sbe_rate,
            self.wear.replay_rate,
            self.wear.crc_rate,
            self.wear.remap_rate,
        ):
            rates[n, g] = 0.0
        st.uuids[n][g] = f"GPU-{self.rng.integers(0, 2**32):08x}-repl-{n:04d}-{g:02d}"

    def _reschedule_jobs(self) -> None:
        """Jobs come and go: each node is busy or idle for the day."""
        busy = self.rng.random(self.spec.nodes) < self.spec.busy_share
        self.state.activity[:] = np.where(busy[:, None], COMPUTE, IDLE)

    def _age(self, dt: float) -> None:
        """Healthy GPUs develop weak HBM cells as the fleet ages (a slow drift)."""
        w = self.wear
        new = (w.sbe_rate == 0) & (
            self.rng.random(w.sbe_rate.shape) < self.spec.new_weak_cells_per_gpu_day * dt / 86_400
        )
        w.sbe_rate[new] = (
            w.spec.weak_cell_sbe_per_day * np.exp(self.rng.normal(0, 1.0, int(new.sum()))) / 86_400
        )
        w.remap_rate[new] = w.spec.benign_remap_per_day / 86_400

    # ------------------------------------------------------------------ logs
    def _xid(self, batch: ColumnBatch, n: int, g: int, t: float, code: int) -> None:
        pid = int(self.rng.integers(1000, 4_000_000))
        self._lines(batch, n, t, logtext.xid_lines(self.state.pci[g], code, pid))

    def _lines(self, batch: ColumnBatch, n: int, t: float, lines: list[str]) -> None:
        name = self.names[n]
        prefix = logtext.kernel_prefix(self.ts(t), self.boot, name)
        for line in lines:
            seq = self._seq.get(name, 0)
            event = LogLine(
                node=name,
                ts=self.ts(t),
                source=LogSource.KERNEL,
                line=prefix + line,
                path=KERNEL_PATH,
                seq=seq,
            )
            self._seq[name] = seq + len(event.line) + 1
            batch.add_event(event, _POS)


def _frame(batch: ColumnBatch, table: str) -> pd.DataFrame:
    from analytics.tables import TABLES_BY_NAME

    cols = batch.columns(TABLES_BY_NAME[table])
    if not cols:
        return pd.DataFrame(columns=TABLES_BY_NAME[table].column_names)
    return pd.DataFrame(cols)
