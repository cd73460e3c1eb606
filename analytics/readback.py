"""Rebuild typed events from stored rows (round-trip checks, replays, exports)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson
import pandas as pd

from analytics.store import Store
from analytics.tables import (
    COLLECTIVES,
    DISK_METRICS,
    GPU_METRICS,
    HOST_METRICS,
    LOGS,
    NIC_METRICS,
    TRAIN_STEPS,
    Table,
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

_GPU_ALIASES = {GpuSample.model_fields[n].alias: n for n in GPU_METRIC_FIELDS}


def _rows(store: Store, table: Table) -> list[dict[str, Any]]:
    cols = ", ".join(f"`{c}`" for c in table.column_names if c != "ts")
    frame = store.query_df(
        f"SELECT toUInt32(ts) AS ts_s, {cols} FROM `{store.database}`.`{table.name}` "
        "ORDER BY src_topic, src_partition, src_offset"
    )
    frame = frame.astype(object).where(pd.notna(frame), None)
    rows: list[dict[str, Any]] = [
        {str(k): v for k, v in r.items()} for r in frame.to_dict("records")
    ]
    for row in rows:
        row["ts"] = pd.Timestamp(
            int(row.pop("ts_s")) * 1_000_000 + int(row.pop("ts_us")), unit="us", tz="UTC"
        ).to_pydatetime()
    return rows


def _clean(row: dict[str, Any], drop: tuple[str, ...]) -> dict[str, Any]:
    skip = {"src_topic", "src_partition", "src_offset", "event_id", *drop}
    return {k: v for k, v in row.items() if k not in skip and v not in ("", None)}


def _us(value: Any) -> Any:
    return None if value is None else pd.Timestamp(int(value), unit="us", tz="UTC").to_pydatetime()


def gpu_events(store: Store) -> list[GpuMetrics]:
    """Rebuild node scrapes from gpu_metrics rows."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(store, GPU_METRICS):
        groups[row["event_id"]].append(row)
    events = []
    for event_id, rows in groups.items():
        gpus = [
            GpuSample(**{_GPU_ALIASES.get(k, k): v for k, v in _clean(r, ("node", "ts")).items()})
            for r in rows
        ]
        events.append(
            GpuMetrics(
                id=event_id,
                node=rows[0]["node"],
                ts=rows[0]["ts"],
                gpus=sorted(gpus, key=lambda g: g.gpu),
            )
        )
    return events


def host_events(store: Store) -> list[HostMetrics]:
    """Rebuild host scrapes from host, NIC and disk rows."""
    parts: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for table in (NIC_METRICS, DISK_METRICS):
        for row in _rows(store, table):
            parts[row["event_id"]][table.name].append(_clean(row, ("node", "ts")))
    return [
        HostMetrics(
            id=row["event_id"],
            **_clean(row, ()),
            nics=parts[row["event_id"]][NIC_METRICS.name],
            disks=parts[row["event_id"]][DISK_METRICS.name],
        )
        for row in _rows(store, HOST_METRICS)
    ]


def log_events(store: Store) -> list[LogLine]:
    """Rebuild log lines."""
    return [
        LogLine(id=r["event_id"], **{**_clean(r, ()), "line": r["line"]})
        for r in _rows(store, LOGS)
    ]


def step_events(store: Store) -> list[TrainStep]:
    """Rebuild training steps (rank -1 is a job-level record)."""
    out = []
    for r in _rows(store, TRAIN_STEPS):
        fields = _clean(r, ())
        if fields.get("rank") == -1:
            fields.pop("rank")
        fields["skipped"] = bool(fields.get("skipped", 0))
        out.append(TrainStep(id=r["event_id"], **fields))
    return out


def collective_events(store: Store) -> list[CollectiveProgress]:
    """Rebuild collective-progress records."""
    out = []
    for r in _rows(store, COLLECTIVES):
        fields = _clean(r, ("time_created_us", "time_started_us", "time_completed_us"))
        out.append(
            CollectiveProgress(
                id=r["event_id"],
                time_created=_us(r["time_created_us"]),
                time_started=_us(r["time_started_us"]),
                time_completed=_us(r["time_completed_us"]),
                **fields,
            )
        )
    return out


def topology_events(store: Store) -> list[JobTopology]:
    """Rebuild job topologies from their stored payload."""
    frame = store.query_df(
        f"SELECT payload FROM `{store.database}`.job_topology "
        "ORDER BY src_topic, src_partition, src_offset"
    )
    return (
        [JobTopology.model_validate(orjson.loads(p)) for p in frame["payload"]]
        if len(frame)
        else []
    )


def all_events(store: Store) -> list[EventBase]:
    """Rebuild every stored event of every kind."""
    return [
        *gpu_events(store),
        *host_events(store),
        *log_events(store),
        *step_events(store),
        *collective_events(store),
        *topology_events(store),
    ]
