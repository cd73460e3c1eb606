"""Nodes and GPUs: health state, metric windows, Xid history (per cluster)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response

from actions.views import isolations
from analytics.ops import gpu_latest, gpu_series, latest_data_time, xid_history
from analytics.tables import cluster_name
from api.context import ApiContext, Ctx, Viewer
from api.convert import finite, whole
from api.models import ERRORS, GpuHealth, NodeDetail, NodeHealth, Page
from api.pagination import decode_cursor, encode_cursor
from api.problems import NotFound
from diagnosis.health import HEALTHY, SUSPECT, gpu_state, suspects_by_component
from diagnosis.incidents import Incident
from ingest.schema import CLUSTER_PATTERN, DEFAULT_CLUSTER
from prediction.risk import gpu_risk

router = APIRouter(responses=ERRORS, prefix="/v1", tags=["fleet"])
WINDOW = timedelta(minutes=10)  # a GPU unseen for longer than this is not listed
ClusterQuery = Query(
    None, pattern=CLUSTER_PATTERN, description="Only this cluster (default: every cluster)."
)


@router.get("/gpus", response_model=Page[GpuHealth])
def list_gpus(
    ctx: Ctx,
    _who: Viewer,
    state: str | None = Query(None, pattern="^(healthy|suspect|lost|isolated|inspection)$"),
    node: str | None = Query(None, max_length=200),
    cluster: str | None = ClusterQuery,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    cursor: str | None = Query(None, max_length=500),
) -> Response:
    """List GPUs with their state and latest telemetry (a snapshot at most a few seconds old)."""
    after = decode_cursor(cursor, (str, int, str))
    key = ("gpus", state, node, cluster, limit, after)
    return ctx.cached_json(key, lambda: _gpu_page(ctx, state, node, cluster, limit, after))


def _gpu_page(
    ctx: ApiContext,
    state: str | None,
    node: str | None,
    cluster: str | None,
    limit: int,
    after: object,
) -> Page[GpuHealth]:
    gpus = _fleet(ctx)
    rows = [
        g
        for g in gpus
        if (state is None or g.state == state)
        and (node is None or g.node == node)
        and (cluster is None or g.cluster == cluster)
        and (after is None or (g.node, g.gpu, g.cluster) > after)  # type: ignore[operator]
    ]
    page = rows[:limit]
    more = len(rows) > limit
    last = (page[-1].node, page[-1].gpu, page[-1].cluster) if more else None
    return Page[GpuHealth](items=page, next_cursor=encode_cursor(last) if last else None)


@router.get("/nodes", response_model=Page[NodeHealth])
def list_nodes(
    ctx: Ctx,
    _who: Viewer,
    state: str | None = Query(None, pattern="^(healthy|suspect|lost|isolated|inspection)$"),
    cluster: str | None = ClusterQuery,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    cursor: str | None = Query(None, max_length=500),
) -> Page[NodeHealth]:
    """List nodes with their state (the worst of their GPUs' and their own incidents)."""
    nodes = _nodes(ctx)
    after = decode_cursor(cursor, (str, str))
    rows = [
        n
        for n in nodes
        if (state is None or n.state == state)
        and (cluster is None or n.cluster == cluster)
        and (after is None or (n.node, n.cluster) > after)
    ]
    page = rows[:limit]
    more = len(rows) > limit
    last = (page[-1].node, page[-1].cluster) if more else None
    return Page[NodeHealth](items=page, next_cursor=encode_cursor(last) if last else None)


@router.get("/nodes/{node}", response_model=NodeDetail)
def get_node(
    node: str,
    ctx: Ctx,
    _who: Viewer,
    minutes: Annotated[int, Query(ge=1, le=1440)] = 15,
    cluster: str | None = ClusterQuery,
) -> NodeDetail:
    """Return a node's GPUs, their samples over the last `minutes` of telemetry, its Xids.

    A node name found in several clusters needs `cluster` (409 without it).
    """
    found = [n for n in _nodes(ctx) if n.node == node and cluster in (None, n.cluster)]
    if not found:
        raise NotFound(f"no GPU telemetry from node {node!r} in the last {WINDOW}")
    if len(found) > 1:
        names = ", ".join(n.cluster for n in found)
        raise HTTPException(409, f"node {node!r} is in clusters {names}: pass ?cluster=")
    summary = found[0]
    gpus = [g for g in _fleet(ctx) if g.node == node and g.cluster == summary.cluster]
    end = max(g.last_seen for g in gpus)
    start = end - timedelta(minutes=minutes)
    series = gpu_series(ctx.store, node, start, end, cluster=summary.cluster)
    xids = xid_history(ctx.store, node, cluster=summary.cluster)
    return NodeDetail(
        node=summary,
        gpus=gpus,
        metrics=[_clean(r) for r in series.to_dict("records")],
        xids=[_clean(r) for r in xids.to_dict("records")],
    )


def _fleet(ctx: ApiContext) -> list[GpuHealth]:
    return ctx.cached(("gpus",), lambda: _compute_fleet(ctx))


def _compute_fleet(ctx: ApiContext) -> list[GpuHealth]:
    now = latest_data_time(ctx.store)
    if now is None:
        return []
    frame = gpu_latest(ctx.store, now - WINDOW)
    suspects = {
        cluster: suspects_by_component(incidents)
        for cluster, incidents in by_cluster(ctx.live_incidents()).items()
    }
    isolated = isolations(ctx.store)  # by (cluster, node): n1 of one cluster only
    risk = {
        (str(r["node"]), int(r["gpu"])): float(r["risk"])
        for r in gpu_risk(ctx.store, horizon_h=ctx.risk_horizon_h, limit=1_000_000).to_dict(
            "records"
        )
    }
    out = []
    columns = (
        "cluster",
        "node",
        "gpu",
        "last_ts",
        "temp_c",
        "power_w",
        "util",
        "sbe",
        "dbe",
        "nvml_error",
    )
    nobody: tuple[dict[tuple[str, int], list[str]], dict[str, list[str]]] = ({}, {})
    for stored, node, gpu, last_ts, temp_c, power_w, util, sbe, dbe, nvml_error in zip(
        *(frame[c].tolist() for c in columns), strict=True
    ):
        cluster = cluster_name(stored)
        key = (str(node), int(gpu))
        by_gpu, by_node = suspects.get(cluster, nobody)
        named = by_gpu.get(key, [])
        node_named = by_node.get(key[0], [])
        error = str(nvml_error or "")
        out.append(
            GpuHealth(
                node=key[0],
                cluster=cluster,
                gpu=key[1],
                state=gpu_state(
                    error, bool(named), bool(node_named), isolated.get((cluster, key[0]))
                ),
                last_seen=datetime.fromtimestamp(int(last_ts), UTC),
                temp_c=finite(temp_c),
                power_w=finite(power_w),
                util=finite(util),
                sbe=whole(sbe),
                dbe=whole(dbe),
                nvml_error=error,
                incidents=named + node_named,
                risk=risk.get(key) if cluster == DEFAULT_CLUSTER else None,
            )
        )
    return out


def _nodes(ctx: ApiContext) -> list[NodeHealth]:
    def compute() -> list[NodeHealth]:
        grouped: dict[tuple[str, str], list[GpuHealth]] = defaultdict(list)
        for g in _fleet(ctx):
            grouped[(g.node, g.cluster)].append(g)
        out = []
        for (node, cluster), gpus in sorted(grouped.items()):
            bad = [g for g in gpus if g.state != HEALTHY]
            worst = bad[0].state if bad else HEALTHY
            incidents = sorted({i for g in gpus for i in g.incidents})
            out.append(
                NodeHealth(
                    node=node,
                    cluster=cluster,
                    state=worst if worst != HEALTHY or not incidents else SUSPECT,
                    gpus=len(gpus),
                    gpus_unhealthy=len(bad),
                    incidents=incidents,
                )
            )
        return out

    return ctx.cached(("nodes",), compute)


def by_cluster(incidents: list[Incident]) -> dict[str, list[Incident]]:
    """Return incidents grouped by their cluster (a node name is unique only within one)."""
    grouped: dict[str, list[Incident]] = defaultdict(list)
    for inc in incidents:
        grouped[inc.cluster].append(inc)
    return grouped


def _clean(row: Mapping[Any, Any]) -> dict[str, object]:
    return {str(k): (finite(v) if isinstance(v, float) else v) for k, v in row.items()}
