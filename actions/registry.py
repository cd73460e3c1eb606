"""The action registry: one executor per action kind, as an instance built at start-up."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, Target, action_id
from actions.phases import WAITING_KINDS
from diagnosis.incidents import Incident


class DuplicateActionError(ValueError):
    """Two executors registered for the same action kind."""


class UnknownActionError(LookupError):
    """No executor is registered for an action kind a policy names."""


class ActionRequest(BaseModel):
    """What the engine asks an executor to plan: one ladder step for one incident."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    incident: Incident
    kind: ActionKind
    target: Target
    step: int = Field(ge=0)
    rule: str
    component_key: str = ""
    params: dict[str, Any] = Field(default_factory=dict, description="From the policy step.")


class Executor(Protocol):
    """Plans (no side effects) and executes one action kind."""

    name: str
    kind: ActionKind
    risk: Risk

    def plan(self, request: ActionRequest) -> ActionPlan:
        """Return what execute() would do, to what and why."""

    def execute(self, plan: ActionPlan) -> ActionResult:
        """Do it; return a typed result (never raise for an expected failure)."""

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        """After a crash mid-execution: the observed outcome, or None if it surely did not run."""


class Waiter(Executor, Protocol):
    """An executor of a kind that waits on the world (`phases.WAITING_KINDS`).

    The engine never blocks on it: the step is checked when it begins, stored `waiting`, and
    checked again at every re-check (`TG_ACT_RECHECK_S`) until `check` answers. A check has
    no side effects (it is made again after a restart or takeover). `execute` is the first
    check, with the step beginning now.
    """

    def check(self, plan: ActionPlan, began: datetime) -> ActionResult:
        """Return the answer once the world gives it, else `waiting(...)`; the step began
        at `began` (its timeout counts from then, and what it waits for must come after)."""


def make_plan(executor: Executor, request: ActionRequest, what: str, **params: Any) -> ActionPlan:
    """Return the plan of a request for an executor (id from incident, kind and target)."""
    incident = request.incident
    return ActionPlan(
        action_id=action_id(incident.id, request.kind, request.target),
        incident_id=incident.id,
        cluster=incident.cluster,
        kind=request.kind,
        target=request.target,
        risk=executor.risk,
        executor=executor.name,
        step=request.step,
        rule=request.rule,
        what=what,
        why=f"{incident.id}: {incident.summary}"[:1000],
        params={**request.params, **params},
        component_key=request.component_key,
        created_at=datetime.now(UTC),
    )


class ActionRegistry:
    """Executors by action kind; registering a kind twice is an error."""

    def __init__(self, executors: Iterable[Executor] = ()) -> None:
        self._by_kind: dict[ActionKind, Executor] = {}
        for executor in executors:
            self.register(executor)

    def register(self, executor: Executor) -> None:
        """Add an executor; raise DuplicateActionError if its kind is taken, TypeError if its
        kind waits on the world and it cannot be checked again (no `check`)."""
        if executor.kind in WAITING_KINDS and not callable(getattr(executor, "check", None)):
            raise TypeError(
                f"{executor.name!r} executes {executor.kind.value!r}, a kind that waits on the "
                "world: it needs check(plan, began) (actions.registry.Waiter)"
            )
        known = self._by_kind.get(executor.kind)
        if known is not None:
            raise DuplicateActionError(
                f"action kind {executor.kind.value!r} already registered by {known.name!r}; "
                f"{executor.name!r} cannot register it again"
            )
        self._by_kind[executor.kind] = executor

    def get(self, kind: ActionKind) -> Executor:
        """Return the executor of a kind; raise UnknownActionError."""
        try:
            return self._by_kind[kind]
        except KeyError:
            have = ", ".join(sorted(k.value for k in self._by_kind)) or "none"
            raise UnknownActionError(
                f"no executor for {kind.value!r} (registered: {have})"
            ) from None

    def waiter(self, kind: ActionKind) -> Waiter:
        """Return the executor of a kind that waits on the world; raise UnknownActionError."""
        executor = self.get(kind)
        if kind not in WAITING_KINDS:
            raise TypeError(f"{kind.value!r} does not wait on the world")
        return cast(Waiter, executor)  # register() checked it has check()

    def kinds(self) -> set[ActionKind]:
        """Return the registered kinds."""
        return set(self._by_kind)
