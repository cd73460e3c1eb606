"""A GPU predicted to fail is drained at its job's next checkpoint: real Slurm and ClickHouse.

The risk rows are what `predict score` computes; the job's topology, steps and log lines go
through the sink's writer into the ClickHouse server, as the pipeline stores them.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from actions import store as db
from actions.checkpoint import LogCheckpoints
from actions.consumer import consume
from actions.model import ActionKind, Mode, State
from diagnosis.incident_store import (
    load_incident,
)
from diagnosis.model import Category, IncidentStatus
from ingest.schema import (
    TrainStep,
)
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import cleanup_nodes
from tests.integration.checkpoint_helpers import (
    SAVED,
    Clock,
    Flaky,
    engine,
    ladder_states,
    log,
    mine,
    predicted_incident,
    risk_rows,
    running_job,
    saved_soon,
    set_status,
    store_events,
)
from tests.integration.conftest import wait_for
from trainguard.act_cli import build_engine
from trainguard.predict_cli import _open_incidents
from trainguard.settings import ActSettings

pytestmark = pytest.mark.integration


@pytest.fixture
def node(slurm, request):
    """A fake Slurm node of the test's own, put back afterwards."""
    name = request.param if hasattr(request, "param") else "node-0071"
    cleanup_nodes(slurm, [name])
    yield name
    cleanup_nodes(slurm, [name])


def test_drain_waits_for_the_jobs_next_finished_save_then_requeues_it(
    server_store, slurm, node, sleep_job
):
    name, job_id = sleep_job
    incident = predicted_incident(server_store, node, 5, name)
    assert incident.category == Category.GPU_PREDICTED and incident.job == name
    assert incident.suspects[0].score == pytest.approx(0.97)
    act = engine(server_store, slurm)
    act.handle(incident)
    assert ladder_states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    assert ladder_states(server_store, incident.id)[ActionKind.ISOLATE_NODE] == State.PLANNED
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
    assert ladder_states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    assert not slurm.node(node).drained
    # the save finishes on rank 0's node (another node of the job): now drain and requeue
    saved_soon(server_store, name)
    time.sleep(1.1)
    act.poll_waiting()
    states = ladder_states(server_store, incident.id)
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
    incident = predicted_incident(server_store, node, 2, name)
    clock = Clock()
    act = engine(server_store, slurm, clock)
    act.handle(incident)
    clock.ahead = timedelta(hours=6, seconds=1)  # the default rule waits 6 h
    act.poll_waiting()
    states = ladder_states(server_store, incident.id)
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
    incident = predicted_incident(server_store, node, 0, None)
    assert incident.job is None and "idle" in incident.summary
    engine(server_store, slurm).handle(incident)
    assert ladder_states(server_store, incident.id) == {
        ActionKind.ISOLATE_NODE: State.DONE,
        ActionKind.HARDWARE_INSPECTION: State.DONE,
    }
    assert slurm.node(node).drained


@pytest.mark.parametrize("node", ["node-0073"], indirect=True)
def test_gpu_failing_before_the_save_supersedes_the_prediction(
    server_store, slurm, node, sleep_job
):
    name, job_id = sleep_job
    predicted = predicted_incident(server_store, node, 4, name)
    act = engine(server_store, slurm)
    act.handle(predicted)
    failed = make_incident(7301, node=node, gpu=4, job=name, incident_id=f"inc-{name}")
    act.handle(failed)  # the hardware ladder drains and requeues the job once
    assert slurm.node(node).reason.startswith(f"trainguard:{failed.id}")
    resolved = load_incident(server_store, predicted.id)
    assert resolved.status == IncidentStatus.RESOLVED
    assert f"superseded: {failed.id}" in (resolved.status_reason or "")
    assert set(ladder_states(server_store, predicted.id).values()) == {State.EXPIRED}
    saved_soon(server_store, name)
    time.sleep(1.1)
    assert act.poll_waiting() == [] and act.recover() == []
    assert slurm.job(job_id)["Restarts"] == "1"  # not requeued a second time


@pytest.mark.parametrize("node", ["node-0074"], indirect=True)
def test_a_restarted_engine_keeps_waiting_past_the_incident_ttl(
    server_store, slurm, node, sleep_job
):
    name, _ = sleep_job
    incident = predicted_incident(server_store, node, 1, name)
    engine(server_store, slurm).handle(incident)
    time.sleep(1.5)
    again = engine(server_store, slurm, ttl_s=1.0)  # the incident is now older than the TTL
    assert again.recover() == [incident.id]
    assert ladder_states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    saved_soon(server_store, name, with_id=True)
    time.sleep(1.1)
    again.recover()
    assert ladder_states(server_store, incident.id)[ActionKind.ISOLATE_NODE] == State.DONE


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
            lambda: any(i.status == IncidentStatus.RESOLVED for i in mine(server_store, target)),
            120,
            "the incident resolved once the job progressed",
        )
    finally:
        stop.set()
        worker.join(30)
        assert not worker.is_alive()  # no ladder step left running past the test
        consumer.close()
        cleanup_nodes(slurm, [target])


@pytest.mark.parametrize("node", ["node-0070"], indirect=True)
def test_a_check_that_raises_keeps_waiting_and_a_closed_incident_expires_its_ladder(
    server_store, slurm, node, sleep_job
):
    name, _ = sleep_job
    incident = predicted_incident(server_store, node, 3, name)
    act = engine(server_store, slurm, probe=Flaky(LogCheckpoints(server_store), fails=2))
    act.handle(incident)  # the first check raises: waiting, not failed
    assert ladder_states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    act.poll_waiting()  # so does the second
    assert ladder_states(server_store, incident.id)[ActionKind.AWAIT_CHECKPOINT] == State.WAITING
    set_status(
        server_store,
        incident.id,
        IncidentStatus.FALSE_ALARM,
        "the GPU was swapped this morning",
        datetime.now(UTC),
    )
    saved_soon(server_store, name)
    time.sleep(1.1)
    assert act.poll_waiting() == [incident.id]
    assert set(ladder_states(server_store, incident.id).values()) == {State.EXPIRED}
    assert not slurm.node(node).drained


@pytest.mark.parametrize("node", ["node-0069"], indirect=True)
def test_a_drain_held_for_approval_is_superseded_when_the_gpu_fails(
    server_store, slurm, node, sleep_job
):
    name, job_id = sleep_job
    predicted = predicted_incident(server_store, node, 6, name)
    held = engine(server_store, slurm, mode=Mode.APPROVE)
    held.handle(predicted)
    saved_soon(server_store, name)
    time.sleep(1.1)
    held.poll_waiting()
    states = ladder_states(server_store, predicted.id)
    assert states[ActionKind.AWAIT_CHECKPOINT] == State.DONE
    assert states[ActionKind.ISOLATE_NODE] == State.AWAITING_APPROVAL
    failed = make_incident(6901, node=node, gpu=6, job=name, incident_id=f"inc-{name}-hw")
    engine(server_store, slurm).handle(failed)  # auto: drains and requeues once
    assert set(ladder_states(server_store, predicted.id).values()) <= {State.DONE, State.EXPIRED}
    assert load_incident(server_store, predicted.id).status == IncidentStatus.RESOLVED
    assert slurm.job(job_id)["Restarts"] == "1"
