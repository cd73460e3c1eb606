"""Actions carry their incident's cluster: plan model, stored rows, schema and actions topic."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from actions import store as db
from actions.executors.local import LocalCluster, LocalDrain
from actions.model import ActionKind, ActionPlan, Mode, State, Target
from actions.outbox import Outbox
from actions.registry import ActionRequest
from actions.webhooks.formats import EventType
from analytics.action_tables import ACTION_CLUSTER_MIGRATION, ACTION_STATE
from analytics.migrations import MIGRATIONS
from analytics.tables import Features
from ingest.bus import InProcessBus
from ingest.schema import DEFAULT_CLUSTER
from tests.actions_builders import make_incident

WEST = "west"
NOW = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)


def _plan(cluster: str = DEFAULT_CLUSTER) -> ActionPlan:
    incident = make_incident(node="n1").model_copy(update={"cluster": cluster})
    request = ActionRequest(
        incident=incident,
        kind=ActionKind.ISOLATE_NODE,
        target=Target(node="n1"),
        step=0,
        rule="isolate",
    )
    return LocalDrain(LocalCluster()).plan(request)


class RecordingStore:
    """Keeps the rows inserted (the only store call save_states makes)."""

    database = "db"

    def __init__(self) -> None:
        self.inserts: list[tuple[str, dict[str, list[Any]]]] = []

    def insert(self, table: str, columns: dict[str, list[Any]], types: dict[str, str]) -> None:
        assert set(columns) <= set(types)
        self.inserts.append((table, columns))


def test_a_plan_carries_its_incidents_cluster():
    assert _plan(WEST).cluster == WEST
    assert _plan().cluster == DEFAULT_CLUSTER


def test_a_plan_round_trips_with_its_cluster():
    plan = _plan(WEST)
    again = ActionPlan.model_validate_json(plan.model_dump_json())
    assert again == plan and again.cluster == WEST


def test_a_plan_stored_before_plans_carried_a_cluster_reads_as_the_default_one():
    plan = _plan(WEST)
    stored = json.loads(plan.model_dump_json())
    del stored["cluster"]  # as a build from before this field wrote it
    old = ActionPlan.model_validate(stored)
    assert old.cluster == DEFAULT_CLUSTER
    assert old == plan.model_copy(update={"cluster": DEFAULT_CLUSTER})


def test_a_plan_refuses_a_cluster_name_the_wire_schema_refuses():
    stored = json.loads(_plan().model_dump_json())
    with pytest.raises(ValidationError, match="cluster"):
        ActionPlan.model_validate({**stored, "cluster": "no/such"})


def test_state_rows_store_the_default_cluster_as_empty_like_the_other_tables():
    store = RecordingStore()
    db.save_states(store, [_plan(), _plan(WEST)], State.PLANNED, NOW)  # type: ignore[arg-type]
    ((table, columns),) = store.inserts
    assert table == ACTION_STATE.name
    assert columns["cluster"] == ["", WEST]


def test_the_cluster_column_comes_with_its_own_migration_and_keeps_the_key():
    old = Features.for_version((18, 16, 1))
    assert "`cluster`" not in ACTION_STATE.ddl("db", old, as_of=ACTION_CLUSTER_MIGRATION - 1)
    assert "`cluster` String" in ACTION_STATE.ddl("db", old, as_of=ACTION_CLUSTER_MIGRATION)
    (migration,) = [m for m in MIGRATIONS if m.version == ACTION_CLUSTER_MIGRATION]
    assert migration.statements("db", old, None) == [
        "ALTER TABLE `db`.`action_state` ADD COLUMN `cluster` String"
    ]  # no MODIFY ORDER BY: rows from before it read '' (the default cluster)
    assert MIGRATIONS[-1].version == ACTION_CLUSTER_MIGRATION


def test_the_actions_topic_and_webhooks_name_the_cluster():
    bus = InProcessBus()
    out = Outbox(
        RecordingStore(),  # type: ignore[arg-type]
        "tg-act",
        Mode.AUTO,
        lambda: NOW,
        bus.producer(),
        "tg.actions",
    )
    out.publish(EventType.ACTION_PLANNED, _plan(WEST), State.PLANNED)
    consumer = bus.consumer("reader", ["tg.actions"])
    (record,) = consumer.poll(10, 1.0)
    consumer.close()
    value = json.loads(record.value)
    assert value["cluster"] == WEST and value["plan"]["cluster"] == WEST
