"""A GPU predicted to fail is drained at its job's next checkpoint: real Slurm and ClickHouse.

The risk rows are what `predict score` computes; the job's topology, steps and log lines go
through the sink's writer into the ClickHouse server, as the pipeline stores them.
"""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from actions import store as db
from actions.checkpoint import AwaitCheckpoint, LogCheckpoints
from actions.engine import ActionEngine, EngineConfig
from actions.model import ActionKind, Mode, State
from actions.policy import load_policy
from actions.safety import BreakerLimits
from analytics.prediction.alerts import jobs_on_nodes, predicted_incidents
from analytics.writer import ClickHouseWriter
from diagnosis.incident_store import (
    IncidentFilter,
    all_incidents,
    load_incident,
    record_transition,
    save_incidents,
)
from diagnosis.lifecycle import Transition
from diagnosis.model import Category, IncidentStatus
from ingest.bus import Record
from ingest.schema import (
    CommKind,
    Communicator,
    EventBase,
    JobTopology,
    LogLine,
    LogSource,
    ParallelLayout,
    RankPlacement,
    TrainStep,
)
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import cleanup_nodes, slurm_registry
from tests.integration.conftest import wait_for
from trainguard.act_cli import build_engine, consume
from trainguard.predict_cli import _open_incidents
from trainguard.settings import ActSettings

pytestmark = pytest.mark.integration
_OFFSETS = itertools.count(1)
SAVED = "  successfully saved checkpoint from iteration    1200 to /ckpt/{job} [ t 1/8, p 1/1 ]"


class Clock:
    """The checkpoint step's clock, moved forward by a test (the engine's stays real)."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


def store_events(store, events: list[EventBase]) -> None:
    """Write events as the sink does (one offset each, so nothing is taken for a replay)."""
    records = [(Record("it.events", 0, next(_OFFSETS), None, b"", 0), e) for e in events]
    ClickHouseWriter(store).write(records, [])


def running_job(store, job: str, nodes: list[str], at: datetime) -> None:
    """Store a job's topology over `nodes` and a step it logged at `at`."""
    ranks = [
        RankPlacement(rank=i * 8 + g, node=n, gpu=g) for i, n in enumerate(nodes) for g in range(8)
    ]
    world = len(ranks)
    topo = JobTopology(
        job_id=job,
        ts=at - timedelta(hours=1),
        world_size=world,
        layout=ParallelLayout(tp=8, pp=1, dp=len(nodes)),
        ranks=ranks,
        communicators=[Communicator(comm="world", kind=CommKind.WORLD, ranks=list(range(world)))],
        scheduler="slurm",
    )
    step = TrainStep(job_id=job, step=1199, ts=at, step_time_s=2.0, loss=2.0)
    store_events(store, [topo, step])


def log(store, node: str, line: str, at: datetime, job: str | None = None) -> None:
    """Store one training-log line read on `node` (no job id: as the log agent reads it)."""
    store_events(
        store,
        [
            LogLine(
                node=node,
                ts=at,
                source=LogSource.TRAIN_STDOUT,
                line=line,
                path="/var/log/train/stdout.log",
                seq=next(_OFFSETS),
                job_id=job,
            )
        ],
    )


def saved_soon(store, job: str, with_id: bool = False) -> None:
    """Store the job's finished save a second from now, on rank 0's node (node-0079)."""
    at = datetime.now(UTC) + timedelta(seconds=1)
    log(store, "node-0079", SAVED.format(job=job), at, job=job if with_id else None)


def risk_rows(
    node: str, gpu: int, at: datetime, risk: float = 0.97, alert: int = 1
) -> pd.DataFrame:
    """Return one GPU's row as `predict score` writes it to gpu_risk."""
    return pd.DataFrame(
        {
            "ts": [int(at.timestamp())],
            "node": [node],
            "gpu": [gpu],
            "uuid": [f"GPU-{node}-{gpu}"],
            "horizon_h": [24],
            "risk": [risk],
            "alert": [alert],
            "model": ["vote"],
            "reason": ["sbe_growth_24h=41, remap_pending=1"],
        }
    )


