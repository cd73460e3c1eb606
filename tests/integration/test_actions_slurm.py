"""The action engine against the real Slurm (deploy/slurm.sh) and the ClickHouse server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actions import store as db
from actions.model import ActionKind, Mode, State
from actions.policy import parse_policy
from actions.safety import Budgets
from diagnosis.incident_store import load_incident
from diagnosis.model import IncidentStatus
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import StepLog, cleanup_nodes, engine, slurm_registry

pytestmark = pytest.mark.integration


@pytest.fixture
def nodes(slurm, request):
    """Hand a test its own fake nodes and put them back afterwards."""
    used: list[str] = []

    def take(*names: str) -> list[str]:
        cleanup_nodes(slurm, list(names))
        used.extend(names)
        return list(names)

    yield take
    cleanup_nodes(slurm, used)


def _states(actions) -> dict[ActionKind, State]:
    return {a.plan.kind: a.state for a in actions}


def test_gpu_fault_drains_node_with_incident_id_and_requeues_job_excluding_it(
    server_store, slurm, nodes, sleep_job
):
    (node,) = nodes("node-0011")
    name, job_id = sleep_job
    incident = make_incident(1, node=node, job=name)
    got = engine(server_store, slurm).handle(incident)
    assert _states(got) == {
        ActionKind.ISOLATE_NODE: State.DONE,
        ActionKind.REQUEST_CAPACITY: State.DONE,
        ActionKind.RESTART_JOB: State.DONE,
        ActionKind.VERIFY_PROGRESS: State.DONE,
        ActionKind.REBOOT_NODE: State.DONE,
    }
    state = slurm.node(node)
    assert state.drained and state.reason.startswith(f"trainguard:{incident.id}")
    assert incident.id in slurm.run(["sinfo", "-R", "-h", "-n", node, "-o", "%E"])
    job = slurm.job(job_id)
    assert node in job["ExcNodeList"].split(",") and job["Restarts"] == "1"
    # Requested, or already issued: slurmctld issues the reboot as soon as the drained node
    # is idle, which can happen before this check (CI saw REBOOT_ISSUED once).
    assert state.flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"}
    assert load_incident(server_store, incident.id).status == IncidentStatus.RESOLVED
    events = db.audit_events(server_store, incident_id=incident.id)
    for a in got:
        mine = events[events["action_id"] == a.plan.action_id]["event"].tolist()
        assert mine[:3] == ["planned", "executing", "done"]
    phases = events[events["event"] == "done"]["detail"].tolist()
    assert all('"duration_s"' in p for p in phases)


def test_a_job_slow_to_train_again_holds_up_no_other_incident(
    server_store, slurm, nodes, sleep_job
):
    """Verifying progress waits on the world without blocking: while the restarted job loads
    its checkpoint, the next incident's ladder runs; a later re-check finishes the first."""
    first, second = nodes("node-0012", "node-0013")
    name, job_id = sleep_job
    steps = StepLog()
    act = engine(server_store, slurm, registry=slurm_registry(slurm, progress=steps))
    slow = make_incident(2, node=first, job=name)
    assert _states(act.handle(slow))[ActionKind.VERIFY_PROGRESS] == State.WAITING
    other = _states(act.handle(make_incident(3, node=second, job="no-such-slurm-job")))
    assert other[ActionKind.ISOLATE_NODE] == State.DONE and slurm.node(second).drained
    assert other[ActionKind.RESTART_JOB] == State.FAILED  # its own ladder ran to its end
    assert act.poll_waiting() == [slow.id]  # still no step: still waiting, nothing stored
    assert (
        _states(db.load_actions(server_store, incident_id=slow.id))[ActionKind.VERIFY_PROGRESS]
        == State.WAITING
    )
    steps.log(name, 1, datetime.now(UTC))
    steps.log(name, 2, datetime.now(UTC))
    act.poll_waiting()
    done = _states(db.load_actions(server_store, incident_id=slow.id))
    assert done[ActionKind.VERIFY_PROGRESS] == State.DONE
    assert done[ActionKind.REBOOT_NODE] == State.DONE
    assert slurm.job(job_id)["Restarts"] == "1"
    waited = db.audit_events(server_store, incident_id=slow.id)
    assert (waited["event"] == "waiting").sum() == 1  # stored once, not at every re-check


