"""The actions topic carries typed `ActionEvent`s; records from before they were typed decode."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from actions.executors.local import LocalCluster, LocalDrain
from actions.model import ActionKind, ActionPlan, State, Target, done
from actions.outbox import Outbox
from actions.registry import ActionRequest
from actions.webhooks.formats import EventType
from ingest.action_events import ActionEvent, decode_action_event, encode_action_event
from ingest.bus import InProcessBus
from ingest.schema import SchemaError, decode_event
from tests.actions_builders import make_incident

NOW = datetime(2026, 12, 2, 5, 0, 7, 250_000, tzinfo=UTC)


def _plan() -> ActionPlan:
    request = ActionRequest(
        incident=make_incident(node="n1"),
        kind=ActionKind.ISOLATE_NODE,
        target=Target(node="n1"),
        step=0,
        rule="isolate",
    )
    return LocalDrain(LocalCluster()).plan(request)


def _untyped(plan: ActionPlan) -> bytes:
    """A record as the outbox wrote it before the event was typed."""
    value = {
        "event": "action.executed",
        "cluster": plan.cluster,
        "state": "done",
        "plan": plan.model_dump(mode="json"),
        "result": done("drained n1").model_dump(),
        "at": NOW.isoformat(),
    }
    return json.dumps(value, default=str).encode()


def test_a_record_from_before_the_typed_event_decodes_as_the_same_action():
    plan = _plan()
    event = decode_action_event(_untyped(plan))
    assert event.kind == "action" and event.event == "action.executed"
    assert event.ts == NOW and event.state == State.DONE
    assert event.plan == plan and event.result == done("drained n1")
    assert event.action().updated_at == NOW and event.key == plan.action_id


def test_a_typed_record_keeps_every_field_of_the_untyped_shape():
    plan = _plan()
    event = ActionEvent(event="action.planned", ts=NOW, state=State.PLANNED, plan=plan)
    value = json.loads(encode_action_event(event))
    old = json.loads(_untyped(plan))
    assert set(old) <= set(value)
    assert value["at"] == NOW.isoformat() and value["cluster"] == plan.cluster
    assert value["result"] is None and value["plan"]["action_id"] == plan.action_id
    assert decode_action_event(encode_action_event(event)) == event


def test_the_same_change_has_the_same_id_and_another_change_another():
    plan = _plan()
    one = ActionEvent(event="action.planned", ts=NOW, state=State.PLANNED, plan=plan)
    again = ActionEvent(event="action.planned", ts=NOW, state=State.PLANNED, plan=plan)
    other = ActionEvent(event="action.executed", ts=NOW, state=State.DONE, plan=plan)
    assert one.id == again.id != other.id


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"{not json", "json"),
        (
            b'{"event": "action.planned", "state": "planned", "at": "2026-12-02T05:00:00+00:00"}',
            "plan",
        ),
        (b'{"kind": "gpu_metrics", "event": "action.planned"}', "kind"),
    ],
)
def test_a_bad_record_is_refused_with_the_reason(raw, words):
    with pytest.raises(SchemaError, match=f"(?i){words}"):
        decode_action_event(raw)


def test_the_outbox_publishes_a_typed_event_keyed_by_the_action():
    bus = InProcessBus()
    plan = _plan()
    out = Outbox(None, "tg-act", "auto", lambda: NOW, bus.producer(), "tg.actions")  # type: ignore[arg-type]
    out.publish(EventType.ACTION_FAILED, plan, State.FAILED)
    consumer = bus.consumer("reader", ["tg.actions"])
    (record,) = consumer.poll(10, 1.0)
    consumer.close()
    event = decode_action_event(record.value)
    assert record.key == plan.action_id.encode()
    assert (event.event, event.state, event.ts) == ("action.failed", State.FAILED, NOW)


def test_the_telemetry_decoder_refuses_an_action_event():
    event = ActionEvent(event="action.planned", ts=NOW, state=State.PLANNED, plan=_plan())
    with pytest.raises(SchemaError, match="action"):
        decode_event(encode_action_event(event))
