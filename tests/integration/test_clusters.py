"""Two clusters with the same node and job names through real Kafka, ClickHouse and the API.

The default cluster's agents are old (their events name no cluster); the west cluster's set
TG_CLUSTER. Both have nodes n1 and n2 and a job-1, and the same Xid 79 on n1 GPU at the same
time: two incidents, and every list of the API filters by cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from actions import store as action_store
from actions.engine import ActionEngine, EngineConfig
from actions.executors.local import LocalCluster, local_executors
from actions.model import ActionKind, Mode, State
from actions.policy import Match, Policy, Rule, Step
from actions.registry import ActionRegistry
from actions.views import isolations
from analytics.columns import ColumnBatch
from analytics.migrations import MIGRATIONS, migrate
from analytics.store import EmbeddedStore, ServerStore, Store
from analytics.tables import CLUSTER_MIGRATION, GPU_METRICS, cluster_name
from analytics.writer import ClickHouseWriter
from api.app import create_app
from api.auth import Role, TokenBook
from api.context import ApiContext
from diagnosis.incident_store import load_incident
from diagnosis.incidents import Incident
from diagnosis.model import Category
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.kafka_bus import KafkaBus
from ingest.schema import DEFAULT_CLUSTER, EventBase
from ingest.sink import Sink, SinkSettings
from tests.builders import make_gpu_metrics, make_log, make_step, make_topology
from tests.integration.conftest import Services, wait_for

pytestmark = pytest.mark.integration
WEST = "west"


def _telemetry() -> list[EventBase]:
    """One cluster's telemetry: a job on n1 and n2, GPU scrapes, an Xid 79 on n1."""
    return [
        make_topology(tp=2, pp=2, dp=4),
        *(make_gpu_metrics(node=n, seconds=s) for n in ("n1", "n2") for s in range(0, 30, 5)),
        *(make_step(step=s) for s in range(1, 20)),
        make_log(node="n1", seconds=12),
    ]


def _through_pipeline(bus: KafkaBus, store: Store) -> None:
    """Send both clusters' telemetry; run the sink and the diagnosis worker over it."""
    sent = [*_telemetry(), *(e.in_cluster(WEST) for e in _telemetry())]
    producer = bus.producer()
    for event in sent:
        producer.send(event)
    producer.flush()
    sink = Sink(
        bus.consumer(f"{bus.topics.prefix}sink", bus.topics.telemetry()),
        ClickHouseWriter(store),
        SinkSettings(batch_seconds=0.3),
    )

    def stored() -> bool:
        sink.step()
        return sink.stats.events_written + sink.stats.duplicates >= len(sent)

    wait_for(stored, 90, "both clusters' telemetry stored", step_s=0)
    assert sink.stats.duplicates == 0  # the same node, time and GPU in two clusters: two events
    sink.consumer.close()
    worker = DiagnosisWorker(
        bus.consumer(f"{bus.topics.prefix}diagnose", bus.topics.telemetry()),
        bus.producer(),
        store,
        bus.topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.2, restore_timeout_s=1),
    )
    wait_for(
        lambda: worker.step() >= 0 and worker.stats.consumed >= len(sent), 120, "diagnosis read"
    )
    worker.drain()
    worker.publish(force=True)
    worker.consumer.close()


@pytest.fixture
def api(server_store: Store, kafka_bus: KafkaBus) -> Iterator[tuple[TestClient, dict[str, str]]]:
    _through_pipeline(kafka_bus, server_store)
    context = ApiContext(store=server_store, tokens=TokenBook(server_store), cache_s=0.5)
    token = context.tokens.create("viewer-user", Role.VIEWER)
    with TestClient(create_app(context)) as client:
        yield client, {"Authorization": f"Bearer {token}"}


