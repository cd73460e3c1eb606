"""Actions: list, approve or reject, dry-run the policy, the audit trail, the circuit breaker."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from actions.engine import ActionEngine
from actions.model import State
from actions.safety import BREAKER
from actions.views import action_page, audit_page, breaker_status
from api.auth import Principal
from api.context import Admin, ApiContext, Ctx, Operator, Viewer
from api.models import (
    ERRORS,
    PENDING,
    ActionView,
    AuditEntry,
    BreakerView,
    DryRun,
    DryRunResult,
    Page,
    Reason,
)
from api.pagination import decode_seq_cursor, encode_cursor
from api.problems import NotFound
from diagnosis.incident_store import load_incident
from ingest.schema import CLUSTER_PATTERN

router = APIRouter(responses=ERRORS, prefix="/v1", tags=["actions"])


@router.get("/actions", response_model=Page[ActionView])
def list_actions(
    ctx: Ctx,
    _who: Viewer,
    status: str | None = Query(None, pattern="^[a-z_]{1,32}$"),
    incident: str | None = Query(None, max_length=200),
    cluster: str | None = Query(
        None, pattern=CLUSTER_PATTERN, description="Only actions on this cluster's incidents."
    ),
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = Query(None, max_length=200),
) -> Page[ActionView]:
    """List actions, most recently changed first."""
    states = None if status is None else [_state(status)]
    after = decode_seq_cursor(cursor)
    rows, last = action_page(ctx.store, states, incident, after, limit, cluster=cluster)
    mode = ctx.engine.config.mode.value if ctx.engine else ""
    return Page[ActionView](
        items=[ActionView.of(r, mode) for r in rows],
        next_cursor=encode_cursor(None if last is None else (last,)),
    )


@router.post("/actions/{action_id}/approve", response_model=ActionView)
def approve(action_id: str, body: Reason, ctx: Ctx, who: Operator) -> ActionView:
    """Approve an action awaiting approval; its ladder goes on."""
    return _decide(ctx, who, action_id, body.reason, approve=True)


@router.post("/actions/{action_id}/reject", response_model=ActionView)
def reject(action_id: str, body: Reason, ctx: Ctx, who: Operator) -> ActionView:
    """Reject an action awaiting approval; its ladder stops and the incident reopens."""
    return _decide(ctx, who, action_id, body.reason, approve=False)


@router.post("/actions/dry-run", response_model=DryRunResult)
def dry_run(body: DryRun, ctx: Ctx, _who: Viewer) -> DryRunResult:
    """Show what the policy would do for an incident now; nothing is stored or run."""
    engine = _engine(ctx)
    incident = load_incident(ctx.store, body.incident_id)
    try:
        rule, plans = engine.preview(incident)
    except ValueError as exc:
        raise HTTPException(409, f"the ladder cannot be planned: {exc}") from exc
    return DryRunResult(incident_id=incident.id, rule=rule, plans=plans)


@router.get("/actions/audit", response_model=Page[AuditEntry])
def audit(
    ctx: Ctx,
    _who: Viewer,
    incident: str | None = Query(None, max_length=200),
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = Query(None, max_length=200),
) -> Page[AuditEntry]:
    """Return the engine's audit trail, newest first."""
    after = decode_seq_cursor(cursor)
    rows, last = audit_page(ctx.store, after, limit, incident)
    return Page[AuditEntry](
        items=[AuditEntry.of(r) for r in rows],
        next_cursor=encode_cursor(None if last is None else (last,)),
    )


@router.get("/breaker", response_model=BreakerView)
def breaker(ctx: Ctx, _who: Viewer) -> BreakerView:
    """Return the isolation circuit breaker's state and how close it is to tripping."""
    return _breaker(ctx)


@router.post("/breaker/reset", response_model=BreakerView)
def reset_breaker(body: Reason, ctx: Ctx, who: Admin) -> BreakerView:
    """Close the breaker so isolation may go on (admins only)."""
    _engine(ctx).reset_breaker(who.name, body.reason)
    ctx.audit(who, "POST", "breaker/reset", BREAKER, 200, body.reason)
    return _breaker(ctx)


def _breaker(ctx: ApiContext) -> BreakerView:
    limits = _engine(ctx).config.breaker
    return BreakerView.of(breaker_status(ctx.store, limits.window_s), limits)


def _decide(
    ctx: ApiContext, who: Principal, action_id: str, reason: str, approve: bool
) -> ActionView:
    engine = _engine(ctx)
    try:
        if approve:
            engine.approve(action_id, who.name)
        else:
            engine.reject(action_id, who.name)
    except LookupError as exc:
        raise HTTPException(409, str(exc)) from exc
    ctx.audit(who, "POST", "approve" if approve else "reject", action_id, 200, reason)
    found, _ = action_page(ctx.store, action_ids=[action_id], limit=1)
    if not found:
        raise NotFound(f"no action {action_id!r}")
    return ActionView.of(found[0], engine.config.mode.value)


def _engine(ctx: ApiContext) -> ActionEngine:
    if ctx.engine is None:
        raise HTTPException(503, "no action engine is configured in this API process")
    return ctx.engine


def _state(status: str) -> State:
    if status == PENDING:
        return State.AWAITING_APPROVAL
    try:
        return State(status)
    except ValueError as exc:
        names = ", ".join([PENDING, *(s.value for s in State)])
        raise HTTPException(422, f"status must be one of: {names}") from exc
