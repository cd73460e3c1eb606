"""Incidents: list, one with its timeline and parallel groups, acknowledge, resolve, false alarm."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Response

from api.context import Ctx, Operator, Viewer
from api.models import ERRORS, IncidentDetail, Note, Page, Reason
from api.pagination import decode_cursor, encode_cursor
from diagnosis.incident_store import (
    IncidentFilter,
    load_incident,
    query_incidents,
    record_transition,
)
from diagnosis.incident_view import ACKNOWLEDGE, incident_story
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
    return IncidentDetail.of(incident_story(ctx.store, incident_id))


@router.post("/{incident_id}/acknowledge", response_model=IncidentDetail)
def acknowledge(incident_id: str, body: Note, ctx: Ctx, who: Operator) -> IncidentDetail:
    """Say that a person is on it (the status does not change)."""
    load_incident(ctx.store, incident_id)
    ctx.audit(who, "POST", ACKNOWLEDGE, incident_id, 200, body.note)
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


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
