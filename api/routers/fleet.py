"""Nodes and GPUs: health state, metric windows, Xid history."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from actions.views import isolated_nodes
from analytics.ops import gpu_latest, gpu_series, latest_data_time, xid_history
from analytics.prediction.risk import gpu_risk
from api.context import ApiContext, Ctx, Viewer
from api.convert import finite, whole
from api.models import ERRORS, GpuHealth, NodeDetail, NodeHealth, Page
from api.pagination import decode_cursor, encode_cursor
from api.problems import NotFound
from diagnosis.health import HEALTHY, SUSPECT, gpu_state, suspects_by_component

router = APIRouter(responses=ERRORS, prefix="/v1", tags=["fleet"])
WINDOW = timedelta(minutes=10)  # a GPU unseen for longer than this is not listed


@router.get("/gpus", response_model=Page[GpuHealth])
def list_gpus(
    ctx: Ctx,
    _who: Viewer,
    state: str | None = Query(None, pattern="^(healthy|suspect|lost|isolated|inspection)$"),
    node: str | None = Query(None, max_length=200),
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    cursor: str | None = Query(None, max_length=500),
) -> Response:
    """List GPUs with their state and latest telemetry (a snapshot at most a few seconds old)."""
    after = decode_cursor(cursor, (str, int))
    key = ("gpus", state, node, limit, after)
    return ctx.cached_json(key, lambda: _gpu_page(ctx, state, node, limit, after))


def _gpu_page(
    ctx: ApiContext, state: str | None, node: str | None, limit: int, after: object
) -> Page[GpuHealth]:
    gpus = _fleet(ctx)
    rows = [
        g
        for g in gpus
        if (state is None or g.state == state)
        and (node is None or g.node == node)
        and (after is None or (g.node, g.gpu) > after)  # type: ignore[operator]
    ]
    page = rows[:limit]
    more = len(rows) > limit
    return Page[GpuHealth](
        items=page, next_cursor=encode_cursor((page[-1].node, page[-1].gpu)) if more else None
    )


@router.get("/nodes", response_model=Page[NodeHealth])
def list_nodes(
    ctx: Ctx,
    _who: Viewer,
    state: str | None = Query(None, pattern="^(healthy|suspect|lost|isolated|inspection)$"),
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    cursor: str | None = Query(None, max_length=500),
) -> Page[NodeHealth]:
    """List nodes with their state (the worst of their GPUs' and their own incidents)."""
    nodes = _nodes(ctx)
    after = decode_cursor(cursor, (str,))
    rows = [
        n
        for n in nodes
        if (state is None or n.state == state) and (after is None or (n.node,) > after)
    ]
    page = rows[:limit]
    more = len(rows) > limit
    return Page[NodeHealth](
        items=page, next_cursor=encode_cursor((page[-1].node,)) if more else None
    )


@router.get("/nodes/{node}", response_model=NodeDetail)
def get_node(
    node: str,
    ctx: Ctx,
    _who: Viewer,
    minutes: Annotated[int, Query(ge=1, le=1440)] = 15,
) -> NodeDetail:
    """Return a node's GPUs, their samples over the last `minutes` of telemetry, its Xids."""
    summary = next((n for n in _nodes(ctx) if n.node == node), None)
    if summary is None:
        raise NotFound(f"no GPU telemetry from node {node!r} in the last {WINDOW}")
    gpus = [g for g in _fleet(ctx) if g.node == node]
    end = max(g.last_seen for g in gpus)
    series = gpu_series(ctx.store, node, end - timedelta(minutes=minutes), end)
    return NodeDetail(
        node=summary,
        gpus=gpus,
        metrics=[_clean(r) for r in series.to_dict("records")],
        xids=[_clean(r) for r in xid_history(ctx.store, node).to_dict("records")],
    )


def _fleet(ctx: ApiContext) -> list[GpuHealth]:
    return ctx.cached(("gpus",), lambda: _compute_fleet(ctx))


def _compute_fleet(ctx: ApiContext) -> list[GpuHealth]:
    now = latest_data_time(ctx.store)
    if now is None:
        return []
    frame = gpu_latest(ctx.store, now - WINDOW)
    by_gpu, by_node = suspects_by_component(ctx.live_incidents())
    isolated = isolated_nodes(ctx.store)
    risk = {
        (str(r["node"]), int(r["gpu"])): float(r["risk"])
        for r in gpu_risk(ctx.store, horizon_h=ctx.risk_horizon_h, limit=1_000_000).to_dict(
            "records"
        )
    }
    out = []
    columns = ("node", "gpu", "last_ts", "temp_c", "power_w", "util", "sbe", "dbe", "nvml_error")
    for node, gpu, last_ts, temp_c, power_w, util, sbe, dbe, nvml_error in zip(
        *(frame[c].tolist() for c in columns), strict=True
    ):
        key = (str(node), int(gpu))
        named = by_gpu.get(key, [])
        node_named = by_node.get(key[0], [])
        error = str(nvml_error or "")
        out.append(
            GpuHealth(
                node=key[0],
                gpu=key[1],
                state=gpu_state(error, bool(named), bool(node_named), isolated.get(key[0])),
                last_seen=datetime.fromtimestamp(int(last_ts), UTC),
                temp_c=finite(temp_c),
                power_w=finite(power_w),
                util=finite(util),
                sbe=whole(sbe),
                dbe=whole(dbe),
                nvml_error=error,
                incidents=named + node_named,
                risk=risk.get(key),
            )
        )
    return out


def _nodes(ctx: ApiContext) -> list[NodeHealth]:
    def compute() -> list[NodeHealth]:
        grouped: dict[str, list[GpuHealth]] = defaultdict(list)
        for g in _fleet(ctx):
            grouped[g.node].append(g)
        out = []
        for node, gpus in sorted(grouped.items()):
            bad = [g for g in gpus if g.state != HEALTHY]
            worst = bad[0].state if bad else HEALTHY
            incidents = sorted({i for g in gpus for i in g.incidents})
            out.append(
                NodeHealth(
                    node=node,
                    state=worst if worst != HEALTHY or not incidents else SUSPECT,
                    gpus=len(gpus),
                    gpus_unhealthy=len(bad),
                    incidents=incidents,
                )
            )
        return out

    return ctx.cached(("nodes",), compute)


def _clean(row: Mapping[Any, Any]) -> dict[str, object]:
    return {str(k): (finite(v) if isinstance(v, float) else v) for k, v in row.items()}