def engine(
    store,
    slurm,
    clock: Clock | None = None,
    ttl_s: float = 3600.0,
    mode: Mode = Mode.AUTO,
    probe=None,
) -> ActionEngine:
    """Return the default policy's engine over Slurm, waiting on `probe` (default: the logs)."""
    registry = slurm_registry(slurm)
    registry.register(AwaitCheckpoint(probe or LogCheckpoints(store), clock=clock))
    config = EngineConfig(mode=mode, breaker=BreakerLimits(fleet_nodes=1000), incident_ttl_s=ttl_s)
    return ActionEngine(store, registry, load_policy(), config)


@pytest.fixture
def node(slurm, request):
    """A fake Slurm node of the test's own, put back afterwards."""
    name = request.param if hasattr(request, "param") else "node-0071"
    cleanup_nodes(slurm, [name])
    yield name
    cleanup_nodes(slurm, [name])


def _states(store, incident_id: str) -> dict[ActionKind, State]:
    return {a.plan.kind: a.state for a in db.load_actions(store, incident_id=incident_id)}


def _predicted(store, node: str, gpu: int, job: str | None):
    now = datetime.now(UTC)
    if job is not None:
        running_job(store, job, [node, "node-0079"], now - timedelta(seconds=30))
    incidents, skipped = predicted_incidents(store, risk_rows(node, gpu, now), now)
    assert skipped == 0 and len(incidents) == 1
    save_incidents(store, incidents)
    return incidents[0]


def test_drain_waits_for_the_jobs_next_finished_save_then_requeues_it(
    server_store, slurm, node, sleep_job
):
    name, job_id = sleep_job
    incident = _predicted(server_store, node, 5, name)
    assert incident.category == Category.GPU_PREDICTED and incident.job == name
    assert incident.suspects[0].score == pytest.approx(0.97)
    act = engine(server_store, slurm)
    act.handle(incident)
    assert _states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    assert _states(server_store, incident.id)[ActionKind.ISOLATE_NODE] == State.PLANNED
    assert not slurm.node(node).drained
    assert load_incident(server_store, incident.id).status == IncidentStatus.MITIGATING
    # a save that finished before the alert, and the start of the next one, are not enough
    log(server_store, "node-0079", SAVED.format(job=name), datetime.now(UTC) - timedelta(hours=1))
    log(
        server_store,
        "node-0079",
        "saving checkpoint at iteration    1200 to /ckpt in torch_dist format",
        datetime.now(UTC),
    )
    assert act.poll_waiting() == [incident.id]
    assert _states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    assert not slurm.node(node).drained
    # the save finishes on rank 0's node (another node of the job): now drain and requeue
    saved_soon(server_store, name)
    time.sleep(1.1)
    act.poll_waiting()
    states = _states(server_store, incident.id)
    assert states == {
        ActionKind.AWAIT_CHECKPOINT: State.DONE,
        ActionKind.ISOLATE_NODE: State.DONE,
        ActionKind.REQUEST_CAPACITY: State.DONE,
        ActionKind.RESTART_JOB: State.DONE,
        ActionKind.VERIFY_PROGRESS: State.DONE,
        ActionKind.HARDWARE_INSPECTION: State.DONE,
    }
    drained = slurm.node(node)
    assert drained.drained and drained.reason.startswith(f"trainguard:{incident.id}")
    assert not drained.flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED"}  # inspection, no reboot
    requeued = slurm.job(job_id)
    assert node in requeued["ExcNodeList"].split(",") and requeued["Restarts"] == "1"
    assert load_incident(server_store, incident.id).status == IncidentStatus.RESOLVED
    events = db.audit_events(server_store, incident_id=incident.id)
    wait = db.load_actions(server_store, incident_id=incident.id)[0].plan.action_id
    mine = events[events["action_id"] == wait]["event"].tolist()
    assert mine == ["planned", "executing", "waiting", "done"]  # re-checks store nothing


