"""Incidents: list, one with its timeline and parallel groups, acknowledge, resolve, false alarm."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Response

from analytics.api_tables import API_AUDIT
from analytics.queries import latest_topology
from api.context import Ctx, Operator, Viewer
from api.models import ERRORS, IncidentDetail, Note, Page, Reason, TimelineEntry
from api.pagination import decode_cursor, encode_cursor
from diagnosis.graph import build_comm_graph, neighbourhood
from diagnosis.incident_store import (
    IncidentFilter,
    load_incident,
    query_incidents,
    record_transition,
    transitions,
)
from diagnosis.incidents import Incident
from diagnosis.lifecycle import Transition
from diagnosis.model import IncidentStatus, Severity
from ingest.schema import CLUSTER_PATTERN

router = APIRouter(responses=ERRORS, prefix="/v1/incidents", tags=["incidents"])


@router.get("", response_model=Page[Incident])
def list_incidents(
    ctx: Ctx,
    _who: Viewer,
    status: IncidentStatus | None = None,
    severity: Severity | None = None,
    category: str | None = Query(None, max_length=64),
    job: str | None = Query(None, max_length=200),
    node: str | None = Query(None, max_length=200),
    cluster: str | None = Query(
        None, pattern=CLUSTER_PATTERN, description="Only this cluster (default: every cluster)."
    ),
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = Query(None, max_length=500),
) -> Response:
    """List incidents, newest first, by status, severity, category, job, node, cluster, time."""
    after = decode_cursor(cursor, (int, int, str))
    where = IncidentFilter(
        status=status,
        severity=severity.value if severity else None,
        category=category,
        job=job,
        node=node,
        cluster=cluster,
        since=_utc(since),
        until=_utc(until),
    )
    key = ("incidents", where, after, limit)  # IncidentFilter: a frozen dataclass, hashable

    def page() -> Page[Incident]:
        items, last = query_incidents(ctx.store, where, after, limit)  # type: ignore[arg-type]
        return Page[Incident](items=items, next_cursor=encode_cursor(last))

    return ctx.cached_json(key, page)


@router.get("/{incident_id}", response_model=IncidentDetail)
def get_incident(incident_id: str, ctx: Ctx, _who: Viewer) -> IncidentDetail:
    """Return one incident with its timeline, acknowledgements and the culprit's groups."""
    inc = load_incident(ctx.store, incident_id)
    timeline = [TimelineEntry(at=inc.detected_at, event="detected", actor="diagnosis")]
    if inc.updated_at and inc.updated_at != inc.detected_at:
        timeline.append(
            TimelineEntry(
                at=inc.updated_at,
                event="evidence",
                actor="diagnosis",
                detail=f"{inc.findings} finding(s), revision {inc.revision}",
            )
        )
    timeline += [
        TimelineEntry(at=t.at, event=t.status.value, actor=t.actor, detail=t.reason)
        for t in transitions(ctx.store, incident_id)
    ]
    acks = _acks(ctx, incident_id)
    timeline += acks
    timeline.sort(key=lambda e: e.at)
    return IncidentDetail(
        incident=inc,
        timeline=timeline,
        acknowledged_by=sorted({a.actor for a in acks}),
        neighbourhood=_neighbourhood(ctx, inc),
    )


@router.post("/{incident_id}/acknowledge", response_model=IncidentDetail)
def acknowledge(incident_id: str, body: Note, ctx: Ctx, who: Operator) -> IncidentDetail:
    """Say that a person is on it (the status does not change)."""
    load_incident(ctx.store, incident_id)
    ctx.audit(who, "POST", "acknowledge", incident_id, 200, body.note)
    return get_incident(incident_id, ctx, who)


@router.post("/{incident_id}/resolve", response_model=Incident)
def resolve(incident_id: str, body: Reason, ctx: Ctx, who: Operator) -> Incident:
    """Mark an incident resolved (final)."""
    return _move(ctx, who, incident_id, IncidentStatus.RESOLVED, body.reason)


@router.post("/{incident_id}/false-alarm", response_model=Incident)
def false_alarm(incident_id: str, body: Reason, ctx: Ctx, who: Operator) -> Incident:
    """Mark an incident a false alarm (final); the reason is kept for tuning the rules."""
    return _move(ctx, who, incident_id, IncidentStatus.FALSE_ALARM, body.reason)


def _move(ctx: Ctx, who: Operator, incident_id: str, to: IncidentStatus, reason: str) -> Incident:
    at = datetime.now(UTC)
    moved = record_transition(
        ctx.store,
        Transition(incident_id=incident_id, status=to, reason=reason, actor=who.name, at=at),
    )
    ctx.audit(who, "POST", to.value, incident_id, 200, reason)
    return moved


def _acks(ctx: Ctx, incident_id: str) -> list[TimelineEntry]:
    frame = ctx.store.query_df(
        f"SELECT toUInt32(ts) AS t, ts_us, actor, detail FROM `{ctx.store.database}`."
        f"`{API_AUDIT.name}` WHERE target = %(id)s AND path = 'acknowledge' ORDER BY ts, ts_us",
        {"id": incident_id},
    )
    return [
        TimelineEntry(
            at=datetime.fromtimestamp(int(t), UTC).replace(microsecond=int(us)),
            event="acknowledged",
            actor=str(actor),
            detail=str(detail),
        )
        for t, us, actor, detail in frame.itertuples(index=False)
    ]


def _neighbourhood(ctx: Ctx, inc: Incident) -> dict[str, object] | None:
    if inc.job is None:
        return None
    top = inc.suspects[0] if inc.suspects else None
    topology = latest_topology(ctx.store, inc.job, inc.cluster)
    if topology is None or top is None:
        return None
    graph = build_comm_graph(topology)
    rank = top.rank
    if rank is None and top.node is not None and top.gpu is not None:
        placed = {(n, graph.rank_gpu[r]): r for r, n in graph.rank_node.items()}
        rank = placed.get((top.node, top.gpu))
    return None if rank is None else neighbourhood(graph, rank)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
