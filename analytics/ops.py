"""Read models for on-call views: jobs with progress and ETTR, GPU health, node history.

Each function takes the store and returns a DataFrame or plain values; the API turns them
into responses. Times are the telemetry's (event time), never the API server's clock.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from analytics.store import Store

# A step gap this many times the job's median step time counts as lost (a stall, a restart).
STALL_FACTOR = 3.0


def jobs_overview(store: Store) -> pd.DataFrame:
    """Return one row per job: layout, nodes, first/last telemetry, steps and ETTR so far."""
    db = store.database
    topo = store.query_df(
        f"SELECT job_id, argMax(world_size, ts) AS world_size, argMax(tp, ts) AS tp, "
        f"argMax(pp, ts) AS pp, argMax(dp, ts) AS dp, argMax(ep, ts) AS ep, "
        f"argMax(scheduler, ts) AS scheduler, argMax(scheduler_job_id, ts) AS scheduler_job_id, "
        f"length(argMax(nodes, ts)) AS nodes FROM `{db}`.job_topology GROUP BY job_id "
        f"ORDER BY job_id"
    )
    if topo.empty:
        return topo
    steps = job_progress(store, now=latest_data_time(store))
    return topo.merge(steps, on="job_id", how="left")


def job_progress(
    store: Store, job_id: str | None = None, now: datetime | None = None
) -> pd.DataFrame:
    """Return per job: last step, first/last step time, median step time and ETTR so far.

    ETTR (effective training time ratio) = steps completed x median step time / time from the
    first step to `now` (the fleet's latest telemetry; default: the job's last step): stalls,
    restarts and slowdowns all lower it. A job that ended is charged until `now` too.
    """
    where = "WHERE job_id = %(job)s" if job_id else ""
    frame = store.query_df(
        f"SELECT job_id, max(step) AS last_step, min(step) AS first_step, "
        f"toUInt32(min(ts)) AS first_ts, toUInt32(max(ts)) AS last_ts, "
        f"quantile(0.5)(step_time_s) AS median_step_s, avg(mfu) AS mfu "
        f"FROM `{store.database}`.train_steps {where} GROUP BY job_id",
        {"job": job_id} if job_id else None,
    )
    if frame.empty:
        return pd.DataFrame(
            columns=["job_id", "last_step", "first_ts", "last_ts", "median_step_s", "mfu", "ettr"]
        )
    end = frame["last_ts"] if now is None else frame["last_ts"].clip(lower=int(now.timestamp()))
    elapsed = (end - frame["first_ts"]).clip(lower=1)
    done = (frame["last_step"] - frame["first_step"]).clip(lower=0)
    frame["ettr"] = (done * frame["median_step_s"] / elapsed).clip(upper=1.0).round(4)
    return frame.drop(columns=["first_step"])


def step_series(store: Store, job_id: str, limit: int = 2000) -> pd.DataFrame:
    """Return the job's recent steps: slowest rank's step time, mean loss, MFU, time."""
    frame = store.query_df(
        f"SELECT step, toUInt32(max(ts)) AS ts, max(step_time_s) AS step_time_s, "
        f"avg(loss) AS loss, avg(mfu) AS mfu, avg(grad_norm) AS grad_norm "
        f"FROM `{store.database}`.train_steps WHERE job_id = %(job)s "
        f"GROUP BY step ORDER BY step DESC LIMIT {int(limit)}",
        {"job": job_id},
    )
    return frame.sort_values("step").reset_index(drop=True)


def latest_data_time(store: Store) -> datetime | None:
    """Return the newest GPU sample's time (the fleet's "now" in telemetry time)."""
    frame = store.query_df(f"SELECT toUInt32(max(ts)) AS t FROM `{store.database}`.gpu_metrics")
    value = next((int(t) for (t,) in frame.itertuples(index=False)), 0)
    return datetime.fromtimestamp(value, UTC) if value else None


def gpu_latest(store: Store, since: datetime) -> pd.DataFrame:
    """Return each GPU's latest sample since a time: temperature, power, ECC, NVML error."""
    frame = store.query_df(
        f"SELECT node, gpu, toUInt32(max(ts)) AS last_ts, "
        f"argMax(DCGM_FI_DEV_GPU_TEMP, ts) AS temp_c, "
        f"argMax(DCGM_FI_DEV_POWER_USAGE, ts) AS power_w, "
        f"argMax(DCGM_FI_DEV_GPU_UTIL, ts) AS util, "
        f"argMax(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, ts) AS sbe, "
        f"argMax(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, ts) AS dbe, "
        f"argMax(nvml_error, ts) AS nvml_error "
        f"FROM `{store.database}`.gpu_metrics WHERE ts >= toDateTime(%(since)s) "
        f"GROUP BY node, gpu ORDER BY node, gpu",
        {"since": int(since.timestamp())},
    )
    return frame


def xid_history(store: Store, node: str, limit: int = 200) -> pd.DataFrame:
    """Return a node's kernel Xid lines, newest first."""
    return store.query_df(
        f"SELECT toUInt32(ts) AS ts, line FROM `{store.database}`.logs "
        f"WHERE node = %(node)s AND position(line, 'NVRM: Xid') > 0 "
        f"ORDER BY ts DESC, ts_us DESC LIMIT {int(limit)}",
        {"node": node},
    )


def gpu_series(
    store: Store, node: str, start: datetime, end: datetime, limit: int = 5000
) -> pd.DataFrame:
    """Return a node's GPU samples in [start, end]: temperature, power, utilization, SBE."""
    return store.query_df(
        f"SELECT toUInt32(ts) AS ts, gpu, DCGM_FI_DEV_GPU_TEMP AS temp_c, "
        f"DCGM_FI_DEV_POWER_USAGE AS power_w, DCGM_FI_DEV_GPU_UTIL AS util, "
        f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL AS sbe FROM `{store.database}`.gpu_metrics "
        f"WHERE node = %(node)s AND ts >= toDateTime(%(s)s) AND ts <= toDateTime(%(e)s) "
        f"ORDER BY ts, gpu LIMIT {int(limit)}",
        {"node": node, "s": int(start.timestamp()), "e": int(end.timestamp()) + 1},
    )
