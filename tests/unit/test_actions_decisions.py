"""The action engine's decisions as pure functions: no ClickHouse, no Slurm, no Kafka."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from actions.claims import ClaimMove, Holder, after_claim, may_claim, successor_key, within_lease
from actions.decisions import (
    StepMove,
    actionable,
    claim_key,
    closes,
    hold_outcome,
    needs_approval,
    outcome,
    step_move,
    still_current,
    superseded,
)
from actions.holds import Hold, NodeOptOut, opted_out_hold, silenced_hold
from actions.model import (
    Action,
    ActionKind,
    ActionPlan,
    Mode,
    Risk,
    State,
    Target,
    action_id,
    done,
    failed,
    skipped,
    waiting,
)
from actions.safety import BreakerLimits, Budgets, LimitCounts, judge_limits, reads_limits
from actions.silences import MaintenanceWindow
from diagnosis.model import IncidentStatus
from tests.actions_builders import make_incident

NOW = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


def _plan(
    kind: ActionKind = ActionKind.ISOLATE_NODE,
    incident: str = "inc-1",
    node: str | None = "n1",
    job: str | None = None,
    step: int = 0,
    risk: Risk = Risk.HIGH,
    cluster: str = "default",
    **params: Any,
) -> ActionPlan:
    target = Target(node=node, job=job)
    return ActionPlan(
        action_id=action_id(incident, kind, target),
        incident_id=incident,
        cluster=cluster,
        kind=kind,
        target=target,
        risk=risk,
        executor="test",
        step=step,
        rule="r",
        what=f"{kind.value} {node}",
        why=f"{incident}: test",
        params=params,
        created_at=NOW,
    )


def _at(state: State, plan: ActionPlan | None = None, **kw: Any) -> Action:
    return Action(plan=plan or _plan(**kw), state=state)


def _walk(ladder: list[Action]) -> list[StepMove]:
    """The moves the engine's walk makes, up to the first stop or advance."""
    moves = []
    for action in ladder:
        moves.append(step_move(action))
        if moves[-1] != StepMove.PASS:
            break
    return moves


# ---------------------------------------------------------------------- ladder progression


def test_the_walk_passes_finished_steps_and_advances_the_first_unfinished_one():
    ladder = [
        _at(State.DONE, step=0),
        _at(State.SKIPPED, step=1, kind=ActionKind.REQUEST_CAPACITY),
        _at(State.PLANNED, step=2, kind=ActionKind.RESTART_JOB),
        _at(State.PLANNED, step=3, kind=ActionKind.VERIFY_PROGRESS),
    ]
    assert _walk(ladder) == [StepMove.PASS, StepMove.PASS, StepMove.ADVANCE]


@pytest.mark.parametrize(
    "state", [State.AWAITING_APPROVAL, State.BLOCKED, State.REJECTED, State.EXPIRED]
)
def test_a_step_waiting_for_a_person_or_escalated_stops_the_walk(state):
    assert step_move(_at(state)) == StepMove.STOP


def test_a_failed_step_stops_the_walk_unless_it_is_optional():
    assert step_move(_at(State.FAILED)) == StepMove.STOP
    assert step_move(_at(State.FAILED, optional=True)) == StepMove.PASS


@pytest.mark.parametrize("state", [State.PLANNED, State.APPROVED, State.EXECUTING, State.WAITING])
def test_unfinished_steps_are_advanced_and_only_a_recheck_needs_no_claim(state):
    action = _at(state)
    assert step_move(action) == StepMove.ADVANCE
    expected = None if state == State.WAITING else f"{action.plan.action_id}:{state.value}"
    assert claim_key(action) == expected


def test_an_execution_outcome_goes_on_fails_escalates_or_keeps_waiting():
    plan = _plan()
    ok = outcome(plan, done("drained"))
    assert ok is not None and (ok.state, ok.goes_on, ok.escalate) == (State.DONE, True, None)
    nothing = outcome(plan, skipped("already drained"))
    assert nothing is not None and (nothing.state, nothing.goes_on) == (State.SKIPPED, True)
    bad = outcome(plan, failed("scontrol: invalid node"))
    assert bad is not None and (bad.state, bad.goes_on) == (State.FAILED, False)
    assert bad.escalate == "isolate_node failed: scontrol: invalid node"
    optional = outcome(_plan(optional=True), failed("no route"))
    assert optional is not None and optional.goes_on and optional.escalate is None
    assert outcome(plan, waiting("no checkpoint yet")) is None


def test_a_ladder_closes_its_incident_only_when_something_was_done_outside_dry_run():
    did = [_at(State.DONE), _at(State.SKIPPED, kind=ActionKind.RESTART_JOB)]
    assert closes(did, Mode.AUTO)
    assert not closes(did, Mode.DRY_RUN)
    assert not closes([_at(State.SKIPPED), _at(State.DRY_RUN)], Mode.AUTO)
    assert not closes([], Mode.AUTO)


