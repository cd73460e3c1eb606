"""Read models for on-call views: jobs with progress and ETTR, GPU health, node history.

Each function takes the store and returns a DataFrame or plain values; the API turns them
into responses. Times are the telemetry's (event time), never the API server's clock.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from analytics.store import Store
from analytics.tables import cluster_filter

# A step gap this many times the job's median step time counts as lost (a stall, a restart).
STALL_FACTOR = 3.0


def jobs_overview(store: Store, cluster: str | None = None) -> pd.DataFrame:
    """Return one row per job and cluster: layout, nodes, telemetry times, steps, ETTR so far.

    `cluster` narrows to one cluster (None: all); the `cluster` column holds the stored value
    ('' for the default cluster, analytics/tables.py).
    """
    db = store.database
    where, params = cluster_filter(cluster)
    topo = store.query_df(
        f"SELECT job_id, cluster, argMax(world_size, ts) AS world_size, argMax(tp, ts) AS tp, "
        f"argMax(pp, ts) AS pp, argMax(dp, ts) AS dp, argMax(ep, ts) AS ep, "
        f"argMax(scheduler, ts) AS scheduler, argMax(scheduler_job_id, ts) AS scheduler_job_id, "
        f"length(argMax(nodes, ts)) AS nodes FROM `{db}`.job_topology WHERE {where} "
        f"GROUP BY job_id, cluster ORDER BY job_id, cluster",
        params,
    )
    if topo.empty:
        return topo
    steps = job_progress(store, now=latest_data_time(store), cluster=cluster)
    return topo.merge(steps, on=["job_id", "cluster"], how="left")


def job_progress(
    store: Store,
    job_id: str | None = None,
    now: datetime | None = None,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Return per job: last step, first/last step time, median step time and ETTR so far.

    ETTR (effective training time ratio) = steps completed x median step time / time from the
    first step to `now` (the fleet's latest telemetry; default: the job's last step): stalls,
    restarts and slowdowns all lower it. A job that ended is charged until `now` too.
    """
    where, params = cluster_filter(cluster)
    if job_id:
        where += " AND job_id = %(job)s"
        params["job"] = job_id
    frame = store.query_df(
        f"SELECT job_id, cluster, max(step) AS last_step, min(step) AS first_step, "
        f"toUInt32(min(ts)) AS first_ts, toUInt32(max(ts)) AS last_ts, "
        f"quantile(0.5)(step_time_s) AS median_step_s, avg(mfu) AS mfu "
        f"FROM `{store.database}`.train_steps WHERE {where} GROUP BY job_id, cluster",
        params,
    )
    if frame.empty:
        return pd.DataFrame(
            columns=[
                "job_id",
                "cluster",
                "last_step",
                "first_ts",
                "last_ts",
                "median_step_s",
                "mfu",
                "ettr",
            ]
        )
    end = frame["last_ts"] if now is None else frame["last_ts"].clip(lower=int(now.timestamp()))
    elapsed = (end - frame["first_ts"]).clip(lower=1)
    done = (frame["last_step"] - frame["first_step"]).clip(lower=0)
    frame["ettr"] = (done * frame["median_step_s"] / elapsed).clip(upper=1.0).round(4)
    return frame.drop(columns=["first_step"])


def step_series(
    store: Store, job_id: str, limit: int = 2000, cluster: str | None = None
) -> pd.DataFrame:
    """Return the job's recent steps: slowest rank's step time, mean loss, MFU, time."""
    where, params = cluster_filter(cluster)
    frame = store.query_df(
        f"SELECT step, toUInt32(max(ts)) AS ts, max(step_time_s) AS step_time_s, "
        f"avg(loss) AS loss, avg(mfu) AS mfu, avg(grad_norm) AS grad_norm "
        f"FROM `{store.database}`.train_steps WHERE job_id = %(job)s AND {where} "
        f"GROUP BY step ORDER BY step DESC LIMIT {int(limit)}",
        {"job": job_id, **params},
    )
    return frame.sort_values("step").reset_index(drop=True)


def latest_data_time(store: Store) -> datetime | None:
    """Return the newest GPU sample's time (the fleet's "now" in telemetry time)."""
    frame = store.query_df(f"SELECT toUInt32(max(ts)) AS t FROM `{store.database}`.gpu_metrics")
    value = next((int(t) for (t,) in frame.itertuples(index=False)), 0)
    return datetime.fromtimestamp(value, UTC) if value else None


def gpu_latest(store: Store, since: datetime) -> pd.DataFrame:
    """Return each GPU's latest sample since a time: temperature, power, ECC, NVML error.

    GPUs are told apart by cluster, node and index (`cluster`: '' for the default cluster).
    """
    frame = store.query_df(
        f"SELECT cluster, node, gpu, toUInt32(max(ts)) AS last_ts, "
        f"argMax(DCGM_FI_DEV_GPU_TEMP, ts) AS temp_c, "
        f"argMax(DCGM_FI_DEV_POWER_USAGE, ts) AS power_w, "
        f"argMax(DCGM_FI_DEV_GPU_UTIL, ts) AS util, "
        f"argMax(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, ts) AS sbe, "
        f"argMax(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, ts) AS dbe, "
        f"argMax(nvml_error, ts) AS nvml_error "
        f"FROM `{store.database}`.gpu_metrics WHERE ts >= toDateTime(%(since)s) "
        f"GROUP BY cluster, node, gpu ORDER BY node, gpu, cluster",
        {"since": int(since.timestamp())},
    )
    return frame


def xid_history(
    store: Store, node: str, limit: int = 200, cluster: str | None = None
) -> pd.DataFrame:
    """Return a node's kernel Xid lines, newest first."""
    where, params = cluster_filter(cluster)
    return store.query_df(
        f"SELECT toUInt32(ts) AS ts, line FROM `{store.database}`.logs "
        f"WHERE node = %(node)s AND {where} AND position(line, 'NVRM: Xid') > 0 "
        f"ORDER BY ts DESC, ts_us DESC LIMIT {int(limit)}",
        {"node": node, **params},
    )


def gpu_series(
    store: Store,
    node: str,
    start: datetime,
    end: datetime,
    limit: int = 5000,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Return a node's GPU samples in [start, end]: temperature, power, utilization, SBE."""
    where, params = cluster_filter(cluster)
    return store.query_df(
        f"SELECT toUInt32(ts) AS ts, gpu, DCGM_FI_DEV_GPU_TEMP AS temp_c, "
        f"DCGM_FI_DEV_POWER_USAGE AS power_w, DCGM_FI_DEV_GPU_UTIL AS util, "
        f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL AS sbe FROM `{store.database}`.gpu_metrics "
        f"WHERE node = %(node)s AND {where} "
        f"AND ts >= toDateTime(%(s)s) AND ts <= toDateTime(%(e)s) "
        f"ORDER BY ts, gpu LIMIT {int(limit)}",
        {"node": node, "s": int(start.timestamp()), "e": int(end.timestamp()) + 1, **params},
    )
