"""Query helpers over the telemetry tables; each takes the store and returns a DataFrame."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pandas as pd

from analytics.store import Store, query_scalar
from analytics.tables import ALL_TABLES, GPU_METRICS, TABLES_BY_NAME, Table, cluster_filter
from ingest.schema import JobTopology

_TIME = "toUInt32(ts) AS ts_s, ts_us"


def _epoch(ts: datetime) -> int:
    return int(ts.astimezone(UTC).timestamp())


def _with_time(frame: pd.DataFrame) -> pd.DataFrame:
    """Replace (ts_s, ts_us) with one UTC `time` column."""
    if frame.empty:
        return frame.assign(time=pd.Series(dtype="datetime64[us, UTC]"))
    micros = frame.pop("ts_s").astype("int64") * 1_000_000 + frame.pop("ts_us").astype("int64")
    frame.insert(0, "time", pd.to_datetime(micros, unit="us", utc=True))
    return frame


def _columns(table: Table, skip: tuple[str, ...] = ("ts", "ts_us")) -> str:
    return ", ".join(f"`{c}`" for c in table.column_names if c not in skip)


def _window(
    store: Store, table: Table, where: str, params: dict[str, object], order: str
) -> pd.DataFrame:
    sql = (
        f"SELECT {_TIME}, {_columns(table)} FROM `{store.database}`.`{table.name}` "
        f"WHERE ts >= toDateTime(%(start)s) AND ts <= toDateTime(%(end)s) {where} "
        f"ORDER BY {order}"
    )
    return _with_time(store.query_df(sql, params))


def gpu_window(
    store: Store, node: str, start: datetime, end: datetime, gpu: int | None = None
) -> pd.DataFrame:
    """Return one node's GPU samples in [start, end], optionally one GPU, in time order."""
    params: dict[str, object] = {"node": node, "start": _epoch(start), "end": _epoch(end) + 1}
    where = "AND node = %(node)s"
    if gpu is not None:
        where += " AND gpu = %(gpu)s"
        params["gpu"] = gpu
    return _window(store, GPU_METRICS, where, params, "gpu, ts, ts_us")


def node_window(
    store: Store, table: str, node: str, start: datetime, end: datetime
) -> pd.DataFrame:
    """Return one node's rows of a node-keyed table (host, nic, disk, logs) in [start, end]."""
    params: dict[str, object] = {"node": node, "start": _epoch(start), "end": _epoch(end) + 1}
    return _window(store, _table(table), "AND node = %(node)s", params, "ts, ts_us")


def job_steps(store: Store, job_id: str, first: int = 0, last: int | None = None) -> pd.DataFrame:
    """Return a job's training-step records for steps in [first, last]."""
    table = _table("train_steps")
    sql = (
        f"SELECT {_TIME}, {_columns(table)} FROM `{store.database}`.train_steps "
        "WHERE job_id = %(job)s AND step >= %(first)s AND step <= %(last)s "
        "ORDER BY step, rank, ts, ts_us"
    )
    return _with_time(
        store.query_df(
            sql, {"job": job_id, "first": first, "last": last if last is not None else 2**63 - 1}
        )
    )


def job_collectives(
    store: Store, job_id: str, comm: str | None = None, min_seq: int = 0
) -> pd.DataFrame:
    """Return a job's collective-progress records, optionally for one communicator."""
    table = _table("collectives")
    where = "job_id = %(job)s AND seq >= %(seq)s" + (" AND comm = %(comm)s" if comm else "")
    sql = (
        f"SELECT {_TIME}, {_columns(table)} FROM `{store.database}`.collectives "
        f"WHERE {where} ORDER BY comm, seq, rank, ts, ts_us"
    )
    return _with_time(store.query_df(sql, {"job": job_id, "seq": min_seq, "comm": comm or ""}))


def latest_topology(store: Store, job_id: str, cluster: str | None = None) -> JobTopology | None:
    """Return the most recent topology a job reported (in `cluster`; None: any), or None."""
    where, params = cluster_filter(cluster)
    payload = query_scalar(
        store,
        f"SELECT payload FROM `{store.database}`.job_topology WHERE job_id = %(job)s "
        f"AND {where} ORDER BY ts DESC, ts_us DESC LIMIT 1",
        {"job": job_id, **params},
    )
    return None if payload is None else JobTopology.model_validate(orjson.loads(payload))


def recent_topologies(store: Store, horizon_s: float) -> list[JobTopology]:
    """Return the latest topology of each job heard from within `horizon_s` of the newest job.

    A job is heard from by its topology or its training steps; the horizon is measured from
    the newest such time, not the wall clock, so an old recording's jobs come back too.
    """
    db = store.database
    # a job is named by its id within its cluster
    topo = store.query_df(
        f"SELECT job_id, cluster, argMax(payload, (ts, ts_us)) AS payload, "
        f"toUInt32(max(ts)) AS t FROM `{db}`.job_topology GROUP BY job_id, cluster"
    )
    if topo.empty:
        return []
    steps = store.query_df(
        f"SELECT job_id, cluster, toUInt32(max(ts)) AS t FROM `{db}`.train_steps "
        f"GROUP BY job_id, cluster"
    )
    heard = {(str(j), str(c)): int(t) for j, c, _p, t in topo.itertuples(index=False)}
    for job, cluster, t in steps.itertuples(index=False):
        key = (str(job), str(cluster))
        if key in heard:
            heard[key] = max(heard[key], int(t))
    newest = max(heard.values())
    return [
        JobTopology.model_validate(orjson.loads(payload))
        for job, cluster, payload, _t in topo.itertuples(index=False)
        if heard[(str(job), str(cluster))] >= newest - horizon_s
    ]


def dead_letters(store: Store, limit: int = 100) -> pd.DataFrame:
    """Return the most recent dead letters, raw key and value as bytes."""
    sql = (
        f"SELECT {_TIME}, src_topic, src_partition, src_offset, hex(key) AS key, "
        "hex(raw) AS raw, reason "
        f"FROM `{store.database}`.dead_letter ORDER BY ts DESC, ts_us DESC LIMIT {int(limit)}"
    )
    frame = store.query_df(sql)
    if frame.empty:
        return frame
    frame = _with_time(frame)
    for name in ("key", "raw"):  # hex on the wire: raw bytes come back exactly, never decoded
        frame[name] = frame[name].map(bytes.fromhex)
    return frame


def table_counts(store: Store) -> dict[str, int]:
    """Return the row count of every TrainGuard table."""
    return {
        t.name: int(query_scalar(store, f"SELECT count() FROM `{store.database}`.`{t.name}`"))
        for t in ALL_TABLES
    }


def _table(name: str) -> Table:
    try:
        return TABLES_BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known: {sorted(TABLES_BY_NAME)}") from None
