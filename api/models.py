"""Response and request bodies of the REST API (field docs reach the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Generic, TypeVar

from pydantic import BaseModel, Field

from diagnosis.incidents import Incident
from ingest.schema import DEFAULT_CLUSTER

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


class TimelineEntry(BaseModel):
    """One moment in an incident's life."""

    at: datetime
    event: str = Field(description="detected, evidence, acknowledged, mitigating, resolved, ...")
    actor: str
    detail: str = ""


class IncidentDetail(BaseModel):
    """An incident with its timeline and the culprit's parallel groups."""

    incident: Incident
    timeline: list[TimelineEntry]
    acknowledged_by: list[str] = Field(default_factory=list)
    neighbourhood: dict[str, object] | None = Field(
        None, description="The top suspect rank's communicators, members and nodes."
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
