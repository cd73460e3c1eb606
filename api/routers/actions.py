"""Actions: list, approve or reject, dry-run the policy, the audit trail, the circuit breaker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from actions import store as action_store
from actions.engine import ActionEngine
from actions.model import Action, ActionPlan, ActionResult, State
from actions.safety import BREAKER
from actions.views import action_page, audit_page
from api.auth import Principal
from api.context import Admin, ApiContext, Ctx, Operator, Viewer
from api.models import ERRORS, Page, Reason
from api.pagination import decode_seq_cursor, encode_cursor
from api.problems import NotFound
from diagnosis.incident_store import load_incident
from ingest.schema import CLUSTER_PATTERN, DEFAULT_CLUSTER

router = APIRouter(responses=ERRORS, prefix="/v1", tags=["actions"])
PENDING = "pending"  # the console's word for awaiting_approval


class ActionView(BaseModel):
    """An action with its plan and where it is."""

    id: str
    incident_id: str
    cluster: str = Field(DEFAULT_CLUSTER, description="Cluster of the incident and target.")
    kind: str
    target: dict[str, Any]
    risk: str
    mode: str
    status: str = Field(description="pending (awaiting approval), approved, executing, done, ...")
    plan: dict[str, Any] = Field(description="what, target and why, as planned")
    created_at: datetime
    updated_at: datetime
    result: ActionResult | None = None


class AuditEntry(BaseModel):
    """One audited engine event."""

    at: datetime
    action_id: str
    incident_id: str
    event: str
    actor: str
    detail: str


class DryRun(BaseModel):
    """Which incident to plan for."""

    incident_id: str = Field(min_length=1, max_length=200)


class DryRunResult(BaseModel):
    """What the policy would do for an incident, with nothing stored or executed."""

    incident_id: str
    rule: str | None = Field(description="The matching policy rule; None when none matches.")
    plans: list[ActionPlan]


class BreakerView(BaseModel):
    """The isolation circuit breaker."""

    state: str = Field(description="closed (isolation allowed) or open (stopped).")
    reason: str
    isolated_in_window: int
    limit: int
    window_s: float


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
        items=[_view(r, mode) for r in rows],
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
        items=[
            AuditEntry(**{k: v for k, v in r.items() if k in AuditEntry.model_fields}) for r in rows
        ],
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
    engine = _engine(ctx)
    limits = engine.config.breaker
    tripped, reason = action_store.breaker_state(ctx.store, BREAKER)
    since = datetime.now(UTC) - timedelta(seconds=limits.window_s)
    return BreakerView(
        state="open" if tripped else "closed",
        reason=reason,
        isolated_in_window=action_store.isolated_since(ctx.store, since),
        limit=limits.limit(),
        window_s=limits.window_s,
    )


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
    return _view(found[0], engine.config.mode.value)


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


def _view(row: Action, mode: str) -> ActionView:
    plan = row.plan
    status = PENDING if row.state == State.AWAITING_APPROVAL else row.state.value
    return ActionView(
        id=plan.action_id,
        incident_id=plan.incident_id,
        cluster=plan.cluster,
        kind=plan.kind.value,
        target=plan.target.model_dump(exclude_none=True),
        risk=plan.risk.value,
        mode=mode,
        status=status,
        plan={"what": plan.what, "target": plan.target.key(), "why": plan.why},
        created_at=plan.created_at,
        updated_at=row.updated_at,
        result=row.result,
    )
