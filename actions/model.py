"""Action-engine vocabulary: kinds, risk, modes, targets, plans, results and states.

The action itself (kind, risk, state, target, plan, result and `Action`) is wire data,
declared once in `ingest/action_events.py` and re-exported here; this module adds what only
the engine uses: modes, state sets, the action id and result constructors.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any

from ingest.action_events import (
    Action,
    ActionKind,
    ActionPlan,
    ActionResult,
    Risk,
    State,
    Target,
)

__all__ = [
    "FINAL_STATES",
    "ISOLATING",
    "PASSED_STATES",
    "Action",
    "ActionKind",
    "ActionPlan",
    "ActionResult",
    "Mode",
    "Risk",
    "State",
    "Target",
    "action_id",
    "done",
    "failed",
    "skipped",
    "waiting",
]


# Kinds that take capacity out of the fleet: the circuit breaker counts these.
ISOLATING: frozenset[ActionKind] = frozenset(
    {ActionKind.ISOLATE_NODE, ActionKind.ISOLATE_GPU, ActionKind.ISOLATE_SWITCH}
)


class Mode(StrEnum):
    """How far the engine goes on its own."""

    DRY_RUN = "dry_run"
    APPROVE = "approve"
    AUTO = "auto"


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


def action_id(incident_id: str, kind: ActionKind, target: Target) -> str:
    """Return the deterministic id of an action: a redelivered incident maps to the same id."""
    text = f"{incident_id}|{kind.value}|{target.key()}"
    return "act-" + hashlib.sha256(text.encode()).hexdigest()[:16]


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
