"""Rebuild typed events from stored rows (round-trip checks, replays, exports)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
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
    TABLES_BY_NAME,
    TRAIN_STEPS,
    Table,
    cluster_name,
    stored_cluster,
)
from ingest.bus import TopicPartition
from ingest.schema import (
    DEFAULT_CLUSTER,
    GPU_METRIC_FIELDS,
    CollectiveProgress,
    EventBase,
    GpuMetrics,
    GpuSample,
    HostMetrics,
    JobTopology,
    LogLine,
    PortSeen,
    TrainStep,
)

_GPU_ALIASES = {GpuSample.model_fields[n].alias: n for n in GPU_METRIC_FIELDS}


def _rows(
    store: Store,
    table: Table,
    where: str = "1",
    params: dict[str, Any] | None = None,
    order: str = "src_topic, src_partition, src_offset",
) -> list[dict[str, Any]]:
    cols = ", ".join(f"`{c}`" for c in table.column_names if c != "ts")
    frame = store.query_df(
        f"SELECT toUInt32(ts) AS ts_s, {cols} FROM `{store.database}`.`{table.name}` "
        f"WHERE {where} ORDER BY {order}",
        params,
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
                cluster=cluster_name(rows[0].get("cluster")),
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
    return [_step(r) for r in _rows(store, TRAIN_STEPS)]


_BEFORE = "(toUInt64(toUInt32(ts)) * 1000000 + ts_us) < %(before)s"


Reread = Mapping[TopicPartition, int]
"""Where a reader reads partitions again from the bus: rows at or after it are left out."""


def recent_job_steps(
    store: Store,
    job_id: str,
    count: int,
    before: datetime | Reread | None = None,
    cluster: str = DEFAULT_CLUSTER,
) -> list[TrainStep]:
    """Return a job's newest `count` job-level steps (before `before`), oldest first."""
    params: dict[str, Any] = {"job": job_id, "cluster": stored_cluster(cluster)}
    rows = _rows(
        store,
        TRAIN_STEPS,
        f"job_id = %(job)s AND cluster = %(cluster)s AND rank = -1 AND {_before(before, params)}",
        params,
        f"ts DESC, ts_us DESC LIMIT {int(count)}",
    )
    return [_step(r) for r in reversed(rows)]


def recent_collectives(
    store: Store,
    job_id: str,
    since: datetime,
    limit: int,
    before: datetime | Reread | None = None,
    cluster: str = DEFAULT_CLUSTER,
) -> list[CollectiveProgress]:
    """Return a job's collective records from `since` to `before` (the newest `limit`)."""
    params: dict[str, Any] = {
        "job": job_id,
        "since": int(since.timestamp()),
        "cluster": stored_cluster(cluster),
    }
    rows = _rows(
        store,
        COLLECTIVES,
        f"job_id = %(job)s AND cluster = %(cluster)s AND ts >= toDateTime(%(since)s) "
        f"AND {_before(before, params)}",
        params,
        f"ts DESC, ts_us DESC LIMIT {int(limit)}",
    )
    return [_collective(r) for r in reversed(rows)]


