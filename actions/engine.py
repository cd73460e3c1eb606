"""The action engine: incident -> policy ladder -> plans -> gated, persisted executions.

Every action is stored as `planned` before anything happens and as `executing` before its
side effect, so a redelivered incident or a restarted engine never runs an action twice: an
action found `executing` after a crash is reconciled against the world (e.g. the Slurm node
state) instead of being run blindly again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from actions import store as db
from actions.claims import Claims
from actions.decisions import (
    Outcome,
    StepMove,
    actionable,
    claim_key,
    closes,
    hold_outcome,
    needs_approval,
    outcome,
    step_move,
    still_current,
    ttl_exempt,
)
from actions.escalation import IncidentUpdates
from actions.holds import Holds
from actions.model import (
    FINAL_STATES,
    ISOLATING,
    Action,
    ActionKind,
    ActionPlan,
    ActionResult,
    Mode,
    State,
    waiting,
)
from actions.outbox import Outbox
from actions.phases import PHASES, WAITING_KINDS, run_with_timeout
from actions.planning import plan_steps
from actions.policy import HistoryView, Policy, Selection, component_key, select
from actions.registry import ActionRegistry
from actions.safety import BREAKER, BreakerLimits, Budgets, judge_limits
from actions.supersede import superseded_ladders
from actions.webhooks.delivery import Dispatcher
from actions.webhooks.formats import EventType
from analytics.store import Store
from diagnosis.incident_store import IncidentNotFound, load_incident, save_incidents
from diagnosis.incidents import Incident
from ingest.bus import Producer

log = logging.getLogger(__name__)
# One re-check of a waiting step (a query, bounded by the driver's 120 s), not the whole wait.
WAIT_CHECK_TIMEOUT_S = 180.0
CrashHook = Callable[[str, ActionPlan], None]


class EngineConfig(BaseModel):
    """How far the engine may go on its own, and its limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode = Mode.DRY_RUN
    actor: str = Field("trainguard-act", min_length=1, max_length=200)
    incident_ttl_s: float = Field(3600.0, gt=0, description="Older incidents never act.")
    cluster: str | None = Field(
        None, description="Act on this cluster's incidents only (None: every cluster's)."
    )
    breaker: BreakerLimits = BreakerLimits(fleet_nodes=1000)
    budgets: Budgets = Budgets()