def test_no_save_before_the_timeout_escalates_and_drains_nothing(
    server_store, slurm, node, sleep_job
):
    name, _ = sleep_job
    incident = _predicted(server_store, node, 2, name)
    clock = Clock()
    act = engine(server_store, slurm, clock)
    act.handle(incident)
    clock.ahead = timedelta(hours=6, seconds=1)  # the default rule waits 6 h
    act.poll_waiting()
    states = _states(server_store, incident.id)
    assert states[ActionKind.AWAIT_CHECKPOINT] == State.FAILED
    assert states[ActionKind.ISOLATE_NODE] == State.PLANNED
    assert not slurm.node(node).drained
    current = load_incident(server_store, incident.id)
    assert current.status == IncidentStatus.OPEN and "no finished checkpoint" in (
        current.status_reason or ""
    )
    assert act.poll_waiting() == []  # nothing waits any more


@pytest.mark.parametrize("node", ["node-0072"], indirect=True)
def test_idle_gpu_is_drained_at_once_for_inspection(server_store, slurm, node):
    incident = _predicted(server_store, node, 0, None)
    assert incident.job is None and "idle" in incident.summary
    engine(server_store, slurm).handle(incident)
    assert _states(server_store, incident.id) == {
        ActionKind.ISOLATE_NODE: State.DONE,
        ActionKind.HARDWARE_INSPECTION: State.DONE,
    }
    assert slurm.node(node).drained


@pytest.mark.parametrize("node", ["node-0073"], indirect=True)
def test_gpu_failing_before_the_save_supersedes_the_prediction(
    server_store, slurm, node, sleep_job
):
    name, job_id = sleep_job
    predicted = _predicted(server_store, node, 4, name)
    act = engine(server_store, slurm)
    act.handle(predicted)
    failed = make_incident(7301, node=node, gpu=4, job=name, incident_id=f"inc-{name}")
    act.handle(failed)  # the hardware ladder drains and requeues the job once
    assert slurm.node(node).reason.startswith(f"trainguard:{failed.id}")
    resolved = load_incident(server_store, predicted.id)
    assert resolved.status == IncidentStatus.RESOLVED
    assert f"superseded: {failed.id}" in (resolved.status_reason or "")
    assert set(_states(server_store, predicted.id).values()) == {State.EXPIRED}
    saved_soon(server_store, name)
    time.sleep(1.1)
    assert act.poll_waiting() == [] and act.recover() == []
    assert slurm.job(job_id)["Restarts"] == "1"  # not requeued a second time


@pytest.mark.parametrize("node", ["node-0074"], indirect=True)
def test_a_restarted_engine_keeps_waiting_past_the_incident_ttl(
    server_store, slurm, node, sleep_job
):
    name, _ = sleep_job
    incident = _predicted(server_store, node, 1, name)
    engine(server_store, slurm).handle(incident)
    time.sleep(1.5)
    again = engine(server_store, slurm, ttl_s=1.0)  # the incident is now older than the TTL
    assert again.recover() == [incident.id]
    assert _states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    saved_soon(server_store, name, with_id=True)
    time.sleep(1.1)
    again.recover()
    assert _states(server_store, incident.id)[ActionKind.ISOLATE_NODE] == State.DONE


def test_alerts_become_one_incident_per_gpu_and_skip_failed_gpus(server_store):
    now = datetime.now(UTC)
    first, _ = predicted_incidents(server_store, risk_rows("node-0075", 3, now), now)
    save_incidents(server_store, first)
    later = now + timedelta(hours=1)
    rows = pd.concat(
        [
            risk_rows("node-0075", 3, later, risk=0.99),
            risk_rows("node-0076", 1, later),  # has failed already
            risk_rows("node-0076", 2, later, alert=0),  # no alert
            risk_rows("node-0077", 0, later, risk=0.4),  # below --min-risk
        ],
        ignore_index=True,
    )
    save_incidents(server_store, [make_incident(7601, node="node-0076", gpu=1, at=now)])
    again, skipped = predicted_incidents(server_store, rows, later, min_risk=0.5)
    assert skipped == 2
    (update,) = again
    assert (update.id, update.revision, update.findings) == (first[0].id, 2, 2)
    assert update.suspects[0].score == pytest.approx(0.99) and len(update.evidence) == 2
    assert update.updated_at == later and update.detected_at == now


