"""The scheduler's live state stored in ClickHouse and served by an API in another process."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import Role, TokenBook
from api.context import ApiContext
from scheduler.service import Scheduler
from scheduler.state_store import SnapshotPublisher, latest_snapshot

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def rows(store) -> int:
    frame = store.query_df(f"SELECT count() AS n FROM `{store.database}`.scheduler_snapshots")
    return int(frame["n"].iloc[0])


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_changes_are_stored_throttled_and_read_back(store_kind, request):
    server_store = request.getfixturevalue(store_kind)
    clock = Clock()
    publisher = SnapshotPublisher(server_store, source="sched-a", interval_s=5.0, clock=clock)
    scheduler = Scheduler(training_servers=2, inference_servers=3, standbys=1)
    scheduler.on_change = publisher.changed
    assert latest_snapshot(server_store) is None
    scheduler.loan(2)  # first change: written at once
    assert rows(server_store) == 1
    assert scheduler.place("job-1", 4) == ["trn-00000"]  # inside the interval: held back
    assert rows(server_store) == 1
    stored = latest_snapshot(server_store, "sched-a")
    assert stored is not None and stored.loans == ["inf-00002", "inf-00003"]
    assert stored.pools[0].servers[0].used == 0 and stored.as_of is not None
    clock.now = 6.0
    assert publisher.flush()  # the held-back change
    assert not publisher.flush()  # nothing new
    stored = latest_snapshot(server_store, "sched-a")
    assert stored is not None and stored.pools[0].servers[0].jobs == {"job-1": 4}
    assert scheduler.place("job-2", 16) is None  # queued; interval passed: written at once
    clock.now = 12.0
    assert rows(server_store) == 2
    scheduler.place("job-3", 32)
    assert rows(server_store) == 3
    stored = latest_snapshot(server_store)
    assert stored is not None
    assert [q.job_id for q in stored.queue] == ["job-2", "job-3"]
    assert stored.model_dump(exclude={"as_of"}) == scheduler.snapshot().model_dump(
        exclude={"as_of"}
    )


def test_api_without_a_scheduler_serves_the_latest_stored_state(server_store):
    publisher = SnapshotPublisher(server_store, source="sched-b", interval_s=0.0)
    scheduler = Scheduler(training_servers=2, inference_servers=2, standbys=1)
    scheduler.on_change = publisher.changed
    context = ApiContext(store=server_store, tokens=TokenBook(server_store), cache_s=0.0)
    token = context.tokens.create("viewer", Role.VIEWER)
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(context)) as client:
        empty = client.get("/v1/scheduler/state", headers=headers)
        assert empty.status_code == 503
        scheduler.request_replacement("job-9", "trn-00000", 8)
        state = client.get("/v1/scheduler/state", headers=headers)
        assert state.status_code == 200, state.text
        body = state.json()
        assert body["standbys"] == [] and body["as_of"] is not None
        servers = {s["node"]: s for s in body["pools"][0]["servers"]}
        assert servers["trn-00001"]["jobs"] == {"job-9": 8}


def _settings(tmp_path, inventory: dict | None):
    from trainguard.settings import ActSettings

    path = None
    if inventory is not None:
        path = tmp_path / "inventory.json"
        path.write_text(json.dumps(inventory))
    return ActSettings(capacity="lyra", inventory=path, executor="local")


def test_the_engines_scheduler_resumes_from_its_stored_state_after_a_restart(
    server_store, tmp_path
):
    from trainguard.act_cli import SCHEDULER_SOURCE, lyra_capacity

    inventory = {
        "training": ["gpu-a01", "gpu-a02"],
        "standby": ["gpu-s01", "gpu-s02"],
        "inference": ["inf-b01"],
    }
    first = lyra_capacity(_settings(tmp_path, inventory), server_store)
    stored = latest_snapshot(server_store, SCHEDULER_SOURCE)
    assert stored is not None and stored.standbys == ["gpu-s01", "gpu-s02"]
    got = first.request_replacement("job-7", "gpu-a02", 8)
    assert getattr(got, "node", None) == "gpu-s01"
    # a restart (a new process): the inventory is not read again, the stored state is
    again = lyra_capacity(_settings(tmp_path, {"training": ["other"]}), server_store)
    assert again.request_replacement("job-7", "gpu-a02", 8) == got  # the same grant
    assert getattr(again.request_replacement("job-9", "gpu-a01", 8), "node", None) == "gpu-s02"
    refused = again.request_replacement("job-10", "gpu-s01", 8)
    assert isinstance(refused, str) and "no warm standby" in refused
    stored = latest_snapshot(server_store, SCHEDULER_SOURCE)
    assert stored is not None and stored.standbys == []
    training = {s.node: s.jobs for s in stored.pools[0].servers}
    assert training["gpu-s01"] == {"job-7": 8} and training["gpu-s02"] == {"job-9": 8}
    assert [(r.job_id, r.node) for r in stored.replacements] == [
        ("job-7", "gpu-s01"),
        ("job-9", "gpu-s02"),
    ]


def test_lyra_capacity_without_state_or_inventory_is_a_clear_error(server_store, tmp_path):
    from trainguard.act_cli import lyra_capacity

    with pytest.raises(ValueError, match="needs TG_ACT_INVENTORY"):
        lyra_capacity(_settings(tmp_path, None), server_store)
    with pytest.raises(ValueError, match="servers listed twice: n1"):
        lyra_capacity(_settings(tmp_path, {"training": ["n1"], "standby": ["n1"]}), server_store)
    with pytest.raises(ValueError, match="spare"):
        lyra_capacity(_settings(tmp_path, {"training": ["n1"], "spare": ["n2"]}), server_store)
    assert latest_snapshot(server_store) is None  # nothing stored from a bad inventory
