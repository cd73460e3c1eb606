"""Response and request bodies of the REST API (field docs reach the OpenAPI schema).

Every route's models are here; routers import them. A model that is another package's
read model (the incident timeline) is re-exported here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from actions.model import Action, ActionPlan, ActionResult, State
from actions.safety import BreakerLimits
from actions.views import BreakerStatus
from actions.webhooks.formats import EventType, Format
from diagnosis.incident_view import IncidentStory, TimelineEntry
from diagnosis.incidents import Incident
from ingest.schema import DEFAULT_CLUSTER

__all__ = ["TimelineEntry"]  # declared with the incident read model, served from here

T = TypeVar("T")


class Problem(BaseModel):
    """An error (RFC 9457 problem details)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str


ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": Problem, "description": text, "content": {"application/problem+json": {}}}
    for code, text in (
        (400, "Malformed request (e.g. a cursor not from this API)."),
        (401, "No token, or an unknown or revoked one."),
        (403, "The token's role is not enough."),
        (404, "No such resource."),
        (409, "The change conflicts with the current state."),
        (422, "Invalid parameters or body."),
        (503, "ClickHouse is unavailable."),
    )
}


class Page(BaseModel, Generic[T]):
    """One page of a list; pass `next_cursor` back as `cursor` for the next one."""

    items: list[T]
    next_cursor: str | None = Field(None, description="None on the last page.")


class IncidentDetail(BaseModel):
    """An incident with its timeline and the culprit's parallel groups."""

    incident: Incident
    timeline: list[TimelineEntry]
    acknowledged_by: list[str] = Field(default_factory=list)
    neighbourhood: dict[str, object] | None = Field(
        None, description="The top suspect rank's communicators, members and nodes."
    )

    @classmethod
    def of(cls, story: IncidentStory) -> IncidentDetail:
        """Return the detail of an incident's read model (diagnosis/incident_view.py)."""
        return cls(
            incident=story.incident,
            timeline=story.timeline,
            acknowledged_by=story.acknowledged_by,
            neighbourhood=story.neighbourhood,
        )


class Reason(BaseModel):
    """Why a person changes an incident."""

    reason: str = Field(min_length=1, max_length=2000)


class Note(BaseModel):
    """An optional note with an acknowledgement."""

    note: str = Field("", max_length=2000)


class JobSummary(BaseModel):
    """A training job as the fleet sees it."""

    job_id: str
    cluster: str = Field(DEFAULT_CLUSTER, description="Cluster the job belongs to.")
    world_size: int
    tp: int
    pp: int
    dp: int
    ep: int
    nodes: int
    scheduler: str = ""
    scheduler_job_id: str = ""
    last_step: int | None = None
    last_step_at: datetime | None = None
    median_step_s: float | None = None
    mfu: float | None = None
    ettr: float | None = Field(None, description="Effective training time ratio so far, 0..1.")
    open_incidents: int = 0


class StepPoint(BaseModel):
    """One training step (slowest rank's time, mean loss and MFU)."""

    step: int
    at: datetime
    step_time_s: float | None
    loss: float | None
    mfu: float | None
    grad_norm: float | None


class JobDetail(BaseModel):
    """A job with its topology, step series and incidents."""

    job: JobSummary
    nodes: list[str]
    communicators: dict[str, int] = Field(description="Communicator count per kind (tp, dp...).")
    steps: list[StepPoint]
    incidents: list[Incident]


class GpuHealth(BaseModel):
    """One GPU's state and latest telemetry."""

    node: str
    cluster: str = Field(DEFAULT_CLUSTER, description="Cluster the GPU belongs to.")
    gpu: int
    state: str = Field(description="healthy, suspect, isolated, inspection, or lost.")
    last_seen: datetime
    temp_c: float | None = None
    power_w: float | None = None
    util: float | None = None
    sbe: int | None = None
    dbe: int | None = None
    nvml_error: str = ""
    incidents: list[str] = Field(default_factory=list, description="Open incidents naming it.")
    risk: float | None = Field(None, description="Failure risk, where prediction runs.")


class NodeHealth(BaseModel):
    """One node's state, summarised over its GPUs."""

    node: str
    cluster: str = Field(DEFAULT_CLUSTER, description="Cluster the node belongs to.")
    state: str
    gpus: int
    gpus_unhealthy: int
    incidents: list[str] = Field(default_factory=list)


