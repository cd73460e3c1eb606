"""Fleet statistics over GPU telemetry, aggregated in ClickHouse (16,384 GPUs and more)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

from analytics.store import Store
from analytics.tables import cluster_filter


def gpu_health_summary(
    store: Store, start: datetime, end: datetime, limit: int = 10
) -> pd.DataFrame:
    """Return the hottest GPUs in [start, end] with power, SBE growth and NVML errors."""
    sql = (
        "SELECT node, gpu, count() AS samples, "
        "round(avg(DCGM_FI_DEV_GPU_TEMP), 1) AS temp_avg, max(DCGM_FI_DEV_GPU_TEMP) AS temp_max, "
        "round(avg(DCGM_FI_DEV_POWER_USAGE), 1) AS power_avg, "
        "max(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL) - min(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL) AS sbe_delta, "
        "countIf(nvml_error != '') AS nvml_errors "
        f"FROM `{store.database}`.gpu_metrics "
        "WHERE ts >= toDateTime(%(start)s) AND ts <= toDateTime(%(end)s) "
        f"GROUP BY node, gpu ORDER BY temp_avg DESC LIMIT {int(limit)}"
    )
    frame = store.query_df(
        sql,
        {
            "start": int(start.astimezone(UTC).timestamp()),
            "end": int(end.astimezone(UTC).timestamp()) + 1,
        },
    )
    return frame


STATES = ("healthy", "suspect", "lost", "isolated", "inspection")
NO_GROUP = "(none)"  # the group of nodes that no job's topology places


@dataclass(frozen=True)
class Marks:
    """What makes a GPU's state besides its telemetry: incidents and actions (a few dozen).

    Node keys are `cluster/node`, GPU keys `cluster/node/gpu`, with the stored cluster ('' for
    the default one); a cluster name has no '/', so no two keys collide. Isolations are node
    keys too: the action engine records the cluster of every action.
    """

    inspection: tuple[str, ...] = ()
    isolated: tuple[str, ...] = ()
    suspect_nodes: tuple[str, ...] = ()
    suspect_gpus: tuple[str, ...] = ()

    def params(self) -> dict[str, list[str]]:
        """Return the query parameters (never an empty array: 18.16 cannot type `[]`)."""
        return {
            name: [*getattr(self, name), ""]
            for name in ("inspection", "isolated", "suspect_nodes", "suspect_gpus")
        }


def _gpu_states(db: str, where: str) -> str:
    """Each GPU's latest state, as gpu_state() in diagnosis/health.py decides it."""
    return (
        "SELECT cluster, node, gpu, temp, multiIf("
        "has(%(inspection)s, concat(cluster, '/', node)), 'inspection', "
        "has(%(isolated)s, concat(cluster, '/', node)), 'isolated', "
        "err != '', 'lost', has(%(suspect_gpus)s, concat(cluster, '/', node, '/', toString(gpu))) "
        "OR has(%(suspect_nodes)s, concat(cluster, '/', node)), 'suspect', 'healthy') AS state "
        "FROM (SELECT cluster, node, gpu, argMax(nvml_error, ts) AS err, "
        "argMax(DCGM_FI_DEV_GPU_TEMP, ts) AS temp "
        f"FROM `{db}`.gpu_metrics WHERE ts >= toDateTime(%(since)s) AND {where} "
        "GROUP BY cluster, node, gpu)"
    )


def _node_jobs(db: str) -> str:
    """Each node's job: the one whose topology placed it last."""
    return (
        "SELECT cluster, node, argMax(job_id, t) AS grp FROM ("
        "SELECT cluster, job_id, max(ts) AS t, argMax(nodes, (ts, ts_us)) AS ns "
        f"FROM `{db}`.job_topology GROUP BY cluster, job_id) ARRAY JOIN ns AS node "
        "GROUP BY cluster, node"
    )


def _counts() -> str:
    return ", ".join(f"countIf(state = '{s}') AS {s}" for s in STATES)


def fleet_by_job(
    store: Store, since: datetime, marks: Marks, cluster: str | None = None
) -> pd.DataFrame:
    """Return GPUs counted by state per job (and cluster), aggregated in ClickHouse.

    Columns: cluster (stored), grp (job id, '' outside any job), nodes, gpus, one count per
    state, temp_max. A GPU counts when it reported since `since`.
    """
    where, params = cluster_filter(cluster)
    db = store.database
    return store.query_df(
        f"SELECT cluster, grp, uniqExact(node) AS nodes, count() AS gpus, {_counts()}, "
        f"max(temp) AS temp_max FROM ({_gpu_states(db, where)}) "
        f"ANY LEFT JOIN ({_node_jobs(db)}) USING (cluster, node) "
        f"GROUP BY cluster, grp ORDER BY grp, cluster",
        {**params, **marks.params(), "since": int(since.astimezone(UTC).timestamp())},
    )


def job_group_nodes(
    store: Store, since: datetime, marks: Marks, group: str, cluster: str | None = None
) -> pd.DataFrame:
    """Return the nodes of one job group ('' outside any job) with GPUs counted by state."""
    where, params = cluster_filter(cluster)
    db = store.database
    return store.query_df(
        f"SELECT cluster, node, count() AS gpus, {_counts()}, max(temp) AS temp_max "
        f"FROM ({_gpu_states(db, where)}) ANY LEFT JOIN ({_node_jobs(db)}) USING (cluster, node) "
        f"WHERE grp = %(group)s GROUP BY cluster, node ORDER BY node, cluster",
        {
            **params,
            **marks.params(),
            "group": group,
            "since": int(since.astimezone(UTC).timestamp()),
        },
    )


def clusters_seen(store: Store, since: datetime) -> pd.DataFrame:
    """Return each cluster with GPU telemetry since `since`: cluster (stored), nodes, gpus."""
    return store.query_df(
        "SELECT cluster, uniqExact(node) AS nodes, count() AS gpus FROM ("
        f"SELECT cluster, node, gpu FROM `{store.database}`.gpu_metrics "
        "WHERE ts >= toDateTime(%(since)s) GROUP BY cluster, node, gpu) "
        "GROUP BY cluster ORDER BY cluster",
        {"since": int(since.astimezone(UTC).timestamp())},
    )