def test_human_drain_is_preserved_and_never_undone(server_store, slurm, nodes, sleep_job):
    (node,) = nodes("node-0012")
    slurm.drain(node, "human: bad fan, ticket 4711")
    incident = make_incident(2, node=node, job=sleep_job[0])
    got = _states(engine(server_store, slurm).handle(incident))
    assert got[ActionKind.ISOLATE_NODE] == State.SKIPPED
    assert got[ActionKind.REBOOT_NODE] == State.SKIPPED
    state = slurm.node(node)
    assert state.drained and state.reason == "human: bad fan, ticket 4711"
    resume = make_incident(3, node=node, job=sleep_job[0])
    policy = parse_policy(
        "version: 1\nrules:\n  - {name: r, match: {categories: [gpu.hardware]}, "
        "ladder: [resume_node]}\n"
    )
    assert _states(engine(server_store, slurm, policy=policy).handle(resume)) == {
        ActionKind.RESUME_NODE: State.SKIPPED
    }
    assert slurm.node(node).reason == "human: bad fan, ticket 4711"


def test_dry_run_plans_and_records_but_changes_nothing_in_slurm(
    server_store, slurm, nodes, sleep_job
):
    (node,) = nodes("node-0013")
    before, job_before = slurm.node(node), slurm.job(sleep_job[1])
    incident = make_incident(4, node=node, job=sleep_job[0])
    got = engine(server_store, slurm, mode=Mode.DRY_RUN).handle(incident)
    assert {a.state for a in got} == {State.DRY_RUN} and len(got) == 5
    assert slurm.node(node) == before
    job = slurm.job(sleep_job[1])
    assert job["Restarts"] == job_before["Restarts"] and job["ExcNodeList"] == "(null)"
    assert load_incident(server_store, incident.id).status == IncidentStatus.OPEN
    events = db.audit_events(server_store, incident_id=incident.id)["event"].tolist()
    assert events.count("planned") == 5 and events.count("dry_run") == 5
    assert "executing" not in events


class Crash(BaseException):
    """The engine process dies here."""


def _executions(store, incident_id: str) -> dict[str, int]:
    events = db.audit_events(store, incident_id=incident_id)
    done = events[events["event"].isin(["done", "skipped", "failed"])]
    return done.groupby("action_id").size().to_dict()


def test_crash_between_plan_and_execute_then_restart_executes_each_action_once(
    server_store, slurm, nodes, sleep_job
):
    (node,) = nodes("node-0014")
    incident = make_incident(5, node=node, job=sleep_job[0])

    def die_before_drain(point, plan):
        if point == "after_plan" and plan.kind == ActionKind.ISOLATE_NODE:
            raise Crash

    with pytest.raises(Crash):
        engine(server_store, slurm, crash_hook=die_before_drain).handle(incident)
    assert not slurm.node(node).ours  # persisted as planned, never executed
    assert {a.state for a in db.load_actions(server_store, incident_id=incident.id)} == {
        State.PLANNED
    }
    restarted = engine(server_store, slurm)
    assert restarted.recover() == [incident.id]
    restarted.handle(incident)  # the incident is redelivered after the restart
    engine(server_store, slurm).handle(incident)  # and once more to a third engine
    assert all(n == 1 for n in _executions(server_store, incident.id).values())
    assert len(_executions(server_store, incident.id)) == 5
    assert slurm.job(sleep_job[1])["Restarts"] == "1"


def test_crash_after_drain_before_done_is_reconciled_not_rerun(
    server_store, slurm, nodes, sleep_job
):
    (node,) = nodes("node-0015")
    incident = make_incident(6, node=node, job=sleep_job[0])

    def die_mid_drain(point, plan):
        if point == "after_executing" and plan.kind == ActionKind.ISOLATE_NODE:
            slurm.drain(node, f"trainguard:{incident.id}: drained just before the crash")
            raise Crash

    with pytest.raises(Crash):
        engine(server_store, slurm, crash_hook=die_mid_drain).handle(incident)
    engine(server_store, slurm).recover()
    events = db.audit_events(server_store, incident_id=incident.id)
    drain = events[events["kind"] == "isolate_node"]["event"].tolist()
    assert drain == ["planned", "executing", "reconciled", "done"]  # no second 'executing'
    assert slurm.node(node).ours  # the reboot step later sets its own TrainGuard reason
    assert len(_executions(server_store, incident.id)) == 5


