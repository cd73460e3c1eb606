"""What the console reads from the REST API, parsed leniently (unknown fields are ignored).

These mirror `api/models.py` and the action-engine and scheduler contract, so a console
older or newer than the API still renders what it knows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

T = TypeVar("T")


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Page(_Lenient, Generic[T]):
    """One page of a list."""

    items: list[T]
    next_cursor: str | None = None


class Caller(_Lenient):
    """Who the console's token belongs to (GET /v1/me)."""

    name: str
    role: str


class Suspect(_Lenient):
    """A ranked candidate root cause."""

    component: str
    score: float
    node: str | None = None
    gpu: int | None = None
    nic: str | None = None
    switch: str | None = None
    rank: int | None = None
    explanation: str = ""


class Incident(_Lenient):
    """One root cause with its suspects and evidence."""

    id: str
    cluster: str = "default"
    category: str
    blame: str = "unknown"
    job: str | None = None
    detected_at: datetime
    suspects: list[Suspect] = Field(default_factory=list)
    summary: str = ""
    action: str = "none"
    evidence: list[str] = Field(default_factory=list)
    severity: str = "error"
    updated_at: datetime | None = None
    findings: int = 1
    revision: int = 1
    status: str = "open"
    status_reason: str | None = None


class TimelineEntry(_Lenient):
    """One moment in an incident's life."""

    at: datetime
    event: str
    actor: str
    detail: str = ""


class IncidentDetail(_Lenient):
    """An incident with its timeline and the culprit's parallel groups."""

    incident: Incident
    timeline: list[TimelineEntry] = Field(default_factory=list)
    acknowledged_by: list[str] = Field(default_factory=list)
    neighbourhood: dict[str, Any] | None = None


class JobSummary(_Lenient):
    """A training job as the fleet sees it."""

    job_id: str
    cluster: str = "default"
    world_size: int
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    nodes: int = 0
    scheduler: str = ""
    scheduler_job_id: str = ""
    last_step: int | None = None
    last_step_at: datetime | None = None
    median_step_s: float | None = None
    mfu: float | None = None
    ettr: float | None = None
    open_incidents: int = 0


class StepPoint(_Lenient):
    """One training step."""

    step: int
    at: datetime
    step_time_s: float | None = None
    loss: float | None = None
    mfu: float | None = None
    grad_norm: float | None = None


class JobDetail(_Lenient):
    """A job with its topology, step series and incidents."""

    job: JobSummary
    nodes: list[str] = Field(default_factory=list)
    communicators: dict[str, int] = Field(default_factory=dict)
    steps: list[StepPoint] = Field(default_factory=list)
    incidents: list[Incident] = Field(default_factory=list)


class GpuHealth(_Lenient):
    """One GPU's state and latest telemetry."""

    node: str
    cluster: str = "default"
    gpu: int
    state: str
    last_seen: datetime
    temp_c: float | None = None
    power_w: float | None = None
    util: float | None = None
    sbe: int | None = None
    dbe: int | None = None
    nvml_error: str = ""
    incidents: list[str] = Field(default_factory=list)
    risk: float | None = None


class NodeHealth(_Lenient):
    """One node's state."""

    node: str
    cluster: str = "default"
    state: str
    gpus: int
    gpus_unhealthy: int = 0
    incidents: list[str] = Field(default_factory=list)


class NodeDetail(_Lenient):
    """A node's GPUs, metric samples and Xids."""

    node: NodeHealth
    gpus: list[GpuHealth] = Field(default_factory=list)
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    xids: list[dict[str, Any]] = Field(default_factory=list)


class ActionPlan(_Lenient):
    """What an action would do, to what, and why."""

    what: str = ""
    target: str = ""
    why: str = ""


class ActionItem(_Lenient):
    """An action proposed or taken by the action engine, as the console reads `ActionView`.

    Not `api.models.ActionView` itself: `ui` and `api` share a layer and `ui` imports no
    package of ours (trainguard/layers.py, docs/layers.md; tests/unit/test_package_graph.py
    fails on the edge), and `api.models` would bring the engine's models into the console.
    The console, deployed apart from the API, reads leniently what `ActionView` is strict
    about: unknown fields ignored, missing ones defaulted, the target as text, `result` as
    sent. tests/unit/test_ui_client.py parses the API's own `ActionView` with it.
    """

    id: str
    incident_id: str | None = None
    kind: str
    target: str = ""

    @field_validator("target", mode="before")
    @classmethod
    def _target_text(cls, value: Any) -> str:
        """Show `{"node": "n1", "gpu": 3}` as `node=n1,gpu=3` (the API sends the parts)."""
        if isinstance(value, dict):
            return ",".join(f"{k}={v}" for k, v in value.items() if v is not None) or "-"
        return "" if value is None else str(value)

    risk: str = ""
    mode: str = ""
    status: str
    plan: ActionPlan = Field(default_factory=ActionPlan)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    result: Any = None


class AuditEntry(_Lenient):
    """One event in the action engine's audit log."""

    at: datetime
    action_id: str | None = None
    incident_id: str | None = None
    event: str
    actor: str = ""
    detail: Any = ""


class Breaker(_Lenient):
    """The isolation circuit breaker: open stops automatic isolation."""

    state: str
    isolated_in_window: int = 0
    limit: int = 0
    window_s: float = 0
    opened_at: datetime | None = None


class Webhook(BaseModel):
    """A webhook subscription (fields beyond id and url are shown as they come)."""

    model_config = ConfigDict(extra="allow")

    id: str
    url: str = ""


class Delivery(BaseModel):
    """One delivery attempt of a webhook."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(validation_alias=AliasChoices("id", "delivery_id"))
    status: str | None = None


class SchedulerState(_Lenient):
    """The scheduler's pools, loans, standby nodes and queue."""

    pools: list[dict[str, Any]] = Field(default_factory=list)
    loans: list[Any] = Field(default_factory=list, description="Node names (or records).")
    standbys: list[Any] = Field(default_factory=list, description="Node names (or records).")
    queue: list[dict[str, Any]] = Field(default_factory=list)


class ClusterSummary(_Lenient):
    """One cluster the installation hears from."""

    cluster: str
    nodes: int = 0
    gpus: int = 0
    open_incidents: int = 0


class FleetGroup(_Lenient):
    """GPUs of one job (or of no job), counted by state."""

    cluster: str = "default"
    group: str
    nodes: int
    gpus: int
    states: dict[str, int] = Field(default_factory=dict)
    temp_max_c: float | None = None


class FleetSummary(_Lenient):
    """The fleet aggregated by job, with totals per state."""

    by: str = "job"
    groups: list[FleetGroup] = Field(default_factory=list)
    states: dict[str, int] = Field(default_factory=dict)
    nodes: int = 0
    gpus: int = 0