class NodeDetail(BaseModel):
    """A node's GPUs, recent metric window and Xid history."""

    node: NodeHealth
    gpus: list[GpuHealth]
    metrics: list[dict[str, object]] = Field(description="GPU samples of the window.")
    xids: list[dict[str, object]] = Field(description="Kernel Xid lines, newest first.")


class ClusterSummary(BaseModel):
    """One cluster this installation hears from."""

    cluster: str = Field(description="Cluster name (TG_CLUSTER of its agents, or 'default').")
    nodes: int = Field(description="Nodes with GPU telemetry in the fleet window.")
    gpus: int = Field(description="GPUs with telemetry in the fleet window.")
    open_incidents: int = Field(description="Open and mitigating incidents.")


class FleetGroup(BaseModel):
    """GPUs of one rack or job, counted by state (the fleet view's unit at scale)."""

    cluster: str = Field(DEFAULT_CLUSTER, description="Cluster of the group.")
    group: str = Field(description="Rack or job name; '(none)' for nodes outside any.")
    nodes: int = Field(description="Nodes in the group.")
    gpus: int = Field(description="GPUs in the group.")
    states: dict[str, int] = Field(
        description="GPUs per state: healthy, suspect, lost, isolated, inspection."
    )
    temp_max_c: float | None = Field(None, description="Hottest GPU's latest temperature, C.")


class FleetSummary(BaseModel):
    """The fleet aggregated by rack or job, with the totals per state."""

    by: str = Field(description="What GPUs are grouped by: rack or job.")
    groups: list[FleetGroup]
    states: dict[str, int] = Field(description="GPUs per state over the whole (filtered) fleet.")
    nodes: int
    gpus: int


# ---------------------------------------------------------------------- actions

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

    @classmethod
    def of(cls, action: Action, mode: str) -> ActionView:
        """Return the API's view of an action (the engine's `mode` beside it)."""
        plan = action.plan
        status = PENDING if action.state == State.AWAITING_APPROVAL else action.state.value
        return cls(
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
            updated_at=action.updated_at or plan.created_at,
            result=action.result,
        )


class AuditEntry(BaseModel):
    """One audited engine event."""

    at: datetime
    action_id: str
    incident_id: str
    event: str
    actor: str
    detail: str

    @classmethod
    def of(cls, row: dict[str, Any]) -> AuditEntry:
        """Return the entry of an audit row (actions.views.audit_page)."""
        return cls(**{k: v for k, v in row.items() if k in cls.model_fields})


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

    @classmethod
    def of(cls, status: BreakerStatus, limits: BreakerLimits) -> BreakerView:
        """Return the breaker's view from its stored state and the engine's limits."""
        return cls(
            state="open" if status.tripped else "closed",
            reason=status.reason,
            isolated_in_window=status.isolated_in_window,
            limit=limits.limit(),
            window_s=limits.window_s,
        )


# ---------------------------------------------------------------------- webhooks


class NewSubscription(BaseModel):
    """A subscription to create; its URL and secret are stored sealed and never returned."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    url: str = Field(
        min_length=8,
        max_length=2000,
        description="Where to POST; for Slack the credential itself: shown only masked.",
    )
    secret: str = Field(min_length=16, max_length=500, description="HMAC key; never returned.")
    events: list[EventType] = Field(min_length=1)
    format: Format = "trainguard"


class SubscriptionView(BaseModel):
    """A subscription as listed: no secret, and its URL masked (it may be a credential)."""

    id: str
    url: str = Field(description="Scheme, host and a first path word: `https://h.test/services/…`")
    url_fingerprint: str = Field(description="sha256 prefix of the full URL, to tell URLs apart.")
    events: list[EventType]
    format: str


class DeliveryView(BaseModel):
    """One logged delivery attempt."""

    delivery_id: str
    subscription_id: str
    event: str
    attempt: int
    status: str
    http_status: int | None
    error: str


class OutcomeView(BaseModel):
    """How a delivery ended."""

    delivery_id: str
    status: str = Field(description="delivered, dead (after every retry) or rejected.")
    attempts: int
    http_status: int | None
    error: str | None