def test_same_names_in_two_clusters_are_separate_incidents_nodes_and_jobs(api):
    client, auth = api

    def get(path: str) -> object:
        response = client.get(path, headers=auth)
        assert response.status_code == 200, response.text
        return response.json()

    incidents = get("/v1/incidents")["items"]
    gpu_incidents = [i for i in incidents if i["category"] == Category.GPU_HARDWARE.value]
    assert sorted(i["cluster"] for i in gpu_incidents) == [DEFAULT_CLUSTER, WEST]
    assert len({i["id"] for i in gpu_incidents}) == 2
    assert all(i["suspects"][0]["node"] == "n1" for i in gpu_incidents)
    for cluster in (DEFAULT_CLUSTER, WEST):
        mine = get(f"/v1/incidents?cluster={cluster}")["items"]
        assert mine and {i["cluster"] for i in mine} == {cluster}
        assert len(mine) == len([i for i in incidents if i["cluster"] == cluster])

        gpus = get(f"/v1/gpus?cluster={cluster}")["items"]
        assert len(gpus) == 16 and {g["cluster"] for g in gpus} == {cluster}
        suspect = {(g["node"], g["gpu"]) for g in gpus if g["state"] != "healthy"}
        assert suspect and {n for n, _ in suspect} == {"n1"}

        nodes = get(f"/v1/nodes?cluster={cluster}")["items"]
        assert [(n["node"], n["cluster"]) for n in nodes] == [("n1", cluster), ("n2", cluster)]

        (job,) = get(f"/v1/jobs?cluster={cluster}")["items"]
        assert (job["job_id"], job["cluster"], job["last_step"]) == ("job-1", cluster, 19)
        assert get(f"/v1/jobs/job-1?cluster={cluster}")["job"]["cluster"] == cluster

        detail = get(f"/v1/nodes/n1?cluster={cluster}")
        assert detail["node"]["cluster"] == cluster and len(detail["gpus"]) == 8

        (group,) = get(f"/v1/fleet/groups?cluster={cluster}")["groups"]
        assert (group["group"], group["gpus"], group["nodes"]) == ("job-1", 16, 2)
        assert group["states"]["suspect"] >= 1
        assert get(f"/v1/actions?cluster={cluster}")["items"] == []

    assert len(get("/v1/gpus")["items"]) == 32
    assert len(get("/v1/jobs")["items"]) == 2
    clusters = {c["cluster"]: c for c in get("/v1/clusters")["items"]}
    assert set(clusters) == {DEFAULT_CLUSTER, WEST}
    assert all(c["nodes"] == 2 and c["gpus"] == 16 for c in clusters.values())
    ambiguous = client.get("/v1/nodes/n1", headers=auth)
    assert ambiguous.status_code == 409 and WEST in ambiguous.text
    assert client.get("/v1/incidents?cluster=no/such", headers=auth).status_code == 422
    assert get("/v1/incidents?cluster=east")["items"] == []


def _old_store(kind: str, services: Services, tmp_path: Path, unique: str) -> Store:
    if kind == "server":
        return ServerStore(services.clickhouse_host, services.clickhouse_port, f"it_old_{unique}")
    return EmbeddedStore(str(tmp_path / "chdb-old"), f"it_old_{unique}")


@pytest.mark.parametrize("kind", ["server", "embedded"])
def test_the_cluster_migration_keeps_old_rows_in_the_default_cluster(
    kind, services, tmp_path, unique
):
    store = _old_store(kind, services, tmp_path, unique)
    before = tuple(m for m in MIGRATIONS if m.version < CLUSTER_MIGRATION)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("analytics.migrations.MIGRATIONS", before)
            assert migrate(store) == [m.version for m in before]
        types = {c.name: c.type for c in GPU_METRICS.columns}
        old, west = ColumnBatch(), ColumnBatch()
        scrape = make_gpu_metrics(node="n1")
        old.add_event(scrape, ("t", 0, 1))
        rows = {k: v for k, v in old.columns(GPU_METRICS).items() if k != "cluster"}
        store.insert(GPU_METRICS.name, rows, types)  # as a build from before clusters wrote it
        assert migrate(store) == [m.version for m in MIGRATIONS if m.version >= CLUSTER_MIGRATION]
        west.add_event(scrape.in_cluster(WEST), ("t", 0, 1))  # same node, GPU, time and offset
        store.insert(GPU_METRICS.name, west.columns(GPU_METRICS), types)
        store.command(f"OPTIMIZE TABLE `{store.database}`.gpu_metrics FINAL")
        frame = store.query_df(
            f"SELECT cluster, count() AS n FROM `{store.database}`.gpu_metrics "
            "WHERE node = 'n1' AND gpu = 0 GROUP BY cluster ORDER BY cluster"
        )
        found = [(cluster_name(c), int(n)) for c, n in frame.itertuples(index=False)]
        assert found == [(DEFAULT_CLUSTER, 1), (WEST, 1)]
    finally:
        store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
        store.close()