def port_states(
    store: Store, nodes: Collection[str], before: datetime | None, lookback: timedelta
) -> dict[str, dict[tuple[str, str, int], PortSeen]]:
    """Return each NIC port of `nodes` as last sampled before `before` (None: the newest
    stored), per cluster: {cluster: {(node, nic, port): PortSeen}}; samples older than
    `lookback` before that point are not looked at. The nodes lead the table's sort key, so
    the read touches their rows only, not a whole day of the fleet's."""
    if not nodes:
        return {}
    db = store.database
    params: dict[str, Any] = {"nodes": tuple(sorted(set(nodes)))}
    if before is None:
        frame = store.query_df(
            f"SELECT toUInt32(max(ts)) AS t FROM `{db}`.`{NIC_METRICS.name}` "
            f"WHERE node IN %(nodes)s",
            params,
        )
        newest = int(frame["t"].iloc[0]) if not frame.empty else 0
        if not newest:
            return {}
        params["since"] = newest - int(lookback.total_seconds())
    else:
        params["since"] = int((before - lookback).timestamp())
    frame = store.query_df(
        f"SELECT cluster, node, nic, port, argMax(state, (ts, ts_us)) AS state, "
        f"argMax(link_downed, (ts, ts_us)) AS link_downed "
        f"FROM `{db}`.`{NIC_METRICS.name}` "
        f"WHERE node IN %(nodes)s AND ts >= toDateTime(%(since)s) AND {_before(before, params)} "
        f"GROUP BY cluster, node, nic, port",
        params,
    )
    ports: dict[str, dict[tuple[str, str, int], PortSeen]] = defaultdict(dict)
    for cluster, node, nic, port, state, downed in frame.itertuples(index=False):
        counter = None if pd.isna(downed) else int(downed)
        ports[cluster_name(cluster)][(str(node), str(nic), int(port))] = PortSeen(
            str(state).upper(), counter
        )
    return dict(ports)


def stored_through(store: Store, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """Return, per partition, the highest offset whose rows the sink stored (absent: none).

    The sink writes a partition's records in offset order and commits only after the write,
    so everything of the partition up to this offset is in the store (but rows of its last
    batch still on their way to other tables).
    """
    wanted = set(partitions)
    if not wanted:
        return {}
    topics = tuple(sorted({tp.topic for tp in wanted}))
    marks: dict[TopicPartition, int] = {}
    for table in TABLES_BY_NAME:
        frame = store.query_df(
            f"SELECT src_topic, src_partition, max(src_offset) AS mark "
            f"FROM `{store.database}`.`{table}` WHERE src_topic IN %(topics)s "
            f"GROUP BY src_topic, src_partition",
            {"topics": topics},
        )
        for topic, part, mark in frame.itertuples(index=False):
            tp = TopicPartition(str(topic), int(part))
            if tp in wanted:
                marks[tp] = max(marks.get(tp, -1), int(mark))
    return marks


def _before(before: datetime | Reread | None, params: dict[str, Any]) -> str:
    """Return the condition "stored before `before`": a time, or the bus positions a reader
    reads again from (rows of those partitions at or after them are left out)."""
    if before is None or isinstance(before, datetime):
        params["before"] = _micros(before)
        return _BEFORE
    if not before:
        return "1"
    keys = sorted(before, key=lambda tp: (tp.topic, tp.partition))
    params["reread_keys"] = [f"{tp.topic}/{tp.partition}" for tp in keys]
    params["reread_from"] = [int(before[tp]) for tp in keys]
    return (
        "src_offset < transform(concat(src_topic, '/', toString(src_partition)), "
        "%(reread_keys)s, CAST(%(reread_from)s AS Array(UInt64)), toUInt64(18446744073709551615))"
    )


def _micros(at: datetime | None) -> int:
    """Return epoch microseconds (no bound: the largest a UInt64 comparison takes)."""
    if at is None:
        return 2**63 - 1
    return int(at.timestamp()) * 1_000_000 + at.microsecond


def _step(r: dict[str, Any]) -> TrainStep:
    fields = _clean(r, ())
    if fields.get("rank") == -1:
        fields.pop("rank")
    fields["skipped"] = bool(fields.get("skipped", 0))
    return TrainStep(id=r["event_id"], **fields)


def _collective(r: dict[str, Any]) -> CollectiveProgress:
    fields = _clean(r, ("time_created_us", "time_started_us", "time_completed_us"))
    return CollectiveProgress(
        id=r["event_id"],
        time_created=_us(r["time_created_us"]),
        time_started=_us(r["time_started_us"]),
        time_completed=_us(r["time_completed_us"]),
        **fields,
    )


def collective_events(store: Store) -> list[CollectiveProgress]:
    """Rebuild collective-progress records."""
    return [_collective(r) for r in _rows(store, COLLECTIVES)]


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
