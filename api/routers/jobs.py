"""Jobs: list with progress and ETTR; one with topology, step series and incidents."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query

from analytics.ops import job_progress, jobs_overview, latest_data_time, step_series
from analytics.queries import latest_topology
from analytics.tables import cluster_name, stored_cluster
from api.context import Ctx, Viewer
from api.convert import finite
from api.models import ERRORS, JobDetail, JobSummary, Page, StepPoint
from api.problems import NotFound
from diagnosis.incident_store import IncidentFilter, query_incidents
from ingest.schema import CLUSTER_PATTERN

router = APIRouter(responses=ERRORS, prefix="/v1/jobs", tags=["jobs"])


ClusterQuery = Query(
    None, pattern=CLUSTER_PATTERN, description="Only this cluster (default: every cluster)."
)


@router.get("", response_model=Page[JobSummary])
def list_jobs(ctx: Ctx, _who: Viewer, cluster: str | None = ClusterQuery) -> Page[JobSummary]:
    """List every job with its layout, progress and ETTR so far (a job id is per cluster)."""
    frame = jobs_overview(ctx.store, cluster)
    live = Counter((i.job, i.cluster) for i in ctx.live_incidents())
    items = [_summary(row) for row in frame.to_dict("records")]
    for job in items:
        job.open_incidents = live[(job.job_id, job.cluster)]
    return Page[JobSummary](items=items)


@router.get("/{job_id}", response_model=JobDetail)
def get_job(job_id: str, ctx: Ctx, _who: Viewer, cluster: str | None = ClusterQuery) -> JobDetail:
    """Return one job: topology, recent steps, incidents (the newest job of that id without
    `cluster`)."""
    topology = latest_topology(ctx.store, job_id, cluster)
    if topology is None:
        raise NotFound(f"no job {job_id!r} has reported a topology")
    cluster = topology.cluster
    nodes = sorted({p.node for p in topology.ranks})
    now = latest_data_time(ctx.store)
    progress = job_progress(ctx.store, job_id, now=now, cluster=cluster).to_dict("records")
    row: dict[Any, Any] = {
        "job_id": job_id,
        "cluster": stored_cluster(cluster),
        "world_size": topology.world_size,
        "tp": topology.layout.tp,
        "pp": topology.layout.pp,
        "dp": topology.layout.dp,
        "ep": topology.layout.ep,
        "nodes": len(nodes),
        "scheduler": topology.scheduler or "",
        "scheduler_job_id": topology.scheduler_job_id or "",
        **(progress[0] if progress else {}),
    }
    where = IncidentFilter(job=job_id, cluster=cluster)
    incidents, _ = query_incidents(ctx.store, where, limit=100)
    summary = _summary(row)
    summary.open_incidents = sum(
        1 for i in ctx.live_incidents() if i.job == job_id and i.cluster == cluster
    )
    steps = [
        StepPoint(
            step=int(r["step"]),
            at=datetime.fromtimestamp(int(r["ts"]), UTC),
            step_time_s=finite(r["step_time_s"]),
            loss=finite(r["loss"]),
            mfu=finite(r["mfu"]),
            grad_norm=finite(r["grad_norm"]),
        )
        for r in step_series(ctx.store, job_id, cluster=cluster).to_dict("records")
    ]
    return JobDetail(
        job=summary,
        nodes=nodes,
        communicators=dict(Counter(c.kind.value for c in topology.communicators)),
        steps=steps,
        incidents=incidents,
    )


def _summary(row: Mapping[Any, Any]) -> JobSummary:
    last_ts = row.get("last_ts")
    return JobSummary(
        job_id=str(row["job_id"]),
        cluster=cluster_name(row.get("cluster")),
        world_size=int(row["world_size"]),
        tp=int(row["tp"]),
        pp=int(row["pp"]),
        dp=int(row["dp"]),
        ep=int(row["ep"]),
        nodes=int(row["nodes"]),
        scheduler=str(row.get("scheduler") or ""),
        scheduler_job_id=str(row.get("scheduler_job_id") or ""),
        last_step=None if finite(row.get("last_step")) is None else int(row["last_step"]),
        last_step_at=None if finite(last_ts) is None else datetime.fromtimestamp(int(last_ts), UTC),  # type: ignore[arg-type]
        median_step_s=finite(row.get("median_step_s")),
        mfu=finite(row.get("mfu")),
        ettr=finite(row.get("ettr")),
    )
