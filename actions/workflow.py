"""The restart workflow: a state machine per incident that walks its ladder of actions.

For a hardware fault the phases are isolate -> acquire replacement -> restart from the latest
checkpoint (stopping the old run) -> verify progress -> close the incident. Each phase is
persisted before it runs, timed, audited and published; a phase that fails, times out or is
blocked by a safety limit escalates: the incident goes back to open and subscribers are told.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from actions import store as db
from actions.model import (
    ISOLATING,
    PASSED_STATES,
    ActionKind,
    ActionPlan,
    ActionResult,
    Risk,
    State,
    done,
    failed,
)
from actions.registry import ActionRequest, make_plan
from analytics.store import Store

log = logging.getLogger(__name__)


class ProgressProbe(Protocol):
    """How many distinct training steps a job logged since a time."""

    def steps_since(self, job: str, since: datetime) -> int:
        """Return distinct steps of `job` with a timestamp at or after `since`."""


class TrainStepsProgress:
    """Progress read from the `train_steps` table in ClickHouse."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def steps_since(self, job: str, since: datetime) -> int:
        frame = self.store.query_df(
            f"SELECT uniqExact(step) FROM `{self.store.database}`.`train_steps` "
            f"WHERE job_id = %(job)s AND (ts > %(s)s OR (ts = %(s)s AND ts_us >= %(us)s))",
            {"job": job, "s": int(since.timestamp()), "us": since.microsecond},
        )
        return 0 if frame.empty else int(str(frame.iloc[0, 0]))


class VerifyProgress:
    """Pass when the restarted job logs `min_steps` new steps before the phase timeout."""

    name = "progress"
    kind = ActionKind.VERIFY_PROGRESS
    risk = Risk.LOW

    def __init__(
        self,
        probe: ProgressProbe,
        min_steps: int = 2,
        poll_s: float = 1.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        from datetime import UTC

        self.probe, self.min_steps, self.poll_s = probe, min_steps, poll_s
        self.clock = clock or (lambda: datetime.now(UTC))

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        what = f"wait for {self.min_steps} new training steps of {job or '?'}"
        return make_plan(self, request, what, job=job)

    def execute(self, plan: ActionPlan) -> ActionResult:
        if not plan.params["job"]:
            return failed("no job to verify")
        since = self.clock()  # only steps of the restarted run count
        deadline = time.monotonic() + float(plan.params.get("timeout_s", 600)) * 0.95
        while True:
            seen = self.probe.steps_since(plan.params["job"], since)
            if seen >= self.min_steps:
                return done(f"{seen} new step(s) since {since.isoformat()}", steps=seen)
            if time.monotonic() >= deadline:
                return failed(f"only {seen} new step(s) before the phase timed out")
            time.sleep(self.poll_s)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # verifying again is harmless


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

WAITING_KINDS = frozenset({ActionKind.AWAIT_CHECKPOINT})  # ladders that may run for hours


def superseded_ladders(store: Store, plan: ActionPlan) -> list[tuple[str, str]]:
    """Return (incident, node) of the long ladders an isolation just made pointless.

    A node just isolated (in the isolation's cluster: `n1` of another cluster is another
    node): long ladders of other incidents on it that have not isolated it
    yet stand down (a ladder with a waiting kind, still waiting or already past its wait but
    held for approval). E.g. a GPU predicted to fail that fails before its job checkpoints:
    the hardware incident's ladder drains the node and restarts the job, so the prediction's
    ladder must not drain and restart it again when the restarted job saves.
    """
    nodes = {n for n in [plan.target.node, *plan.params.get("nodes", [])] if n}
    if not nodes:
        return []
    unfinished = [State.WAITING, State.PLANNED, State.AWAITING_APPROVAL, State.APPROVED]
    pending = db.load_actions(store, states=unfinished)
    candidates = {
        (a.plan.incident_id, str(a.plan.target.node))
        for a in pending
        if a.plan.target.node in nodes
        and a.plan.cluster == plan.cluster
        and a.plan.incident_id != plan.incident_id
    }
    moving = {*PASSED_STATES, State.EXECUTING}
    found = []
    for incident_id, node in sorted(candidates):
        ladder = db.load_actions(store, incident_id=incident_id)
        isolating = [a for a in ladder if a.plan.kind in ISOLATING]
        waits = any(a.plan.kind in WAITING_KINDS for a in ladder)
        if waits and isolating and all(a.state not in moving for a in isolating):
            found.append((incident_id, node))
    return found
