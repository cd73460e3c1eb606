"""Steps that wait on the world (verify_progress) over the ClickHouse server: one replica
records the answer, another cluster's process leaves the ladder alone, and the incident TTL
does not cut a wait short (the step's own timeout bounds it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from actions import store as db
from actions.claims import Claims
from actions.engine import ActionEngine, EngineConfig
from actions.model import ActionKind, Mode, State
from actions.policy import load_policy
from actions.progress import TrainStepsProgress, VerifyProgress
from actions.registry import ActionRegistry
from actions.safety import BreakerLimits
from analytics.writer import ClickHouseWriter
from diagnosis.incidents import Incident
from ingest.bus import Record
from ingest.schema import DEFAULT_CLUSTER, TrainStep
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import LoggingAction, StepLog

pytestmark = pytest.mark.integration

RECORDED = (
    ActionKind.ISOLATE_NODE,
    ActionKind.REQUEST_CAPACITY,
    ActionKind.RESTART_JOB,
    ActionKind.REBOOT_NODE,
)


class Clock:
    def __init__(self) -> None:
        self.shift = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.shift


def _engine(
    store,
    steps: StepLog,
    claims: Claims | None = None,
    cluster: str | None = None,
    clock: Callable[[], datetime] | None = None,
    ttl_s: float = 3600.0,
) -> ActionEngine:
    registry = ActionRegistry([VerifyProgress(steps), *(LoggingAction(k) for k in RECORDED)])
    config = EngineConfig(
        mode=Mode.AUTO,
        breaker=BreakerLimits(fleet_nodes=1000),
        cluster=cluster,
        incident_ttl_s=ttl_s,
    )
    return ActionEngine(
        store, registry, load_policy(), config, claims=claims, clock=clock or Clock()
    )


def _verify(store, incident: Incident):
    (found,) = [
        a
        for a in db.load_actions(store, incident_id=incident.id)
        if a.plan.kind == ActionKind.VERIFY_PROGRESS
    ]
    return found


def _audited(store, incident: Incident, event: str) -> int:
    events = db.audit_events(store, incident_id=incident.id)
    return int(((events["event"] == event) & (events["kind"] == "verify_progress")).sum())


@pytest.fixture
def replicas(server_store) -> Iterator[tuple[Claims, Claims]]:
    a = Claims(server_store, "r-a", lease_s=4.0, heartbeat_s=0.5)
    b = Claims(server_store, "r-b", lease_s=4.0, heartbeat_s=0.5)
    yield a, b
    a.stop()
    b.stop()


def test_the_end_of_a_wait_is_recorded_by_one_replica(server_store, replicas):
    steps = StepLog()
    first, second = (_engine(server_store, steps, claims=c) for c in replicas)
    incident = make_incident(31, node="n31", job="job-31")
    first.handle(incident)
    stale = _verify(server_store, incident)  # what the second replica's sweep read
    assert stale.state == State.WAITING
    steps.log("job-31", 1, datetime.now(UTC))
    steps.log("job-31", 2, datetime.now(UTC))
    assert first.poll_waiting() == [incident.id]
    # the second replica's check, made from its read before the first one recorded: it
    # sees the steps too, but the end of the wait is the first one's
    assert second._check_again(stale) is False
    assert _audited(server_store, incident, "done") == 1
    assert _verify(server_store, incident).state == State.DONE


def test_another_clusters_process_leaves_a_waiting_ladder_alone(server_store):
    steps = StepLog()
    east_incident = make_incident(32, node="n1", job="job-1").model_copy(update={"cluster": "east"})
    east = _engine(server_store, steps, cluster="east")
    west = _engine(server_store, steps, cluster="west")
    east.handle(east_incident)
    steps.log("job-1", 1, datetime.now(UTC))
    steps.log("job-1", 2, datetime.now(UTC))
    assert west.recover() == [] and west.poll_waiting() == []
    assert _verify(server_store, east_incident).state == State.WAITING
    assert east.poll_waiting() == [east_incident.id]
    assert _verify(server_store, east_incident).state == State.DONE


def test_a_wait_past_the_incident_ttl_goes_on_until_its_own_timeout(server_store):
    steps, clock = StepLog(), Clock()
    act = _engine(server_store, steps, clock=clock, ttl_s=600.0)
    incident = make_incident(33, node="n33", job="job-33", at=datetime.now(UTC))
    act.handle(incident)
    clock.shift = timedelta(seconds=900)  # e.g. a restart approved late, verified after
    assert act.recover() == [incident.id]
    assert _verify(server_store, incident).state == State.WAITING  # not expired
    steps.log("job-33", 1, datetime.now(UTC))
    steps.log("job-33", 2, datetime.now(UTC))
    act.poll_waiting()
    states = {a.plan.kind: a.state for a in db.load_actions(server_store, incident_id=incident.id)}
    assert states[ActionKind.VERIFY_PROGRESS] == State.DONE
    assert states[ActionKind.REBOOT_NODE] == State.DONE


def test_train_steps_are_counted_in_the_jobs_cluster_only(server_store):
    now = datetime.now(UTC)
    rows = [
        TrainStep(job_id="job-1", step=s, rank=0, node="n1", ts=now, cluster=cluster)
        for s, cluster in ((1, "east"), (2, "east"), (7, DEFAULT_CLUSTER))
    ]
    ClickHouseWriter(server_store).write(
        [(Record("it.train", 0, i, None, b"", 0), e) for i, e in enumerate(rows)], []
    )
    probe = TrainStepsProgress(server_store)
    since = now - timedelta(seconds=1)
    assert probe.steps_since("job-1", since, "east") == 2
    assert probe.steps_since("job-1", since, "west") == 0
    assert probe.steps_since("job-1", since, DEFAULT_CLUSTER) == 1  # stored as ''
    assert probe.steps_since("job-1", since, make_incident(1).cluster) == 1
    assert probe.steps_since("job-1", now + timedelta(seconds=1), "east") == 0
