"""Turn decoded events into per-table rows, then columns (the sink's hot path).

Rows are tuples in table column order, built with C-level attribute getters and transposed
once per batch; this is several times faster than appending to one list per column.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from operator import attrgetter

import orjson
from msgspec.structs import astuple

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
    Table,
    stored_cluster,
)
from ingest.fast_decode import SAMPLE_FIELDS, GpuScrape
from ingest.schema import (
    CollectiveProgress,
    EventBase,
    GpuMetrics,
    HostMetrics,
    JobTopology,
    LogLine,
    TrainStep,
)

Row = tuple[object, ...]
Columns = dict[str, list[object]]
Position = tuple[str, int, int]  # (topic, partition, offset) the event was read at

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_gpu_values = attrgetter(*SAMPLE_FIELDS)
_host_values = attrgetter(
    "cpu_util", "load1", "mem_used_bytes", "mem_total_bytes", "swap_used_bytes"
)
_nic_values = attrgetter("nic", "port", "state", "phys_state", "rate_gbps", *NIC_COUNTERS)
_step_values = attrgetter(
    "loss", "grad_norm", "tokens_per_s", "mfu", "step_time_s", "lr", "loss_scale"
)


def split_time(ts: datetime) -> tuple[int, int]:
    """Return (epoch seconds, microseconds) exactly, without float rounding."""
    delta = ts - _EPOCH
    return delta.days * 86_400 + delta.seconds, delta.microseconds


def _us(ts: datetime | None) -> int | None:
    if ts is None:
        return None
    sec, us = split_time(ts)
    return sec * 1_000_000 + us


class ColumnBatch:
    """Rows per table for one batch; each row ends with its event id, Kafka position, cluster."""

    def __init__(self) -> None:
        self.rows: dict[str, list[Row]] = defaultdict(list)

    def add_event(self, event: EventBase | GpuScrape, pos: Position) -> None:
        """Append the rows of one event to the tables it feeds."""
        _BUILDERS[type(event)](self.rows, event, pos)

    def add_dead_letter(
        self, pos: Position, key: bytes | None, raw: bytes, reason: str, received: datetime
    ) -> None:
        """Append one undecodable record."""
        self.rows[DEAD_LETTER.name].append((*split_time(received), *pos, key or b"", raw, reason))

    def columns(self, table: Table, rows: list[Row] | None = None) -> Columns:
        """Return a table's rows (or the given subset) as equal-length column lists.

        Optional text fields travel as None; non-Nullable String columns store them as ''.
        """
        chosen = self.rows[table.name] if rows is None else rows
        if not chosen:
            return {}
        cols = dict(zip(table.column_names, map(list, zip(*chosen, strict=True)), strict=True))
        for name in _plain_strings(table):
            values = cols[name]
            if None in values:
                cols[name] = ["" if v is None else v for v in values]
        return cols


_PLAIN_STRINGS: dict[str, tuple[str, ...]] = {}


def _plain_strings(table: Table) -> tuple[str, ...]:
    names = _PLAIN_STRINGS.get(table.name)
    if names is None:
        names = tuple(c.name for c in table.columns if c.type == "String")
        _PLAIN_STRINGS[table.name] = names
    return names


def _gpu(rows: dict[str, list[Row]], ev: GpuMetrics, pos: Position) -> None:
    head = (*split_time(ev.ts), ev.node)
    tail = (ev.id, *pos, stored_cluster(ev.cluster))
    out = rows[GPU_METRICS.name]
    for g in ev.gpus:
        out.append(head + _gpu_values(g) + tail)


def _gpu_scrape(rows: dict[str, list[Row]], ev: GpuScrape, pos: Position) -> None:
    """The same rows as _gpu, from the fast decoder's structs (values in SAMPLE_FIELDS order)."""
    head = (*split_time(ev.ts), ev.node)
    tail = (ev.id, *pos, stored_cluster(ev.cluster))
    rows[GPU_METRICS.name].extend([head + astuple(g) + tail for g in ev.gpus])


def _host(rows: dict[str, list[Row]], ev: HostMetrics, pos: Position) -> None:
    head = (*split_time(ev.ts), ev.node)
    tail = (ev.id, *pos, stored_cluster(ev.cluster))
    rows[HOST_METRICS.name].append((*head, *_host_values(ev), *tail))
    for nic in ev.nics:
        rows[NIC_METRICS.name].append(head + _nic_values(nic) + tail)
    for disk in ev.disks:
        rows[DISK_METRICS.name].append(
            (*head, disk.mount, disk.used_bytes, disk.total_bytes, *tail)
        )


def _log(rows: dict[str, list[Row]], ev: LogLine, pos: Position) -> None:
    rows[LOGS.name].append(
        (
            *split_time(ev.ts),
            ev.node,
            ev.source.value,
            ev.path,
            ev.seq,
            ev.job_id,
            ev.rank,
            ev.line,
            ev.id,
            *pos,
            stored_cluster(ev.cluster),
        )
    )


def _step(rows: dict[str, list[Row]], ev: TrainStep, pos: Position) -> None:
    rows[TRAIN_STEPS.name].append(
        (
            *split_time(ev.ts),
            ev.job_id,
            ev.step,
            -1 if ev.rank is None else ev.rank,
            ev.node,
            *_step_values(ev),
            int(ev.skipped),
            ev.id,
            *pos,
            stored_cluster(ev.cluster),
        )
    )


def _collective(rows: dict[str, list[Row]], ev: CollectiveProgress, pos: Position) -> None:
    rows[COLLECTIVES.name].append(
        (
            *split_time(ev.ts),
            ev.job_id,
            ev.rank,
            ev.node,
            ev.comm,
            ev.op,
            ev.seq,
            ev.p2p_seq,
            ev.state.value,
            ev.bytes,
            ev.dtype,
            ev.peer,
            _us(ev.time_created),
            _us(ev.time_started),
            _us(ev.time_completed),
            ev.duration_ms,
            ev.timeout_ms,
            ev.reporter,
            ev.id,
            *pos,
            stored_cluster(ev.cluster),
        )
    )


def _topology(rows: dict[str, list[Row]], ev: JobTopology, pos: Position) -> None:
    layout = ev.layout
    payload = orjson.dumps(ev.model_dump(mode="json", exclude_none=True))
    rows[JOB_TOPOLOGY.name].append(
        (
            *split_time(ev.ts),
            ev.job_id,
            ev.world_size,
            layout.tp,
            layout.pp,
            layout.dp,
            layout.ep,
            layout.cp,
            ev.scheduler,
            ev.scheduler_job_id,
            sorted({r.node for r in ev.ranks}),
            payload,
            ev.id,
            *pos,
            stored_cluster(ev.cluster),
        )
    )


_BUILDERS: dict[type, Callable[[dict[str, list[Row]], object, Position], None]] = {
    GpuMetrics: _gpu,  # type: ignore[dict-item]
    GpuScrape: _gpu_scrape,  # type: ignore[dict-item]
    HostMetrics: _host,  # type: ignore[dict-item]
    LogLine: _log,  # type: ignore[dict-item]
    TrainStep: _step,  # type: ignore[dict-item]
    CollectiveProgress: _collective,  # type: ignore[dict-item]
    JobTopology: _topology,  # type: ignore[dict-item]
}