def test_a_crash_while_restarting_a_job_slurm_does_not_know_is_not_reconciled_as_done(
    server_store, slurm, nodes
):
    """A takeover of the restart step of a job not in the queue fails it (as a first run
    would): finding no requeued job is no proof of a requeue, and verify must not run."""
    (node,) = nodes("node-0017")
    incident = make_incident(9, node=node, job="no-such-slurm-job")

    def die_mid_restart(point, plan):
        if point == "after_executing" and plan.kind == ActionKind.RESTART_JOB:
            raise Crash

    with pytest.raises(Crash):
        engine(server_store, slurm, crash_hook=die_mid_restart).handle(incident)
    engine(server_store, slurm).recover()
    states = _states(db.load_actions(server_store, incident_id=incident.id))
    assert states[ActionKind.RESTART_JOB] == State.FAILED
    assert states[ActionKind.VERIFY_PROGRESS] != State.DONE
    events = db.audit_events(server_store, incident_id=incident.id)
    assert "executing" not in events[events["kind"] == "verify_progress"]["event"].tolist()


def test_stale_or_closed_incidents_never_act_after_restart(server_store, slurm, nodes):
    (node,) = nodes("node-0016")
    old = make_incident(7, node=node, at=datetime.now(UTC) - timedelta(hours=3))
    assert engine(server_store, slurm).handle(old) == []
    assert not slurm.node(node).ours
    fresh = make_incident(8, node=node)

    def crash(point, plan):
        raise Crash

    with pytest.raises(Crash):
        engine(server_store, slurm, crash_hook=crash).handle(fresh)
    from diagnosis.incident_store import record_transition
    from diagnosis.lifecycle import Transition

    record_transition(
        server_store,
        Transition(
            incident_id=fresh.id,
            status=IncidentStatus.FALSE_ALARM,
            reason="human",
            actor="oncall",
            at=datetime.now(UTC),
        ),
    )
    engine(server_store, slurm).recover()
    assert {a.state for a in db.load_actions(server_store, incident_id=fresh.id)} == {State.EXPIRED}
    assert not slurm.node(node).ours


def test_approve_mode_holds_risky_actions_until_an_operator_approves(
    server_store, slurm, nodes, sleep_job
):
    (node,) = nodes("node-0017")
    incident = make_incident(9, node=node, job=sleep_job[0])
    eng = engine(server_store, slurm, mode=Mode.APPROVE)
    got = _states(eng.handle(incident))
    assert got[ActionKind.ISOLATE_NODE] == State.AWAITING_APPROVAL
    assert not slurm.node(node).drained
    drain = next(a for a in eng.run(incident.id) if a.plan.kind == ActionKind.ISOLATE_NODE)
    after = _states(eng.approve(drain.plan.action_id, "alice"))
    assert after[ActionKind.ISOLATE_NODE] == State.DONE and slurm.node(node).ours
    assert after[ActionKind.REQUEST_CAPACITY] == State.DONE  # low risk: no approval needed
    assert after[ActionKind.RESTART_JOB] == State.AWAITING_APPROVAL
    events = db.audit_events(server_store, incident_id=incident.id)
    assert ("approved", "alice") in set(zip(events["event"], events["actor"], strict=True))


def test_node_budget_stops_a_remediation_loop(server_store, slurm, nodes):
    (node,) = nodes("node-0018")
    policy = parse_policy(
        "version: 1\nrules:\n  - {name: r, match: {categories: [gpu.hardware]}, "
        "ladder: [isolate_node]}\n"
    )
    eng = engine(server_store, slurm, policy=policy, budgets=Budgets(per_node=1))
    first = eng.handle(make_incident(10, node=node, gpu=1))
    assert first[0].state == State.DONE
    slurm.resume(node)
    second = eng.handle(make_incident(11, node=node, gpu=2))
    assert second[0].state == State.BLOCKED and not slurm.node(node).drained


def test_storm_of_200_incidents_trips_the_breaker_until_reset(server_store, slurm, nodes):
    every = nodes(*[f"node-{i:04d}" for i in range(1, 201)])
    policy = parse_policy(
        "version: 1\nrules:\n  - {name: r, match: {categories: [gpu.hardware]}, "
        "ladder: [isolate_node]}\n"
    )
    eng = engine(server_store, slurm, policy=policy, fleet=200)  # 5% of 200 = 10 nodes
    results = [eng.handle(make_incident(1000 + i, node=n))[0] for i, n in enumerate(every)]
    states = [r.state for r in results]
    assert states.count(State.DONE) == 10 and states.count(State.BLOCKED) == 190
    drained = [n for n in every if slurm.node(n).ours]
    assert len(drained) == 10
    assert db.breaker_state(server_store, "isolation")[0]
    eng.reset_breaker("alice")
    assert not db.breaker_state(server_store, "isolation")[0]
    events = db.audit_events(server_store)
    assert (events["event"] == "breaker_tripped").sum() == 1
    assert (events["event"] == "breaker_reset").sum() == 1
