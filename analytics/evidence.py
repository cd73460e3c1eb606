"""Fleet-wide evidence queries: what the telemetry shows, before any diagnosis."""

from __future__ import annotations

import pandas as pd

from analytics.store import Store


def xid_lines_by_node(store: Store) -> pd.DataFrame:
    """Return kernel log lines carrying an Xid, counted per node."""
    return store.query_df(
        f"SELECT node, count() AS lines FROM `{store.database}`.logs "
        "WHERE source = 'kernel' AND position(line, 'Xid') > 0 "
        "GROUP BY node ORDER BY node",
    )


def gpus_with_nvml_errors(store: Store) -> pd.DataFrame:
    """Return GPUs whose samples carried an NVML error, with the error and sample count."""
    return store.query_df(
        f"SELECT node, gpu, any(nvml_error) AS error, count() AS samples "
        f"FROM `{store.database}`.gpu_metrics WHERE nvml_error != '' "
        "GROUP BY node, gpu ORDER BY node, gpu",
    )


def nic_ports_down(store: Store) -> pd.DataFrame:
    """Return NIC ports seen DOWN, with how many scrapes saw them so."""
    return store.query_df(
        f"SELECT node, nic, count() AS scrapes FROM `{store.database}`.nic_metrics "
        "WHERE state = 'DOWN' GROUP BY node, nic ORDER BY node, nic",
    )


def stalled_collectives(store: Store, limit: int = 10) -> pd.DataFrame:
    """Return collectives started and never completed, fewest waiting ranks first."""
    db = store.database
    return store.query_df(
        f"SELECT job_id, comm, seq, count() AS ranks_waiting FROM `{db}`.collectives "
        "WHERE state = 'started' GROUP BY job_id, comm, seq "
        f"ORDER BY ranks_waiting, comm LIMIT {int(limit)}",
    )


def step_times_by_job(store: Store) -> pd.DataFrame:
    """Return each job's step count and median and maximum step time."""
    return store.query_df(
        "SELECT job_id, count() AS steps, "
        "round(quantile(0.5)(step_time_s), 2) AS p50_s, "
        f"round(max(step_time_s), 2) AS max_s FROM `{store.database}`.train_steps "
        "WHERE rank = -1 GROUP BY job_id ORDER BY job_id",
    )
