"""`trainguard act` wiring: incidents from real Kafka drive Slurm; events go to tg.actions."""

from __future__ import annotations

import threading

import pytest

from actions import store as db
from actions.consumer import consume
from actions.model import ActionKind, State
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import cleanup_nodes
from tests.integration.conftest import wait_for
from trainguard.act_cli import build_engine
from trainguard.settings import ActSettings

pytestmark = pytest.mark.integration


def test_act_consumes_incidents_from_kafka_and_acts_once(
    server_store, slurm, kafka_bus, topics, monkeypatch
):
    node = "node-0019"
    cleanup_nodes(slurm, [node])
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=2)
    monkeypatch.setenv("TG_ACT_MODE", "auto")
    monkeypatch.setenv("TG_ACT_SLURM_CONF", slurm.conf or "")
    engine = build_engine(ActSettings(), server_store, kafka_bus)
    incident = make_incident(42, node=node, job="no-such-job")
    producer = kafka_bus.producer()
    for revision in (1, 2, 2):  # an update and a redelivery
        bumped = incident.model_copy(update={"revision": revision})
        producer.send_raw(topics.incidents, incident.id.encode(), bumped.model_dump_json().encode())
    producer.send_raw(topics.incidents, b"junk", b"{not json")
    producer.flush()
    stop = threading.Event()
    consumer = kafka_bus.consumer(f"act-{topics.prefix}", [topics.incidents])
    worker = threading.Thread(target=consume, args=(engine, consumer, stop, 0.5), daemon=True)
    worker.start()
    try:
        wait_for(lambda: slurm.node(node).ours, 60, f"{node} drained by the engine")
        wait_for(
            lambda: any(
                a.state == State.FAILED
                for a in db.load_actions(server_store, incident_id=incident.id)
            ),
            60,
            "the restart of a job Slurm does not know to fail",
        )
    finally:
        stop.set()
        worker.join(30)
        consumer.close()
        cleanup_nodes(slurm, [node])
    states = {a.plan.kind: a.state for a in db.load_actions(server_store, incident_id=incident.id)}
    assert states[ActionKind.ISOLATE_NODE] == State.DONE
    assert states[ActionKind.RESTART_JOB] == State.FAILED
    events = db.audit_events(server_store, incident_id=incident.id)
    assert (events["event"] == "executing").sum() == 3  # isolate, capacity, restart: once each
    assert "escalated" in events["event"].tolist()
    reader = kafka_bus.consumer(f"read-{topics.prefix}", [topics.actions])
    got = []
    wait_for(lambda: bool(got.extend(reader.poll(100, 1.0)) or len(got) >= 5), 30, "tg.actions")
    reader.close()
    assert any(b'"action.failed"' in r.value for r in got)