# ---------------------------------------------------------------------- incidents in


def test_only_fresh_open_incidents_of_the_engines_cluster_act():
    fresh = make_incident(at=NOW - timedelta(seconds=10))
    assert actionable(fresh, NOW, 3600, None).acts
    other = actionable(fresh.model_copy(update={"cluster": "west"}), NOW, 3600, "east")
    assert not other.acts and other.event == ""  # another act process owns it: no audit
    old = actionable(make_incident(at=NOW - timedelta(hours=2)), NOW, 3600, None)
    assert not old.acts and old.event == "stale" and old.detail == {"age_s": 7200}
    closed = fresh.model_copy(update={"status": IncidentStatus.RESOLVED})
    assert actionable(closed, NOW, 3600, None).event == "ignored"


def test_after_a_restart_a_ladder_goes_on_while_its_incident_is_open_and_in_time():
    old = make_incident(at=NOW - timedelta(hours=5))
    assert not still_current(old, NOW, 3600, ttl=True)
    assert still_current(old, NOW, 3600, ttl=False)  # a ladder waiting on its job
    gone = old.model_copy(update={"status": IncidentStatus.FALSE_ALARM})
    assert not still_current(gone, NOW, 3600, ttl=False)


# ---------------------------------------------------------------------- approvals


def test_approve_mode_holds_high_risk_steps_until_approved():
    risky, safe = _plan(), _plan(ActionKind.REQUEST_CAPACITY, risk=Risk.LOW)
    assert needs_approval(Mode.APPROVE, risky, State.PLANNED)
    assert not needs_approval(Mode.APPROVE, risky, State.APPROVED)
    assert not needs_approval(Mode.APPROVE, safe, State.PLANNED)
    assert not needs_approval(Mode.AUTO, risky, State.PLANNED)


# ---------------------------------------------------------------------- breaker and budgets


def test_the_breaker_blocks_isolation_when_open_and_trips_at_its_limit():
    limits = BreakerLimits(fleet_nodes=200)  # 5%: 10 nodes
    budgets = Budgets()
    plan = _plan()
    assert judge_limits(plan, LimitCounts(isolated=8), limits, budgets).blocked is None
    tripping = judge_limits(plan, LimitCounts(isolated=10), limits, budgets)
    assert tripping.trip == "10 node(s) isolated in 3600 s, limit 10 of 200"
    assert tripping.blocked == f"circuit breaker tripped: {tripping.trip}"
    open_ = judge_limits(plan, LimitCounts(True, "storm", isolated=0), limits, budgets)
    assert open_.trip is None and "circuit breaker open (storm)" in (open_.blocked or "")
    restart = _plan(ActionKind.RESTART_JOB, job="j1")
    assert judge_limits(restart, LimitCounts(True, "storm"), limits, budgets).blocked is None


def test_a_switch_isolation_counts_every_node_it_takes_out():
    limits = BreakerLimits(fleet_nodes=1000, max_nodes=4)
    switch = _plan(ActionKind.ISOLATE_SWITCH, node=None, nodes=["a", "b", "c"])
    assert judge_limits(switch, LimitCounts(isolated=1), limits, Budgets()).trip is None
    assert judge_limits(switch, LimitCounts(isolated=2), limits, Budgets()).trip is not None


def test_budgets_block_a_node_or_job_that_keeps_coming_back():
    budgets = Budgets(per_node=2, per_job_restarts=3)
    limits = BreakerLimits(fleet_nodes=1000)
    reboot = _plan(ActionKind.REBOOT_NODE)
    assert judge_limits(reboot, LimitCounts(node_actions=1), limits, budgets).blocked is None
    assert "node budget" in (
        judge_limits(reboot, LimitCounts(node_actions=2), limits, budgets).blocked or ""
    )
    restart = _plan(ActionKind.RESTART_JOB, job="j1")
    assert "job budget" in (
        judge_limits(restart, LimitCounts(job_restarts=3), limits, budgets).blocked or ""
    )


def test_a_step_reads_only_the_counts_its_limits_need():
    assert reads_limits(_plan()) == (True, True, False)
    assert reads_limits(_plan(ActionKind.RESTART_JOB, job="j1")) == (False, False, True)
    assert reads_limits(_plan(ActionKind.NOTIFY_OWNER)) == (False, False, False)


# ---------------------------------------------------------------------- holds


def _window(**matchers: str) -> MaintenanceWindow:
    return MaintenanceWindow(
        id="mw-1",
        author="alice",
        reason="firmware",
        created_at=NOW,
        starts_at=NOW - timedelta(hours=1),
        ends_at=NOW + timedelta(hours=1),
        **matchers,
    )