class ActionEngine:
    """Turns incidents into audited actions under the mode, breaker and budgets."""

    def __init__(
        self,
        store: Store,
        registry: ActionRegistry,
        policy: Policy,
        config: EngineConfig,
        producer: Producer | None = None,
        actions_topic: str = "tg.actions",
        dispatcher: Dispatcher | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        crash_hook: CrashHook | None = None,
        holds: Holds | None = None,
        claims: Claims | None = None,
    ) -> None:
        self.store, self.registry, self.policy, self.config = store, registry, policy, config
        self.holds = holds or Holds(store)  # maintenance windows always; opt-out if given
        self.dispatcher, self.clock, self.crash_hook = dispatcher, clock, crash_hook
        self.claims = claims
        """With claims, several replicas share the store: each move of a step is claimed."""
        self.out = Outbox(
            store, config.actor, config.mode, clock, producer, actions_topic, dispatcher
        )
        self.incidents = IncidentUpdates(store, self.out, config.actor, clock)
        self.observe_step: Callable[[ActionKind, str, float], None] | None = None
        """Called with (kind, outcome, seconds) after each executed step (metrics)."""

    # ------------------------------------------------------------------ incidents in

    def handle(self, incident: Incident) -> list[Action]:
        """Plan and run the ladder for one incident revision (idempotent on redelivery)."""
        if not self._actionable(incident):
            return []
        first = self._seen(incident)
        self._ensure_stored(incident)
        selection = select(self.policy, incident, self._history)
        self.out.incident(incident, first)
        if selection is None:
            self.out.audit(
                "no_rule", incident_id=incident.id, detail={"category": incident.category}
            )
            return []
        if not self._plan_ladder(incident, selection):
            return []
        return self.run(incident.id)

    def _actionable(self, incident: Incident) -> bool:
        cfg = self.config
        verdict = actionable(incident, self.clock(), cfg.incident_ttl_s, cfg.cluster)
        if verdict.event:
            self.out.audit(verdict.event, incident_id=incident.id, detail=verdict.detail)
        return verdict.acts

    def _seen(self, incident: Incident) -> bool:
        """Record the sighting (repetition history); return whether it is the first."""
        top = incident.suspects[0] if incident.suspects else None
        before = db.audit_events(self.store, incident_id=incident.id)
        self.out.audit(
            "seen",
            incident_id=incident.id,
            component_key=component_key(incident, top),
            detail={"revision": incident.revision, "category": incident.category},
        )
        return not (before["event"] == "seen").any() if len(before) else True

    def _ensure_stored(self, incident: Incident) -> None:
        try:
            load_incident(self.store, incident.id)
        except IncidentNotFound:
            save_incidents(self.store, [incident])  # a replayed revision changes nothing

    def _history(self, key: str, within_s: float) -> HistoryView:
        return db.component_history(self.store, key, self.clock() - timedelta(seconds=within_s))

    def preview(self, incident: Incident) -> tuple[str | None, list[ActionPlan]]:
        """Return the rule and the plans the policy would make for an incident (a dry run).

        Nothing is stored, executed or audited; a step that cannot be planned raises
        ValueError with the reason.
        """
        selection = select(self.policy, incident, self._history)
        if selection is None:
            return None, []
        return selection.rule.name, plan_steps(self.registry, incident, selection)

    def _claim(self, key: str) -> bool:
        """Say whether this engine may make the move `key` (always, without replicas)."""
        return self.claims is None or self.claims.acquire(key)

    def _plan_ladder(self, incident: Incident, sel: Selection) -> bool:
        """Plan every step and store the new ones; return False if a step cannot be planned.

        With replicas, the first to claim an incident's ladder plans it; the others (and
        later revisions) walk the stored ladder, so an incident never gets two ladders.
        """
        known = {a.plan.action_id for a in db.load_actions(self.store, incident_id=incident.id)}
        try:
            plans = plan_steps(self.registry, incident, sel)
        except ValueError as exc:
            self.out.audit("plan_failed", incident_id=incident.id, detail={"error": str(exc)})
            return False
        if self.claims is not None and not self._claim(f"ladder:{incident.id}"):
            return bool(known)  # planned (or being planned) by the claim's holder
        new = [plan for plan in plans if plan.action_id not in known]
        # one INSERT: another replica never walks half a ladder (and closes it as complete)
        db.save_states(self.store, new, State.PLANNED, self.clock())
        for plan in new:
            self.out.audit("planned", plan, detail={"what": plan.what, "why": plan.why})
            self.out.publish(EventType.ACTION_PLANNED, plan, State.PLANNED)
        return True

    # ------------------------------------------------------------------ the ladder

    def run(self, incident_id: str) -> list[Action]:
        """Walk an incident's ladder from its first unfinished step; return the final states.

        The ladder is read once; each step's move is decided from its stored state
        (`decisions.step_move`) and every transition is stored before the next step.
        """
        for action in db.load_actions(self.store, incident_id=incident_id):
            move = step_move(action)
            if move == StepMove.STOP:
                break
            if move == StepMove.PASS:
                continue
            if not self._advance(action):
                break
        else:
            self._maybe_close(incident_id)
        return db.load_actions(self.store, incident_id=incident_id)

    def _advance(self, action: Action) -> bool:
        """Take one step through the gates and run it; return whether the ladder goes on."""
        plan, key = action.plan, claim_key(action)
        if key is None:
            return self._check_again(action)  # a read of the world: no claim needed
        if not self._claim(key):
            return False  # another replica moves this step (and walks on after it)
        if action.state == State.EXECUTING:
            return self._reconcile(plan)  # its executor died: check the world first
        gate = self._gate(plan, action.state)
        if gate is not None:
            return gate
        if self.crash_hook:
            self.crash_hook("after_plan", plan)
        return self._execute(plan)

    def _gate(self, plan: ActionPlan, state: State) -> bool | None:
        """Return None to execute, or whether the ladder continues without executing."""
        cfg = self.config
        held = self.holds.check(plan, self.clock())
        if held is not None:
            return self._apply(plan, hold_outcome(held))
        if cfg.mode == Mode.DRY_RUN:
            return self._apply(plan, Outcome(State.DRY_RUN, "dry_run", True))
        counts = db.limit_counts(self.store, plan, self.clock(), cfg.breaker, cfg.budgets)
        verdict = judge_limits(plan, counts, cfg.breaker, cfg.budgets)
        if verdict.trip is not None:
            db.set_breaker(self.store, BREAKER, True, verdict.trip, cfg.actor, self.clock())
            self.out.audit("breaker_tripped", plan, detail={"reason": verdict.trip})
        if verdict.blocked:
            blocked = Outcome(
                State.BLOCKED,
                "blocked",
                False,
                escalate=f"blocked: {verdict.blocked}",
                detail={"reason": verdict.blocked},
            )
            return self._apply(plan, blocked)
        if needs_approval(cfg.mode, plan, state):
            db.save_state(self.store, plan, State.AWAITING_APPROVAL, self.clock())
            self.out.audit("approval_requested", plan, detail={"what": plan.what})
            return False
        return None

    def _apply(
        self, plan: ActionPlan, decided: Outcome, extra: dict[str, Any] | None = None
    ) -> bool:
        """Store a decided outcome, escalate if it says so; return whether the ladder goes on."""
        detail = {**(extra or {}), **(decided.detail or {})} or None
        self._finish(plan, decided.state, decided.result, decided.event, detail)
        if decided.state == State.DONE and plan.kind in ISOLATING:
            self._supersede(plan)
        if decided.escalate is not None:
            self.incidents.escalate(plan, decided.escalate)
        return decided.goes_on

    def _execute(self, plan: ActionPlan, claimed: bool = False) -> bool:
        if not claimed and not self._claim(f"{plan.action_id}:{State.EXECUTING.value}"):
            return False  # held before the state is written: a dead holder is reconciled
        began = self.clock()
        db.save_state(self.store, plan, State.EXECUTING, began)
        self.out.audit("executing", plan, detail={"phase": PHASES.get(plan.kind, plan.kind)})
        self.incidents.mitigating(plan)
        if self.crash_hook:
            self.crash_hook("after_executing", plan)
        t0 = time.monotonic()
        result = self._run_phase(plan, began)
        took_s = time.monotonic() - t0
        if self.observe_step is not None:
            self.observe_step(plan.kind, result.status, took_s)
        return self._record(plan, result, took_s)

    def _reconcile(self, plan: ActionPlan) -> bool:
        """An action found executing after a restart: check the world before doing anything."""
        result = self.registry.get(plan.kind).reconcile(plan)
        self.out.audit("reconciled", plan, detail={"found": result.status if result else "absent"})
        if result is None:
            return self._execute(plan, claimed=True)
        return self._record(plan, result, 0.0)

    def _check_again(self, action: Action) -> bool:
        """A step waiting on the world: check once more; only a change is stored.

        A check is unclaimed (any replica may read the world); its answer is recorded by the
        one replica that claims the end of the wait. The step began when it entered
        `waiting` (stored once, right after its first check)."""
        plan, began = action.plan, action.updated_at or action.plan.created_at
        result = self._run_phase(plan, began)
        if result.status == "waiting":
            return False
        if not self._claim(f"{plan.action_id}:{State.WAITING.value}"):
            return False  # another replica records the answer (and walks on after it)
        took_s = (self.clock() - began).total_seconds()
        if self.observe_step is not None:
            self.observe_step(plan.kind, result.status, took_s)
        return self._record(plan, result, took_s)

    def _run_phase(self, plan: ActionPlan, began: datetime) -> ActionResult:
        """Execute a plan with its phase timeout; a waiting kind gets one check, not its wait.

        A check that hung or raised says nothing about the world: the step waits on, until
        its own timeout (counted from `began`).
        """
        timeout = plan.params.get("timeout_s", 600)
        if plan.kind not in WAITING_KINDS:
            executor = self.registry.get(plan.kind)
            return run_with_timeout(lambda: executor.execute(plan), timeout)
        waiter = self.registry.waiter(plan.kind)
        result = run_with_timeout(lambda: waiter.check(plan, began), WAIT_CHECK_TIMEOUT_S)
        waited = (self.clock() - began).total_seconds()
        if result.outputs.get("phase_error") and waited < timeout:
            log.warning("check of %s failed, still waiting: %s", plan.action_id, result.error)
            return waiting(f"check failed, checked again later: {result.error}")
        return result

    def _supersede(self, plan: ActionPlan) -> None:
        """Stand down the long ladders this isolation made pointless (supersede.py says which)."""
        for incident_id, node in superseded_ladders(self.store, plan):
            why = f"superseded: {plan.incident_id} isolated {node} ({plan.kind.value})"
            ladder = db.load_actions(self.store, incident_id=incident_id)
            self._expire(ladder, "superseded", {"reason": why})
            self.incidents.close(incident_id, why)

    def _record(self, plan: ActionPlan, result: ActionResult, took_s: float) -> bool:
        decided = outcome(plan, result)
        if decided is None:  # still waiting on the world: checked again later
            db.save_state(self.store, plan, State.WAITING, self.clock(), result)
            self.out.audit("waiting", plan, detail={"detail": result.detail})
            return False
        detail = {"phase": PHASES.get(plan.kind, plan.kind), "duration_s": round(took_s, 4)}
        return self._apply(plan, decided, {**detail, **result.model_dump()})

    def _finish(
        self,
        plan: ActionPlan,
        state: State,
        result: ActionResult | None,
        event: str,
        detail: dict[str, Any] | None = None,
    ) -> None:
        db.save_state(self.store, plan, state, self.clock(), result)
        self.out.audit(event, plan, detail=detail)
        kind = EventType.ACTION_FAILED if state in (State.FAILED, State.BLOCKED) else None
        if state in (State.DONE, State.SKIPPED):
            kind = EventType.ACTION_EXECUTED
        if kind is not None:
            self.out.publish(kind, plan, state, result)

    # ------------------------------------------------------------------ lifecycle

    def _maybe_close(self, incident_id: str) -> None:
        if closes(db.load_actions(self.store, incident_id=incident_id), self.config.mode):
            self.incidents.close(incident_id, "remediation ladder complete")

    def _expire(
        self, ladder: list[Action], event: str, detail: dict[str, Any] | None = None
    ) -> list[Action]:
        """Expire a ladder's unfinished steps; return them."""
        unfinished = [a for a in ladder if a.state not in FINAL_STATES]
        for a in unfinished:
            self._finish(a.plan, State.EXPIRED, None, event, detail)
        return unfinished

    # ------------------------------------------------------------------ operators

    def approve(self, action_id: str, actor: str) -> list[Action]:
        """Approve an action awaiting approval and continue its ladder."""
        return self._decide(action_id, actor, approve=True)

    def reject(self, action_id: str, actor: str) -> list[Action]:
        """Reject an action awaiting approval; its ladder stops and the incident reopens."""
        return self._decide(action_id, actor, approve=False)

    def _decide(self, action_id: str, actor: str, approve: bool) -> list[Action]:
        found = db.load_actions(self.store, action_ids=[action_id])
        if not found or found[0].state != State.AWAITING_APPROVAL:
            raise LookupError(f"no action {action_id!r} awaiting approval")
        plan = found[0].plan
        if not self._claim(f"{action_id}:{State.AWAITING_APPROVAL.value}"):
            raise LookupError(f"action {action_id!r} was decided by another replica")
        state = State.APPROVED if approve else State.REJECTED
        db.save_state(self.store, plan, state, self.clock())
        db.write_audit(self.store, state.value, self.clock(), actor, self.config.mode, plan)
        if not approve:
            self.incidents.escalate(plan, f"rejected by {actor}")
        return self.run(plan.incident_id)

    def reset_breaker(self, actor: str, reason: str = "reset by operator") -> None:
        """Close the isolation circuit breaker."""
        db.set_breaker(self.store, BREAKER, False, reason, actor, self.clock())
        db.write_audit(
            self.store,
            "breaker_reset",
            self.clock(),
            actor,
            self.config.mode,
            detail={"reason": reason},
        )

    def recover(self) -> list[str]:
        """After a restart: resume unfinished ladders whose incidents are still current."""
        open_states = [State.PLANNED, State.APPROVED, State.EXECUTING, State.WAITING]
        return self._resume(db.load_actions(self.store, states=open_states))

    def poll_waiting(self) -> list[str]:
        """Check every step waiting on the world again (the consumer calls this periodically).

        A waiting step's own timeout bounds the wait, not the incident TTL: a predicted
        failure may wait hours for its job's checkpoint, an approved restart be verified an
        hour after the incident's last evidence. An incident closed meanwhile (an
        operator's false alarm) expires its waiting steps instead.
        """
        return self._resume(db.load_actions(self.store, states=[State.WAITING]))

    def _resume(self, pending: list[Action]) -> list[str]:
        """Walk on the ladders of `pending` steps (this engine's cluster's only)."""
        cluster = self.config.cluster
        incidents = sorted(
            {a.plan.incident_id for a in pending if cluster is None or a.plan.cluster == cluster}
        )
        for incident_id in incidents:
            ladder = db.load_actions(self.store, incident_id=incident_id)
            # a ladder that waits on its job may run past the incident's last update
            if self._still_current(incident_id, ttl=not ttl_exempt(ladder)):
                self.run(incident_id)
                continue
            unfinished = self._expire(ladder, "expired")
            if unfinished and any(a.state == State.DONE for a in ladder):
                # half a ladder ran (a node may be drained): a person takes it from here
                self.incidents.escalate(unfinished[0].plan, "expired after a restart, half done")
        return incidents

    def _still_current(self, incident_id: str, ttl: bool = True) -> bool:
        try:
            incident = load_incident(self.store, incident_id)
        except IncidentNotFound:
            return False
        return still_current(incident, self.clock(), self.config.incident_ttl_s, ttl)