def test_score_publishes_to_kafka_and_act_drains_at_the_checkpoint(
    server_store, slurm, kafka_bus, topics, monkeypatch, sleep_job
):
    name, _ = sleep_job
    target = "node-0078"
    cleanup_nodes(slurm, [target])
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=2)
    for key, value in {
        "TG_KAFKA_MODE": "kafka",
        "TG_KAFKA_BOOTSTRAP": kafka_bus.bootstrap,
        "TG_KAFKA_TOPIC_PREFIX": topics.prefix,
        "TG_ACT_MODE": "auto",
        "TG_ACT_SLURM_CONF": slurm.conf or "",
    }.items():
        monkeypatch.setenv(key, value)
    now = datetime.now(UTC)
    running_job(server_store, name, [target, "node-0079"], now)
    text = _open_incidents(server_store, risk_rows(target, 6, now), now, 0.0)
    assert "gpu.predicted incidents: 1 new, 0 updated and published" in text
    act = build_engine(ActSettings(), server_store, kafka_bus)
    stop = threading.Event()
    consumer = kafka_bus.consumer(f"act-{topics.prefix}", [topics.incidents])
    worker = threading.Thread(target=consume, args=(act, consumer, stop, 0.2, 0.5), daemon=True)
    worker.start()
    try:
        wait_for(
            lambda: (
                State.WAITING
                in {a.state for a in db.load_actions(server_store) if a.plan.target.node == target}
            ),
            60,
            "the drain waiting for the checkpoint",
        )
        assert not slurm.node(target).drained
        saved_soon(server_store, name, with_id=True)
        wait_for(lambda: slurm.node(target).ours, 60, f"{target} drained after the save")
        # the requeued job trains again: two steps for verify_progress, and the ladder ends
        soon = datetime.now(UTC) + timedelta(seconds=8)
        store_events(
            server_store,
            [TrainStep(job_id=name, step=1200 + i, ts=soon + timedelta(seconds=i)) for i in (1, 2)],
        )
        wait_for(
            lambda: any(i.status == IncidentStatus.RESOLVED for i in _mine(server_store, target)),
            120,
            "the incident resolved once the job progressed",
        )
    finally:
        stop.set()
        worker.join(30)
        assert not worker.is_alive()  # no ladder step left running past the test
        consumer.close()
        cleanup_nodes(slurm, [target])


def _mine(store, node: str):
    """Return the gpu.predicted incidents blaming a node."""
    found = all_incidents(store, IncidentFilter(category=Category.GPU_PREDICTED.value))
    return [i for i in found if i.suspects and i.suspects[0].node == node]


@pytest.fixture(params=["server_store", "embedded_store"])
def any_store(request: pytest.FixtureRequest):
    return request.getfixturevalue(request.param)


def test_probe_and_job_lookup_on_the_server_and_on_chdb(any_store):
    now = datetime.now(UTC).replace(microsecond=0)
    running_job(any_store, "job-a", ["node-a1", "node-a2"], now - timedelta(minutes=5))
    running_job(any_store, "job-old", ["node-b1"], now - timedelta(hours=2))  # ended
    assert jobs_on_nodes(any_store, now) == {"node-a1": "job-a", "node-a2": "job-a"}
    probe = LogCheckpoints(any_store)
    since = now - timedelta(minutes=1)
    log(any_store, "node-a2", SAVED.format(job="job-a"), now - timedelta(minutes=2))  # before
    log(any_store, "node-b1", SAVED.format(job="job-old"), now)  # not the job's node
    log(any_store, "node-a1", SAVED.format(job="x"), now, job="job-other")  # another job's id
    assert probe.saved_since("job-a", since) is None
    log(any_store, "node-a2", "[rank0]:" + SAVED.format(job="job-a"), now + timedelta(seconds=3))
    found = probe.saved_since("job-a", since)
    assert found is not None and found.node == "node-a2"
    assert (found.saved.iteration, found.saved.path) == (1200, "/ckpt/job-a")
    assert found.at == now + timedelta(seconds=3)


class Flaky:
    """The ClickHouse probe, except that its first `fails` checks raise (a driver bug, a hang)."""

    def __init__(self, inner: LogCheckpoints, fails: int) -> None:
        self.inner, self.fails = inner, fails

    def saved_since(self, job: str, since: datetime):
        if self.fails:
            self.fails -= 1
            raise RuntimeError("connection reset mid-query")
        return self.inner.saved_since(job, since)


