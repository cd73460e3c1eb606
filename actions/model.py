"""Action-engine vocabulary: kinds, risk, modes, targets, plans, results and states."""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from ingest.schema import CLUSTER_PATTERN, DEFAULT_CLUSTER


class ActionKind(StrEnum):
    """What a ladder step does; each kind has one registry entry (the executor that does it)."""

    CAPTURE_DIAGNOSTICS = "capture_diagnostics"
    ISOLATE_NODE = "isolate_node"
    ISOLATE_GPU = "isolate_gpu"
    ISOLATE_SWITCH = "isolate_switch"  # every node cabled to a leaf switch
    REQUEST_CAPACITY = "request_capacity"
    RECLAIM_NODE = "reclaim_node"
    RESTART_JOB = "restart_job"
    VERIFY_PROGRESS = "verify_progress"
    REBOOT_NODE = "reboot_node"
    RESUME_NODE = "resume_node"
    HARDWARE_INSPECTION = "hardware_inspection"
    NOTIFY_OWNER = "notify_owner"
    ROLLBACK_CHECKPOINT = "rollback_checkpoint"
    TAINT_NODE = "taint_node"
    AWAIT_CHECKPOINT = "await_checkpoint"  # the job saves a checkpoint before it is disturbed


# Kinds that take capacity out of the fleet: the circuit breaker counts these.
ISOLATING: frozenset[ActionKind] = frozenset(
    {ActionKind.ISOLATE_NODE, ActionKind.ISOLATE_GPU, ActionKind.ISOLATE_SWITCH}
)


class Risk(StrEnum):
    """How bad a wrong execution is; `approve` mode holds risky actions for an operator."""

    LOW = "low"
    HIGH = "high"


class Mode(StrEnum):
    """How far the engine goes on its own."""

    DRY_RUN = "dry_run"
    APPROVE = "approve"
    AUTO = "auto"


class State(StrEnum):
    """Where one action is; persisted before every side effect."""

    PLANNED = "planned"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    EXECUTING = "executing"
    WAITING = "waiting"  # checked again later: the world has not reached the step's condition
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"
    DRY_RUN = "dry_run"
    REJECTED = "rejected"
    EXPIRED = "expired"


FINAL_STATES: frozenset[State] = frozenset(
    {
        State.DONE,
        State.FAILED,
        State.SKIPPED,
        State.BLOCKED,
        State.DRY_RUN,
        State.REJECTED,
        State.EXPIRED,
    }
)
# A step in one of these lets the ladder go on to the next step.
PASSED_STATES: frozenset[State] = frozenset({State.DONE, State.SKIPPED, State.DRY_RUN})


class Target(BaseModel):
    """What an action acts on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str | None = Field(None, description="Node (Slurm node or Kubernetes node name).")
    gpu: int | None = Field(None, description="GPU index on the node.")
    job: str | None = Field(None, description="Training job id (Slurm job id or name).")
    nic: str | None = Field(None, description="NIC, for network incidents.")
    switch: str | None = Field(None, description="Leaf switch, for switch incidents.")

    def key(self) -> str:
        """Return a stable text form (part of the action id)."""
        parts = [f"{k}={v}" for k, v in self.model_dump().items() if v is not None]
        return ",".join(parts) or "-"


def action_id(incident_id: str, kind: ActionKind, target: Target) -> str:
    """Return the deterministic id of an action: a redelivered incident maps to the same id."""
    text = f"{incident_id}|{kind.value}|{target.key()}"
    return "act-" + hashlib.sha256(text.encode()).hexdigest()[:16]


class ActionPlan(BaseModel):
    """What an action would do, to what and why; computed with no side effects.

    `cluster` is the incident's cluster: the target's node and job names are unique only
    within it. A plan stored before plans carried it reads as the default cluster.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    action_id: str
    incident_id: str
    cluster: str = Field(
        DEFAULT_CLUSTER,
        pattern=CLUSTER_PATTERN,
        description="Cluster of the incident, and so of the target's node and job.",
    )
    kind: ActionKind
    target: Target
    risk: Risk
    executor: str = Field(description="Registry entry that executes it (slurm, kubernetes...).")
    step: int = Field(ge=0, description="Position in the incident's ladder.")
    rule: str = Field(description="Policy rule that chose this ladder.")
    what: str = Field(description="The command or call, as an operator reads it.")
    why: str = Field(description="The incident evidence behind it.")
    params: dict[str, Any] = Field(default_factory=dict, description="Executor arguments.")
    component_key: str = Field("", description="Component the incident blames (history key).")
    created_at: AwareDatetime


class ActionResult(BaseModel):
    """How an execution ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["done", "failed", "skipped", "waiting"]
    detail: str = ""
    error: str | None = None
    outputs: dict[str, Any] = Field(default_factory=dict, description="E.g. replacement nodes.")


def done(detail: str = "", **outputs: Any) -> ActionResult:
    """Return a successful result."""
    return ActionResult(status="done", detail=detail, outputs=outputs)


def failed(error: str) -> ActionResult:
    """Return a failed result."""
    return ActionResult(status="failed", error=error[:2000])


def waiting(detail: str) -> ActionResult:
    """Return a result for a condition not reached yet (the engine checks it again later)."""
    return ActionResult(status="waiting", detail=detail)


def skipped(detail: str) -> ActionResult:
    """Return a result for an action that found nothing to do (or must not act)."""
    return ActionResult(status="skipped", detail=detail)
