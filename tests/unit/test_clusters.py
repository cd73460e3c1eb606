"""Several clusters: the wire default, ids and keys per cluster, the store's column."""

from __future__ import annotations

import orjson
import pytest

from analytics.columns import ColumnBatch
from analytics.incident_tables import INCIDENTS
from analytics.tables import (
    CLUSTER_MIGRATION,
    GPU_METRICS,
    Features,
    cluster_filter,
    cluster_name,
    stored_cluster,
)
from diagnosis.clusters import ClusterEngines
from diagnosis.engine import DiagnosisEngine
from diagnosis.incidents import Correlator, incident_id
from ingest.agent.settings import AgentSettings
from ingest.schema import (
    DEFAULT_CLUSTER,
    SchemaError,
    decode_event,
    encode_event,
    event_id,
)
from tests.builders import at, make_gpu_metrics, make_log
from trainguard.settings import ClusterSettings

OLD = 18, 16, 1


def test_an_event_without_cluster_decodes_in_the_default_cluster_with_its_old_id():
    event = make_log()
    raw = orjson.loads(encode_event(event))
    assert "cluster" not in raw  # the default cluster's bytes are those from before clusters
    raw.pop("id")
    decoded = decode_event(orjson.dumps(raw))
    assert decoded.cluster == DEFAULT_CLUSTER
    assert decoded.id == event_id("log", *decoded.identity())


def test_a_named_cluster_travels_and_changes_the_id():
    event = make_log().model_copy(update={"cluster": "west", "id": ""})
    placed = decode_event(encode_event(make_log().in_cluster("west")))
    assert placed.cluster == "west"
    assert b'"cluster":"west"' in encode_event(placed)
    assert placed.id != make_log().id
    assert decode_event(encode_event(placed)) == placed
    assert event.cluster == "west"


def test_in_cluster_fills_only_a_missing_cluster():
    plain = make_log()
    west = plain.in_cluster("west")
    assert (west.cluster, west.id) == ("west", event_id("log", "west", *plain.identity()))
    assert west.in_cluster("east") is west  # named: kept
    assert plain.in_cluster(DEFAULT_CLUSTER) is plain
    sent = decode_event(encode_event(west))
    assert sent.in_cluster("east").cluster == "west"


def test_an_id_set_by_the_sender_is_kept():
    raw = orjson.loads(encode_event(make_log()))
    raw["id"] = "abc123"
    assert decode_event(orjson.dumps(raw)).in_cluster("west").id == "abc123"


@pytest.mark.parametrize("name", ["", "a/b", "-x", "x" * 64, "a b"])
def test_a_bad_cluster_name_is_refused(name):
    raw = orjson.loads(encode_event(make_log()))
    raw["cluster"] = name
    with pytest.raises(SchemaError, match="cluster"):
        decode_event(orjson.dumps(raw))


def test_settings_read_tg_cluster(monkeypatch):
    assert ClusterSettings().cluster == DEFAULT_CLUSTER
    monkeypatch.setenv("TG_CLUSTER", "west-2")
    assert ClusterSettings().cluster == "west-2"
    assert AgentSettings().cluster == "west-2"
    monkeypatch.setenv("TG_CLUSTER", "not/valid")
    with pytest.raises(ValueError, match="cluster"):
        ClusterSettings()


def test_the_default_cluster_is_stored_as_the_empty_value_of_old_rows():
    assert stored_cluster(DEFAULT_CLUSTER) == ""
    assert cluster_name("") == DEFAULT_CLUSTER
    assert cluster_name(stored_cluster("west")) == "west"
    assert cluster_filter(None) == ("1", {})
    assert cluster_filter(DEFAULT_CLUSTER)[1] == {"cluster": ""}


def test_rows_carry_the_cluster_last():
    batch = ColumnBatch()
    batch.add_event(make_gpu_metrics(node="n1").in_cluster("west"), ("t", 0, 1))
    batch.add_event(make_gpu_metrics(node="n1"), ("t", 0, 2))
    cols = batch.columns(GPU_METRICS)
    assert set(cols["cluster"]) == {"west", ""}
    assert GPU_METRICS.order_by[-1] == "cluster"


def test_first_migrations_create_tables_without_the_cluster_and_the_later_one_adds_it():
    features = Features.for_version(OLD)
    first = GPU_METRICS.ddl("db", features, as_of=1)
    assert "cluster" not in first
    (alter,) = GPU_METRICS.add_columns("db", features, CLUSTER_MIGRATION)
    assert alter.startswith("ALTER TABLE `db`.`gpu_metrics` ADD COLUMN `cluster` String")
    assert alter.endswith("MODIFY ORDER BY (node, gpu, ts, ts_us, cluster)")
    (incidents,) = INCIDENTS.add_columns("db", features, CLUSTER_MIGRATION)
    assert "MODIFY ORDER BY" not in incidents  # the id tells clusters apart
    assert "cluster" in GPU_METRICS.ddl("db", features)


def test_the_same_root_cause_in_two_clusters_is_two_incidents():
    finding_line = make_log()
    default, west = DiagnosisEngine(), DiagnosisEngine(cluster="west")
    default.feed(finding_line)
    west.feed(finding_line.in_cluster("west"))
    (a,), (b,) = default.finish(), west.finish()
    assert (a.cluster, b.cluster) == (DEFAULT_CLUSTER, "west")
    assert a.id != b.id
    (key,) = default.correlator._by_key  # ("gpu", "n1", "0000:61:00"): no cluster in it
    assert a.id == incident_id(key, a.detected_at)  # the default cluster's ids are unchanged


def test_cluster_engines_keep_each_clusters_state_apart():
    engines = ClusterEngines(home=DEFAULT_CLUSTER)
    for cluster in ("east", "west"):
        engines.feed(make_log(node="n1").in_cluster(cluster))
    updates = engines.drain_updates()
    assert sorted(i.cluster for i in updates) == ["east", "west"]
    assert len({i.id for i in updates}) == 2
    states = engines.states(i.id for i in updates)
    assert sorted(s.cluster for s in states) == ["east", "west"]
    again = ClusterEngines(home=DEFAULT_CLUSTER)
    again.restore_states(states, closed={updates[0].id})
    assert set(again.by_cluster) == {"east", "west"}
    # a recurrence attaches within its own cluster only
    again.feed(make_log(node="n1", seconds=10).in_cluster("west"))
    (changed,) = again.drain_updates()
    assert changed.cluster == "west"


def test_correlator_ids_depend_on_the_cluster():
    key = ("gpu", "n1", "3")
    assert incident_id(key, at(0)) != incident_id(key, at(0), "west")
    assert Correlator(cluster="west").cluster == "west"
