"""Maintenance windows through the REST API (real ClickHouse): roles, validation, the audit."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from actions.silences import list_windows
from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role
from tests.api_fixtures import api_context

pytestmark = pytest.mark.integration


@pytest.fixture
def api(services) -> Iterator[tuple[TestClient, dict[str, dict[str, str]], ServerStore]]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_sil_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    context = api_context(store)
    auth = {r.value: {"Authorization": f"Bearer {context.tokens.create(r.value, r)}"} for r in Role}
    try:
        with TestClient(create_app(context)) as client:
            yield client, auth, store
    finally:
        store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
        store.close()


def _body(**extra: object) -> dict[str, object]:
    now = datetime.now(UTC)
    return {
        "node": "gpu-01*",
        "starts_at": (now - timedelta(minutes=1)).isoformat(),
        "ends_at": (now + timedelta(hours=2)).isoformat(),
        "reason": "rack 1 firmware upgrade",
        **extra,
    }


def test_operators_create_and_delete_windows_viewers_list_them(api):
    client, auth, store = api
    assert client.post("/v1/silences", json=_body(), headers=auth["viewer"]).status_code == 403
    assert client.post("/v1/silences", json=_body()).status_code == 401
    made = client.post("/v1/silences", json=_body(), headers=auth["operator"])
    assert made.status_code == 201, made.text
    window = made.json()
    assert window["author"] == "operator" and window["node"] == "gpu-01*"
    assert window["id"].startswith("mw-") and not window["deleted"]
    listed = client.get("/v1/silences", headers=auth["viewer"])
    assert [w["id"] for w in listed.json()] == [window["id"]]
    assert [w.id for w in list_windows(store, active_at=datetime.now(UTC))] == [window["id"]]
    url = f"/v1/silences/{window['id']}"
    assert client.delete(url, headers=auth["viewer"]).status_code == 403
    gone = client.delete(url, headers=auth["operator"])
    assert gone.status_code == 200 and gone.json()["deleted_by"] == "operator"
    assert client.delete(url, headers=auth["operator"]).status_code == 404
    assert client.get("/v1/silences", headers=auth["viewer"]).json() == []
    history = client.get("/v1/silences?include_expired=true", headers=auth["viewer"]).json()
    assert [(w["id"], w["deleted"]) for w in history] == [(window["id"], True)]
    trail = store.query_df(
        f"SELECT method, target FROM `{store.database}`.api_audit WHERE path = 'silences'"
    )
    assert sorted(zip(trail["method"], trail["target"], strict=True)) == [
        ("DELETE", window["id"]),
        ("POST", window["id"]),
    ]


def test_bad_windows_are_refused_and_nothing_is_stored(api):
    client, auth, store = api
    now = datetime.now(UTC)
    bad = [
        {k: v for k, v in _body().items() if k != "node"},  # no matcher
        _body(ends_at=(now - timedelta(hours=1)).isoformat()),  # ends before it starts
        _body(starts_at="2026-12-02T04:00:00"),  # no time zone
        _body(node="gpu-1 && reboot"),
        _body(reason=""),
        _body(author="mallory"),  # the author is the caller, never the body
        _body(ends_at="2300-01-01T00:00:00Z"),
    ]
    for body in bad:
        got = client.post("/v1/silences", json=body, headers=auth["operator"])
        assert got.status_code == 422, (body, got.text)
    assert list_windows(store, include_deleted=True) == []
    assert client.delete("/v1/silences/nope", headers=auth["operator"]).status_code == 422
