"""The action record on the wire: one action model and the typed event of the actions topic.

The action engine stores, serves and publishes the same `Action` (plan, state, result): the
store reads it back from `action_state`, the API projects it, and every change goes on the
actions topic as an `ActionEvent` beside the telemetry events of `ingest/schema.py` (same
`EventBase`: `kind` discriminator, `schema_version`, UTC time, deterministic id).

Compatibility: records published before this event was typed carry `event`, `cluster`,
`state`, `plan`, `result` and `at`, but no `kind`, `ts` or `id`; they decode as the same
event (`kind` "action", `ts` from `at`). New records keep `at` beside `ts`, so a reader of
the old shape reads them unchanged; `schema_version` stays 1 (the change is additive).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    computed_field,
    model_validator,
)

from ingest.schema import (
    CLUSTER_PATTERN,
    DEFAULT_CLUSTER,
    EventBase,
    SchemaError,
    validation_reason,
)


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


class Risk(StrEnum):
    """How bad a wrong execution is; `approve` mode holds risky actions for an operator."""

    LOW = "low"
    HIGH = "high"


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


class Action(BaseModel):
    """One action at its latest state: what the store reads back, the engine walks and the
    API serves (`updated_at` and `seq` are those of the stored state, when read back)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    plan: ActionPlan
    state: State
    result: ActionResult | None = None
    updated_at: AwareDatetime | None = Field(None, description="When it entered its state.")
    seq: int = Field(0, ge=0, description="Version of the stored state (grows with changes).")


ActionEventType = Literal["action.planned", "action.executed", "action.failed"]


class ActionEvent(EventBase):
    """A change of one action, as published on the actions topic (key: the action id)."""

    kind: Literal["action"] = "action"
    event: ActionEventType = Field(description="What happened (the webhook event type).")
    state: State
    plan: ActionPlan
    result: ActionResult | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_untyped(cls, data: Any) -> Any:
        """Read a record from before the event was typed (no kind, `at` instead of `ts`)."""
        if isinstance(data, dict) and "ts" not in data and "at" in data:
            data = {**data, "ts": data["at"]}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def at(self) -> str:
        """Return the event time as the untyped records wrote it (kept for their readers)."""
        return self.ts.isoformat()

    def identity(self) -> tuple[object, ...]:
        return (self.plan.action_id, self.event, self.state.value, self.ts)

    @property
    def key(self) -> str:
        return self.plan.action_id

    def action(self) -> Action:
        """Return the action as it stands after this change."""
        return Action(plan=self.plan, state=self.state, result=self.result, updated_at=self.ts)


ActionEventAdapter: TypeAdapter[ActionEvent] = TypeAdapter(ActionEvent)


def encode_action_event(event: ActionEvent) -> bytes:
    """Return the JSON bytes of an action event (the cluster always named, nulls kept)."""
    return event.model_dump_json().encode()


def decode_action_event(raw: bytes | str) -> ActionEvent:
    """Decode one actions-topic record (typed or from before), or raise SchemaError."""
    try:
        return ActionEventAdapter.validate_json(raw)
    except ValidationError as exc:
        raise SchemaError(f"{validation_reason(exc)} ({exc.error_count()} error(s))") from exc
