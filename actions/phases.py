"""The phases of the restart state machine the engine walks per incident, and their timeout.

For a hardware fault the phases are isolate -> acquire replacement -> restart from the latest
checkpoint (stopping the old run) -> verify progress -> close the incident. Each phase is
persisted before it runs, timed, audited and published (actions/engine.py); a phase that
fails, times out or is blocked by a safety limit escalates: the incident goes back to open
and subscribers are told.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from actions.model import ActionKind, ActionResult, State

log = logging.getLogger(__name__)


def run_with_timeout(func: Callable[[], ActionResult], timeout_s: float) -> ActionResult:
    """Run one phase in a worker thread; a phase still running at the timeout has failed.

    The thread cannot be killed; executors bound their own calls (subprocess and HTTP
    timeouts), so a timed-out phase ends on its own and its late result is ignored.
    """
    box: list[ActionResult] = []

    def target() -> None:
        try:
            box.append(func())
        except Exception as exc:  # noqa: BLE001 (an executor bug or outage fails the phase, named)
            log.exception("action phase raised")
            box.append(_phase_error(f"{type(exc).__name__}: {exc}", "exception"))

    worker = threading.Thread(target=target, name="tg-action-phase", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not box:
        return _phase_error(f"timed out after {timeout_s:.0f} s", "timeout")
    return box[0]


def _phase_error(error: str, why: str) -> ActionResult:
    """A phase that ended without an answer from its executor (outputs.phase_error says why)."""
    return ActionResult(status="failed", error=error[:2000], outputs={"phase_error": why})


# Phase names of the restart state machine, by step kind (the audit and bench use them).
PHASES: dict[ActionKind, str] = {
    ActionKind.CAPTURE_DIAGNOSTICS: "diagnose",
    ActionKind.ISOLATE_NODE: "isolate",
    ActionKind.ISOLATE_GPU: "isolate",
    ActionKind.ISOLATE_SWITCH: "isolate",
    ActionKind.TAINT_NODE: "isolate",
    ActionKind.REQUEST_CAPACITY: "acquire",
    ActionKind.RECLAIM_NODE: "acquire",
    ActionKind.ROLLBACK_CHECKPOINT: "rollback",
    ActionKind.RESTART_JOB: "restart",
    ActionKind.VERIFY_PROGRESS: "verify",
    ActionKind.REBOOT_NODE: "reboot",
    ActionKind.RESUME_NODE: "resume",
    ActionKind.HARDWARE_INSPECTION: "inspect",
    ActionKind.NOTIFY_OWNER: "notify",
    ActionKind.AWAIT_CHECKPOINT: "checkpoint",
}

# A step in one of these stops the walk: waiting for a person, or escalated already.
STOPPING: frozenset[State] = frozenset(
    {State.AWAITING_APPROVAL, State.BLOCKED, State.REJECTED, State.EXPIRED}
)

# Steps that wait on the world: checked again at every re-check, never blocking the engine
# (actions.registry.Waiter).
WAITING_KINDS = frozenset({ActionKind.AWAIT_CHECKPOINT, ActionKind.VERIFY_PROGRESS})
# Of those, the ones whose ladders may run hours past their incident (no incident TTL; an
# isolation by another incident supersedes them: actions/supersede.py).
LONG_WAITS = frozenset({ActionKind.AWAIT_CHECKPOINT})
