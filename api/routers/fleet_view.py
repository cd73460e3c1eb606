"""The fleet at scale: clusters, GPUs counted by state per job, a group's nodes.

Every count is aggregated in ClickHouse (analytics/fleet.py); what the incidents and actions
add (suspect, isolated, inspection) is passed to the query as a few dozen keys, so a view of
16,384 GPUs reads a few dozen rows, never one per GPU.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Path, Query, Response

from actions.views import isolations
from analytics.fleet import NO_GROUP, STATES, Marks, clusters_seen, fleet_by_job, job_group_nodes
from analytics.ops import latest_data_time
from analytics.tables import cluster_name, stored_cluster
from api.context import ApiContext, Ctx, Viewer
from api.convert import finite
from api.models import ERRORS, ClusterSummary, FleetGroup, FleetSummary, NodeHealth, Page
from api.routers.fleet import WINDOW, by_cluster
from diagnosis.health import HEALTHY, suspects_by_component
from ingest.schema import CLUSTER_PATTERN

router = APIRouter(responses=ERRORS, prefix="/v1", tags=["fleet"])
ClusterQuery = Query(
    None, pattern=CLUSTER_PATTERN, description="Only this cluster (default: every cluster)."
)


@router.get("/clusters", response_model=Page[ClusterSummary])
def list_clusters(ctx: Ctx, _who: Viewer) -> Response:
    """List the clusters heard from, with their nodes, GPUs and open incidents."""

    def page() -> Page[ClusterSummary]:
        since = _since(ctx)
        frame = clusters_seen(ctx.store, since) if since else None
        live = Counter(i.cluster for i in ctx.live_incidents())
        seen = {} if frame is None else {cluster_name(r[0]): r for r in frame.itertuples(False)}
        items = [
            ClusterSummary(
                cluster=name,
                nodes=int(seen[name][1]) if name in seen else 0,
                gpus=int(seen[name][2]) if name in seen else 0,
                open_incidents=live[name],
            )
            for name in sorted(set(seen) | set(live))
        ]
        return Page[ClusterSummary](items=items)

    return ctx.cached_json(("clusters",), page)


@router.get("/fleet/groups", response_model=FleetSummary)
def fleet_groups(
    ctx: Ctx,
    _who: Viewer,
    by: Literal["job"] = Query("job", description="Group GPUs by the job placed on them."),
    cluster: str | None = ClusterQuery,
) -> Response:
    """Return GPUs counted by state per job (and cluster), with fleet totals."""

    def build() -> FleetSummary:
        since = _since(ctx)
        if since is None:
            return FleetSummary(by=by, groups=[], states=dict.fromkeys(STATES, 0), nodes=0, gpus=0)
        frame = fleet_by_job(ctx.store, since, _marks(ctx), cluster)
        groups = [
            FleetGroup(
                cluster=cluster_name(row["cluster"]),
                group=str(row["grp"]) or NO_GROUP,
                nodes=int(row["nodes"]),
                gpus=int(row["gpus"]),
                states={s: int(row[s]) for s in STATES},
                temp_max_c=finite(row["temp_max"]),
            )
            for row in frame.to_dict("records")
        ]
        totals = {s: sum(g.states[s] for g in groups) for s in STATES}
        return FleetSummary(
            by=by,
            groups=groups,
            states=totals,
            nodes=sum(g.nodes for g in groups),
            gpus=sum(g.gpus for g in groups),
        )

    return ctx.cached_json(("fleet-groups", by, cluster), build)


@router.get("/fleet/groups/{group}/nodes", response_model=Page[NodeHealth])
def fleet_group_nodes(
    ctx: Ctx,
    _who: Viewer,
    group: str = Path(max_length=200, description="Job id, or '(none)' for nodes outside any."),
    cluster: str | None = ClusterQuery,
) -> Response:
    """Return the nodes of one group with their state (the worst of their GPUs')."""

    def build() -> Page[NodeHealth]:
        since = _since(ctx)
        if since is None:
            return Page[NodeHealth](items=[])
        grp = "" if group == NO_GROUP else group
        frame = job_group_nodes(ctx.store, since, _marks(ctx), grp, cluster)
        items = []
        for row in frame.to_dict("records"):
            bad = [s for s in reversed(STATES) if s != HEALTHY and int(row[s])]
            items.append(
                NodeHealth(
                    node=str(row["node"]),
                    cluster=cluster_name(row["cluster"]),
                    state=bad[0] if bad else HEALTHY,
                    gpus=int(row["gpus"]),
                    gpus_unhealthy=int(row["gpus"]) - int(row[HEALTHY]),
                )
            )
        return Page[NodeHealth](items=items)

    return ctx.cached_json(("fleet-group-nodes", group, cluster), build)


def _since(ctx: ApiContext) -> datetime | None:
    now = ctx.cached(("latest-data-time",), lambda: latest_data_time(ctx.store))
    return None if now is None else now - WINDOW


def _marks(ctx: ApiContext) -> Marks:
    """Return the GPUs and nodes the live incidents and isolations name (cached)."""

    def build() -> Marks:
        gpus: set[str] = set()
        nodes: set[str] = set()
        for cluster, incidents in by_cluster(ctx.live_incidents()).items():
            by_gpu, by_node = suspects_by_component(incidents)
            stored = stored_cluster(cluster)
            gpus |= {f"{stored}/{node}/{gpu}" for node, gpu in by_gpu}
            nodes |= {f"{stored}/{node}" for node in by_node}
        isolated = {
            f"{stored_cluster(cluster)}/{node}": kind
            for (cluster, node), kind in isolations(ctx.store).items()
        }
        return Marks(
            inspection=tuple(sorted(n for n, k in isolated.items() if k == "hardware_inspection")),
            isolated=tuple(sorted(n for n, k in isolated.items() if k != "hardware_inspection")),
            suspect_nodes=tuple(sorted(nodes)),
            suspect_gpus=tuple(sorted(gpus)),
        )

    return ctx.cached(("fleet-marks",), build)