@pytest.mark.parametrize("node", ["node-0070"], indirect=True)
def test_a_check_that_raises_keeps_waiting_and_a_closed_incident_expires_its_ladder(
    server_store, slurm, node, sleep_job
):
    name, _ = sleep_job
    incident = _predicted(server_store, node, 3, name)
    act = engine(server_store, slurm, probe=Flaky(LogCheckpoints(server_store), fails=2))
    act.handle(incident)  # the first check raises: waiting, not failed
    assert _states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    act.poll_waiting()  # so does the second
    assert _states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    record_transition(
        server_store,
        Transition(
            incident_id=incident.id,
            status=IncidentStatus.FALSE_ALARM,
            reason="the GPU was swapped this morning",
            actor="oncall",
            at=datetime.now(UTC),
        ),
    )
    saved_soon(server_store, name)
    time.sleep(1.1)
    assert act.poll_waiting() == [incident.id]
    assert set(_states(server_store, incident.id).values()) == {State.EXPIRED}
    assert not slurm.node(node).drained


def test_a_revision_keeps_its_job_and_a_closed_prediction_cools_down(server_store):
    now = datetime.now(UTC)
    running_job(server_store, "job-first", ["node-0081"], now)
    (first,), _ = predicted_incidents(server_store, risk_rows("node-0081", 2, now), now)
    save_incidents(server_store, [first])
    later = now + timedelta(hours=1)
    running_job(server_store, "job-second", ["node-0081"], later)  # another job moved in
    (again,), _ = predicted_incidents(server_store, risk_rows("node-0081", 2, later), later)
    assert (again.id, again.job) == (first.id, "job-first")  # its ladder waits for job-first
    assert "job-first" in again.summary
    record_transition(
        server_store,
        Transition(
            incident_id=first.id,
            status=IncidentStatus.RESOLVED,
            reason="drained at the checkpoint",
            actor="trainguard-act",
            at=later,
        ),
    )
    day = later + timedelta(days=1)
    assert predicted_incidents(server_store, risk_rows("node-0081", 2, day), day) == ([], 1)
    week = later + timedelta(days=8)
    (fresh,), _ = predicted_incidents(server_store, risk_rows("node-0081", 2, week), week)
    assert fresh.id != first.id and fresh.revision == 1


def test_a_page_of_look_alike_lines_does_not_hide_the_save(server_store):
    now = datetime.now(UTC).replace(microsecond=0)
    running_job(server_store, "job-c", ["node-c1"], now)
    probe = LogCheckpoints(server_store, limit=2)
    since = now - timedelta(seconds=10)
    for i in range(3):  # hold a needle, are no save
        line = f"successfully saved checkpoint metadata to /ckpt/meta-{i}"
        log(server_store, "node-c1", line, now - timedelta(seconds=5 - i))
    log(server_store, "node-c1", SAVED.format(job="job-c"), now)
    assert probe.saved_since("job-c", since) is None  # the first page: look-alikes only
    found = probe.saved_since("job-c", since)
    assert found is not None and found.saved.iteration == 1200


@pytest.mark.parametrize("node", ["node-0069"], indirect=True)
def test_a_drain_held_for_approval_is_superseded_when_the_gpu_fails(
    server_store, slurm, node, sleep_job
):
    name, job_id = sleep_job
    predicted = _predicted(server_store, node, 6, name)
    held = engine(server_store, slurm, mode=Mode.APPROVE)
    held.handle(predicted)
    saved_soon(server_store, name)
    time.sleep(1.1)
    held.poll_waiting()
    states = _states(server_store, predicted.id)
    assert states[ActionKind.AWAIT_CHECKPOINT] == State.DONE
    assert states[ActionKind.ISOLATE_NODE] == State.AWAITING_APPROVAL
    failed = make_incident(6901, node=node, gpu=6, job=name, incident_id=f"inc-{name}-hw")
    engine(server_store, slurm).handle(failed)  # auto: drains and requeues once
    assert set(_states(server_store, predicted.id).values()) <= {State.DONE, State.EXPIRED}
    assert load_incident(server_store, predicted.id).status == IncidentStatus.RESOLVED
    assert slurm.job(job_id)["Restarts"] == "1"