def _isolating_engine(store: Store, incident: Incident) -> ActionEngine:
    """An engine that isolates a GPU incident's node on the demo backend, at incident time."""
    policy = Policy(
        version=1,
        rules=[
            Rule(
                name="isolate",
                match=Match(categories=[Category.GPU_HARDWARE]),
                ladder=[Step(kind=ActionKind.ISOLATE_NODE)],
            )
        ],
    )
    return ActionEngine(
        store,
        ActionRegistry(local_executors(LocalCluster())),
        policy,
        EngineConfig(mode=Mode.AUTO),
        clock=lambda: incident.updated_at or incident.detected_at,
    )


def test_an_isolation_is_in_its_incidents_cluster_only(api, server_store):
    client, auth = api

    def get(path: str) -> Any:
        response = client.get(path, headers=auth)
        assert response.status_code == 200, response.text
        return response.json()

    def incident_of(cluster: str) -> Incident:
        (found,) = [
            i
            for i in get(f"/v1/incidents?cluster={cluster}")["items"]
            if i["category"] == Category.GPU_HARDWARE.value
        ]
        return load_incident(server_store, found["id"])

    west = incident_of(WEST)
    (action,) = _isolating_engine(server_store, west).handle(west)
    assert (action.state, action.plan.target.node, action.plan.cluster) == (State.DONE, "n1", WEST)

    gpus = get(f"/v1/gpus?cluster={WEST}")["items"]
    assert {(g["node"], g["gpu"]) for g in gpus if g["state"] == "isolated"} == {
        ("n1", gpu) for gpu in range(8)
    }
    default = get(f"/v1/gpus?cluster={DEFAULT_CLUSTER}")["items"]
    assert len(default) == 16 and not [g for g in default if g["state"] == "isolated"]
    assert {g["state"] for g in default if g["node"] == "n1"} >= {"suspect"}
    nodes = {n["node"]: n["state"] for n in get(f"/v1/nodes?cluster={WEST}")["items"]}
    assert nodes["n1"] == "isolated" and nodes["n2"] != "isolated"
    nodes = {n["node"]: n["state"] for n in get(f"/v1/nodes?cluster={DEFAULT_CLUSTER}")["items"]}
    assert "isolated" not in nodes.values()
    (group,) = get(f"/v1/fleet/groups?cluster={WEST}")["groups"]
    assert group["states"]["isolated"] == 8
    (group,) = get(f"/v1/fleet/groups?cluster={DEFAULT_CLUSTER}")["groups"]
    assert group["states"]["isolated"] == 0
    (listed,) = get(f"/v1/actions?cluster={WEST}")["items"]
    assert listed["cluster"] == WEST and listed["status"] == "done"
    assert get(f"/v1/actions?cluster={DEFAULT_CLUSTER}")["items"] == []
    assert isolations(server_store) == {(WEST, "n1"): ActionKind.ISOLATE_NODE.value}

    # the same node name isolated in the default cluster too: two nodes for the breaker
    default_incident = incident_of(DEFAULT_CLUSTER)
    since = west.detected_at - timedelta(hours=1)
    assert action_store.isolated_since(server_store, since) == 1
    (other,) = _isolating_engine(server_store, default_incident).handle(default_incident)
    assert (other.state, other.plan.cluster) == (State.DONE, DEFAULT_CLUSTER)
    assert action_store.isolated_since(server_store, since) == 2
    assert set(isolations(server_store)) == {(WEST, "n1"), (DEFAULT_CLUSTER, "n1")}
