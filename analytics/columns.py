"""Turn decoded events into per-table columns (the sink's hot path)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

import orjson

from analytics.tables import (
    COLLECTIVES,
    DEAD_LETTER,
    DISK_METRICS,
    GPU_METRICS,
    HOST_METRICS,
    JOB_TOPOLOGY,
    LOGS,
    NIC_COUNTERS,
    NIC_METRICS,
    TRAIN_STEPS,
)
from ingest.schema import (
    GPU_METRIC_FIELDS,
    CollectiveProgress,
    EventBase,
    GpuMetrics,
    GpuSample,
    HostMetrics,
    JobTopology,
    LogLine,
    TrainStep,
)

Columns = dict[str, list[object]]
_GPU_PAIRS = tuple((n, GpuSample.model_fields[n].alias or n) for n in GPU_METRIC_FIELDS)
_STEP_FLOATS = ("loss", "grad_norm", "tokens_per_s", "mfu", "step_time_s", "lr", "loss_scale")


class ColumnBatch:
    """Columns per table, filled row by row; each row knows its Kafka position."""

    def __init__(self) -> None:
        self.tables: dict[str, Columns] = defaultdict(lambda: defaultdict(list))
        self.rows: dict[str, int] = defaultdict(int)

    def add_event(self, event: EventBase, topic: str, partition: int, offset: int) -> None:
        """Append the rows of one event to the tables it feeds."""
        _BUILDERS[type(event)](self, event, (topic, partition, offset))

    def add_dead_letter(
        self, topic: str, partition: int, offset: int, key: bytes | None, raw: bytes, reason: str,
        received: datetime,
    ) -> None:
        """Append one undecodable record."""
        cols = self._table(DEAD_LETTER.name)
        sec, us = _split(received)
        for name, value in (("ts", sec), ("ts_us", us), ("src_topic", topic), ("src_partition", partition),
                            ("src_offset", offset), ("key", key or b""), ("raw", raw),
                            ("reason", reason)):
            cols[name].append(value)

    def _table(self, name: str) -> Columns:
        self.rows[name] += 1
        return self.tables[name]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _split(ts: datetime) -> tuple[int, int]:
    """Return (epoch seconds, microseconds) exactly, without float rounding."""
    delta = ts - _EPOCH
    return delta.days * 86_400 + delta.seconds, delta.microseconds


def _us(ts: datetime | None) -> int | None:
    if ts is None:
        return None
    sec, us = _split(ts)
    return sec * 1_000_000 + us


def _lineage(cols: Columns, event: EventBase, pos: tuple[str, int, int]) -> None:
    cols["event_id"].append(event.id)
    cols["src_topic"].append(pos[0])
    cols["src_partition"].append(pos[1])
    cols["src_offset"].append(pos[2])


def _head(batch: ColumnBatch, table: str, event: EventBase, pos: tuple[str, int, int]) -> Columns:
    cols = batch._table(table)
    sec, us = _split(event.ts)
    cols["ts"].append(sec)
    cols["ts_us"].append(us)
    _lineage(cols, event, pos)
    return cols


def _gpu(batch: ColumnBatch, ev: GpuMetrics, pos: tuple[str, int, int]) -> None:
    cols = batch.tables[GPU_METRICS.name]
    sec, us = _split(ev.ts)
    for g in ev.gpus:
        batch.rows[GPU_METRICS.name] += 1
        values = g.__dict__
        cols["ts"].append(sec)
        cols["ts_us"].append(us)
        cols["node"].append(ev.node)
        cols["gpu"].append(g.gpu)
        cols["uuid"].append(g.uuid or "")
        cols["pci_bus_id"].append(g.pci_bus_id or "")
        cols["nvml_error"].append(g.nvml_error or "")
        for name, alias in _GPU_PAIRS:
            cols[alias].append(values[name])
        _lineage(cols, ev, pos)


def _host(batch: ColumnBatch, ev: HostMetrics, pos: tuple[str, int, int]) -> None:
    cols = _head(batch, HOST_METRICS.name, ev, pos)
    cols["node"].append(ev.node)
    for name in ("cpu_util", "load1", "mem_used_bytes", "mem_total_bytes", "swap_used_bytes"):
        cols[name].append(getattr(ev, name))
    for nic in ev.nics:
        c = _head(batch, NIC_METRICS.name, ev, pos)
        for name, value in (("node", ev.node), ("nic", nic.nic), ("port", nic.port),
                            ("state", nic.state), ("phys_state", nic.phys_state or ""),
                            ("rate_gbps", nic.rate_gbps)):
            c[name].append(value)
        for name in NIC_COUNTERS:
            c[name].append(getattr(nic, name))
    for disk in ev.disks:
        c = _head(batch, DISK_METRICS.name, ev, pos)
        for name, value in (("node", ev.node), ("mount", disk.mount),
                            ("used_bytes", disk.used_bytes), ("total_bytes", disk.total_bytes)):
            c[name].append(value)


def _log(batch: ColumnBatch, ev: LogLine, pos: tuple[str, int, int]) -> None:
    cols = _head(batch, LOGS.name, ev, pos)
    for name, value in (("node", ev.node), ("source", ev.source.value), ("path", ev.path or ""),
                        ("seq", ev.seq), ("job_id", ev.job_id or ""), ("rank", ev.rank),
                        ("line", ev.line)):
        cols[name].append(value)


def _step(batch: ColumnBatch, ev: TrainStep, pos: tuple[str, int, int]) -> None:
    cols = _head(batch, TRAIN_STEPS.name, ev, pos)
    for name, value in (("job_id", ev.job_id), ("step", ev.step),
                        ("rank", -1 if ev.rank is None else ev.rank), ("node", ev.node or ""),
                        ("skipped", int(ev.skipped))):
        cols[name].append(value)
    for name in _STEP_FLOATS:
        cols[name].append(getattr(ev, name))


def _collective(batch: ColumnBatch, ev: CollectiveProgress, pos: tuple[str, int, int]) -> None:
    cols = _head(batch, COLLECTIVES.name, ev, pos)
    for name, value in (("job_id", ev.job_id), ("rank", ev.rank), ("node", ev.node or ""),
                        ("comm", ev.comm), ("op", ev.op), ("seq", ev.seq),
                        ("p2p_seq", ev.p2p_seq), ("state", ev.state.value), ("bytes", ev.bytes),
                        ("dtype", ev.dtype or ""), ("peer", ev.peer),
                        ("time_created_us", _us(ev.time_created)),
                        ("time_started_us", _us(ev.time_started)),
                        ("time_completed_us", _us(ev.time_completed)),
                        ("duration_ms", ev.duration_ms), ("timeout_ms", ev.timeout_ms),
                        ("reporter", ev.reporter)):
        cols[name].append(value)


def _topology(batch: ColumnBatch, ev: JobTopology, pos: tuple[str, int, int]) -> None:
    cols = _head(batch, JOB_TOPOLOGY.name, ev, pos)
    layout = ev.layout
    for name, value in (("job_id", ev.job_id), ("world_size", ev.world_size), ("tp", layout.tp),
                        ("pp", layout.pp), ("dp", layout.dp), ("ep", layout.ep),
                        ("cp", layout.cp), ("scheduler", ev.scheduler or ""),
                        ("scheduler_job_id", ev.scheduler_job_id or ""),
                        ("nodes", sorted({r.node for r in ev.ranks})),
                        ("payload", orjson.dumps(ev.model_dump(mode="json", exclude_none=True)))):
        cols[name].append(value)


_BUILDERS: dict[type, Callable[[ColumnBatch, object, tuple[str, int, int]], None]] = {
    GpuMetrics: _gpu,  # type: ignore[dict-item]
    HostMetrics: _host,  # type: ignore[dict-item]
    LogLine: _log,  # type: ignore[dict-item]
    TrainStep: _step,  # type: ignore[dict-item]
    CollectiveProgress: _collective,  # type: ignore[dict-item]
    JobTopology: _topology,  # type: ignore[dict-item]
}