def test_a_maintenance_window_skips_the_steps_it_matches_and_the_walk_goes_on():
    plan = _plan(node="n7")
    held = silenced_hold(plan, [_window(node="n*")], "gpu.hardware", "default", NOW)
    assert held is not None and held.kind == "silenced" and held.detail["author"] == "alice"
    decided = hold_outcome(held)
    assert (decided.state, decided.event, decided.goes_on) == (State.SKIPPED, "silenced", True)
    assert decided.escalate is None and decided.result == skipped(held.reason)
    assert silenced_hold(plan, [_window(node="m*")], "gpu.hardware", "default", NOW) is None
    later = NOW + timedelta(hours=2)  # the window has ended
    assert silenced_hold(plan, [_window(node="n*")], "gpu.hardware", "default", later) is None
    other = silenced_hold(plan, [_window(cluster="west")], "gpu.hardware", "default", NOW)
    assert other is None


class _OptOut(NodeOptOut):
    def __init__(self, *nodes: str) -> None:
        self.nodes = nodes

    def opted_out(self, node: str) -> str | None:
        return "trainguard.io/remediation=disabled" if node in self.nodes else None


def test_an_opted_out_node_blocks_disturbing_steps_and_escalates():
    plan = _plan(node="n2")
    held = opted_out_hold(plan, _OptOut("n2"))
    assert held is not None and held.kind == "opted_out" and held.detail["node"] == "n2"
    decided = hold_outcome(held)
    assert (decided.state, decided.goes_on, decided.escalate) == (
        State.BLOCKED,
        False,
        held.reason,
    )
    assert opted_out_hold(_plan(ActionKind.NOTIFY_OWNER, node="n2"), _OptOut("n2")) is None
    assert opted_out_hold(plan, _OptOut("n3")) is None
    assert opted_out_hold(plan, None) is None
    switch = _plan(ActionKind.ISOLATE_SWITCH, node=None, nodes=["n1", "n2"])
    assert opted_out_hold(switch, _OptOut("n2")) is not None


def test_hold_kinds_are_the_two_the_engine_knows():
    assert hold_outcome(Hold("silenced", "w", {})).goes_on
    assert not hold_outcome(Hold("opted_out", "o", {})).goes_on


# ---------------------------------------------------------------------- superseded ladders


def test_an_isolation_supersedes_other_long_ladders_on_its_node_that_have_not_isolated():
    isolation = _plan(incident="inc-hw", node="n1")
    wait = _plan(ActionKind.AWAIT_CHECKPOINT, incident="inc-pred", node="n1", step=0)
    drain = _plan(incident="inc-pred", node="n1", step=1)
    ladder = [Action(plan=wait, state=State.WAITING), Action(plan=drain, state=State.PLANNED)]
    pending = list(ladder)
    assert superseded(isolation, pending, {"inc-pred": ladder}) == [("inc-pred", "n1")]
    # the other ladder already isolated: it is not stood down
    drained = [ladder[0], Action(plan=drain, state=State.DONE)]
    assert superseded(isolation, pending[:1], {"inc-pred": drained}) == []
    # another cluster's n1 is another node
    west = _plan(incident="inc-hw", node="n1", cluster="west")
    assert superseded(west, pending, {"inc-pred": ladder}) == []
    # a short ladder (no waiting kind) is left to run
    short = [Action(plan=drain, state=State.PLANNED)]
    assert superseded(isolation, short, {"inc-pred": short}) == []


# ---------------------------------------------------------------------- claims (replicas)


def test_a_claim_is_won_by_the_first_row_only_and_taken_over_from_a_dead_holder():
    def alive(replica: str) -> bool:
        return replica == "r-live"

    assert after_claim(Holder("t1", "r-me"), "t1", "r-me", alive) == ClaimMove.WON
    assert after_claim(Holder("t0", "r-me"), "t1", "r-me", alive) == ClaimMove.RESUME
    assert after_claim(Holder("t0", "r-live"), "t1", "r-me", alive) == ClaimMove.LOST
    assert after_claim(Holder("t0", "r-dead"), "t1", "r-me", alive) == ClaimMove.TAKE_OVER
    assert successor_key("act-1:planned", "r-dead") == "act-1:planned>r-dead"


def test_the_holder_is_asked_about_only_when_it_is_another_replica():
    asked: list[str] = []

    def alive(replica: str) -> bool:
        asked.append(replica)
        return False

    after_claim(Holder("t1", "r-me"), "t1", "r-me", alive)
    after_claim(Holder("t0", "r-me"), "t1", "r-me", alive)
    assert asked == []


def test_a_replica_with_a_stale_heartbeat_does_not_claim_and_a_lapsed_one_is_dead():
    assert may_claim(now_s=107.0, last_beat_s=100.0, lease_s=15.0)
    assert not may_claim(now_s=108.0, last_beat_s=100.0, lease_s=15.0)
    assert within_lease(last_beat_us=0, now_us=15e6, lease_s=15.0)
    assert not within_lease(last_beat_us=0, now_us=15e6 + 1, lease_s=15.0)
