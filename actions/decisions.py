"""The action engine's decisions, as pure functions over what it read from the store.

The engine (actions/engine.py) loads a ladder and the facts a step needs (the limits'
counts, the holds), asks these functions what to do, then persists the transitions they
name. Nothing here reads or writes anything, so every decision is unit-testable
(tests/unit/test_actions_decisions.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from actions.holds import Hold
from actions.model import (
    ISOLATING,
    PASSED_STATES,
    Action,
    ActionPlan,
    ActionResult,
    Mode,
    Risk,
    State,
    skipped,
)
from actions.phases import LONG_WAITS, STOPPING
from diagnosis.incidents import Incident
from diagnosis.lifecycle import is_final


class StepMove(StrEnum):
    """What the walk of a ladder does at one step."""

    STOP = "stop"  # waiting for a person, escalated already, or a step failed
    PASS = "pass"  # done, skipped, dry run, or an optional step that failed: next step
    ADVANCE = "advance"  # move this step (gate and execute, reconcile, or check again)


def step_move(action: Action) -> StepMove:
    """Return what the walk does at a step, from its stored state."""
    if action.state in STOPPING:
        return StepMove.STOP
    if action.state == State.FAILED:
        return StepMove.PASS if action.plan.params.get("optional") else StepMove.STOP
    if action.state in PASSED_STATES:
        return StepMove.PASS
    return StepMove.ADVANCE


def claim_key(action: Action) -> str | None:
    """Return the claim a step's move needs, or None (a re-check only reads the world)."""
    if action.state == State.WAITING:
        return None
    return f"{action.plan.action_id}:{action.state.value}"


@dataclass(frozen=True)
class Incidental:
    """Whether an incident may act, and if not, the audit event saying why (or none)."""

    acts: bool
    event: str = ""
    detail: dict[str, object] | None = None


def actionable(incident: Incident, now: datetime, ttl_s: float, cluster: str | None) -> Incidental:
    """Return whether an incident revision may act now (cluster, age and status)."""
    if cluster is not None and incident.cluster != cluster:
        return Incidental(False)  # another cluster's act process owns it: nothing to audit
    age = (now - (incident.updated_at or incident.detected_at)).total_seconds()
    if age > ttl_s:
        return Incidental(False, "stale", {"age_s": round(age)})
    if is_final(incident.status):
        return Incidental(False, "ignored", {"status": incident.status})
    return Incidental(True)


def still_current(incident: Incident, now: datetime, ttl_s: float, ttl: bool) -> bool:
    """Return whether an unfinished ladder of an incident may go on after a restart."""
    if is_final(incident.status):
        return False
    age = (now - (incident.updated_at or incident.detected_at)).total_seconds()
    return not ttl or age <= ttl_s


def waits_long(ladder: Sequence[Action]) -> bool:
    """Return whether a ladder waits on its job (it may run hours past its incident)."""
    return any(a.plan.kind in LONG_WAITS for a in ladder)


def ttl_exempt(ladder: Sequence[Action]) -> bool:
    """Return whether the incident TTL spares a ladder: it waits long, or one of its steps is
    waiting now (that step's own timeout bounds the wait)."""
    return waits_long(ladder) or any(a.state == State.WAITING for a in ladder)


@dataclass(frozen=True)
class Outcome:
    """A step's new final state and what follows from it."""

    state: State
    event: str
    goes_on: bool
    result: ActionResult | None = None
    escalate: str | None = None
    detail: dict[str, object] | None = None


def hold_outcome(held: Hold) -> Outcome:
    """A silenced step is skipped (the next is checked too); an opted-out node stops it."""
    detail: dict[str, object] = {"reason": held.reason, **held.detail}
    if held.kind == "silenced":
        return Outcome(State.SKIPPED, "silenced", True, skipped(held.reason), detail=detail)
    return Outcome(State.BLOCKED, "opted_out", False, escalate=held.reason, detail=detail)


def needs_approval(mode: Mode, plan: ActionPlan, state: State) -> bool:
    """Return whether a step waits for an operator (approve mode, high risk, not approved)."""
    return mode == Mode.APPROVE and plan.risk == Risk.HIGH and state != State.APPROVED


def outcome(plan: ActionPlan, result: ActionResult) -> Outcome | None:
    """Return a finished execution's outcome; None for a step still waiting on the world."""
    if result.status == "waiting":
        return None
    state = {"done": State.DONE, "skipped": State.SKIPPED}.get(result.status, State.FAILED)
    if state != State.FAILED or plan.params.get("optional"):
        return Outcome(state, state.value, True, result)
    why = f"{plan.kind.value} failed: {result.error}"
    return Outcome(state, state.value, False, result, escalate=why)


def closes(ladder: Sequence[Action], mode: Mode) -> bool:
    """Return whether a ladder walked to its end closes its incident (something was done)."""
    if not ladder or mode == Mode.DRY_RUN:
        return False
    return any(a.state == State.DONE for a in ladder)


def superseded(
    plan: ActionPlan, pending: Sequence[Action], ladders: Mapping[str, Sequence[Action]]
) -> list[tuple[str, str]]:
    """Return (incident, node) of the long ladders an isolation just made pointless.

    `pending` are the unfinished steps of every ladder; `ladders` the whole ladder of each
    incident `superseded_candidates` names. See actions/supersede.py for the rule.
    """
    moving = {*PASSED_STATES, State.EXECUTING}
    found = []
    for incident_id, node in superseded_candidates(plan, pending):
        ladder = ladders.get(incident_id, ())
        isolating = [a for a in ladder if a.plan.kind in ISOLATING]
        if waits_long(ladder) and isolating and all(a.state not in moving for a in isolating):
            found.append((incident_id, node))
    return found


def isolated_nodes(plan: ActionPlan) -> set[str]:
    """Return the nodes an isolation takes out (a leaf switch's lists them all)."""
    return {n for n in [plan.target.node, *plan.params.get("nodes", [])] if n}


def superseded_candidates(plan: ActionPlan, pending: Sequence[Action]) -> list[tuple[str, str]]:
    """Return (incident, node) of other incidents' unfinished steps on the isolated nodes."""
    nodes = isolated_nodes(plan)
    return sorted(
        {
            (a.plan.incident_id, str(a.plan.target.node))
            for a in pending
            if a.plan.target.node in nodes
            and a.plan.cluster == plan.cluster
            and a.plan.incident_id != plan.incident_id
        }
    )
