"""Actions, the breaker, webhooks and the scheduler through the REST API (real ClickHouse)."""

from __future__ import annotations

import http.server
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from actions.webhooks.signing import HEADER, verify_signature
from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role
from tests.api_fixtures import api_context, populate

pytestmark = pytest.mark.integration


class Receiver(http.server.ThreadingHTTPServer):
    """A loopback webhook endpoint that keeps what it received."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                return

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture(scope="module")
def api(services) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_act_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    populate(store)
    context = api_context(store)
    auth = {r.value: {"Authorization": f"Bearer {context.tokens.create(r.value, r)}"} for r in Role}
    with TestClient(create_app(context)) as client:
        yield client, auth
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


def _pending(client: TestClient, auth: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    response = client.get("/v1/actions", params={"status": "pending"}, headers=auth["viewer"])
    assert response.status_code == 200, response.text
    return response.json()["items"]


def test_risky_steps_wait_for_an_operator_who_approves_and_is_audited(api):
    client, auth = api
    pending = _pending(client, auth)
    assert pending, "approve mode must hold the isolation of the failed GPU's node"
    first = pending[0]
    assert first["risk"] == "high" and first["mode"] == "approve"
    assert first["plan"]["what"] and first["incident_id"].startswith("inc-")
    url = f"/v1/actions/{first['id']}/approve"
    denied = client.post(url, json={"reason": "go"}, headers=auth["viewer"])
    assert denied.status_code == 403
    ok = client.post(url, json={"reason": "node is known bad"}, headers=auth["operator"])
    assert ok.status_code == 200, ok.text
    assert ok.json()["status"] != "pending"
    again = client.post(url, json={"reason": "twice"}, headers=auth["operator"])
    assert again.status_code == 409 and "awaiting approval" in again.json()["detail"]
    trail = client.get(
        "/v1/actions/audit", params={"incident": first["incident_id"]}, headers=auth["viewer"]
    ).json()["items"]
    assert ("approved", "operator") in [(e["event"], e["actor"]) for e in trail]


def test_a_rejected_step_stops_its_ladder(api):
    client, auth = api
    pending = _pending(client, auth)
    if not pending:  # every risky step of the fixture was approved by the test above
        pytest.fail("the fixture's incidents must leave a step awaiting approval")
    target = pending[-1]
    done = client.post(
        f"/v1/actions/{target['id']}/reject", json={"reason": "not now"}, headers=auth["operator"]
    )
    assert done.status_code == 200 and done.json()["status"] == "rejected"
    assert target["id"] not in [a["id"] for a in _pending(client, auth)]


def test_dry_run_shows_the_ladder_without_storing_it(api):
    client, auth = api
    incidents = client.get("/v1/incidents", headers=auth["viewer"]).json()["items"]
    hang = next(i for i in incidents if i["category"] == "hang")
    before = client.get("/v1/actions", params={"limit": 500}, headers=auth["viewer"]).json()
    result = client.post(
        "/v1/actions/dry-run", json={"incident_id": hang["id"]}, headers=auth["viewer"]
    )
    assert result.status_code == 200, result.text
    body = result.json()
    assert body["rule"] and [p["step"] for p in body["plans"]] == list(range(len(body["plans"])))
    after = client.get("/v1/actions", params={"limit": 500}, headers=auth["viewer"]).json()
    assert len(after["items"]) == len(before["items"])
    missing = client.post(
        "/v1/actions/dry-run", json={"incident_id": "inc-nope"}, headers=auth["viewer"]
    )
    assert missing.status_code == 404


def test_breaker_state_and_reset_are_admin_only(api):
    client, auth = api
    state = client.get("/v1/breaker", headers=auth["viewer"]).json()
    assert state["state"] == "closed" and state["limit"] >= 1
    assert state["window_s"] == 3600.0
    denied = client.post("/v1/breaker/reset", json={"reason": "x"}, headers=auth["operator"])
    assert denied.status_code == 403
    reset = client.post("/v1/breaker/reset", json={"reason": "drill"}, headers=auth["admin"])
    assert reset.status_code == 200 and reset.json()["state"] == "closed"


def test_webhooks_are_signed_logged_and_checked_against_the_allowlist(api):
    client, auth = api
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    secret = "s3cret-for-the-test-0123456789"
    try:
        url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        body = {"id": "oncall", "url": url, "secret": secret, "events": ["incident.opened"]}
        created = client.post("/v1/webhooks", json=body, headers=auth["admin"])
        assert created.status_code == 201, created.text
        assert "secret" not in created.json()
        evil = client.post(
            "/v1/webhooks",
            json={**body, "id": "evil", "url": "http://127.0.0.1@evil.example/x"},
            headers=auth["admin"],
        )
        assert evil.status_code == 422 and "user info" in evil.json()["detail"]
        listed = client.get("/v1/webhooks", headers=auth["admin"]).json()
        assert [w["id"] for w in listed] == ["oncall"] and "secret" not in listed[0]
        assert client.get("/v1/webhooks", headers=auth["operator"]).status_code == 403
        sent = client.post("/v1/webhooks/oncall/test", headers=auth["admin"]).json()
        assert sent["status"] == "delivered" and sent["http_status"] == 204
        headers, raw = receiver.received[-1]
        assert verify_signature(secret, headers[HEADER], raw)
        log = client.get("/v1/webhooks/oncall/deliveries", headers=auth["admin"]).json()
        assert [d["delivery_id"] for d in log] == [sent["delivery_id"]]
        again = client.post(
            f"/v1/webhooks/deliveries/{sent['delivery_id']}/redeliver", headers=auth["admin"]
        )
        assert again.status_code == 200 and len(receiver.received) == 2
        gone = client.delete("/v1/webhooks/oncall", headers=auth["admin"])
        assert gone.status_code == 204
        assert client.get("/v1/webhooks", headers=auth["admin"]).json() == []
        assert client.post("/v1/webhooks/oncall/test", headers=auth["admin"]).status_code == 404
    finally:
        receiver.shutdown()


def test_scheduler_state_shows_pools_and_standbys(api):
    client, auth = api
    state = client.get("/v1/scheduler/state", headers=auth["viewer"]).json()
    pools = {p["name"]: p for p in state["pools"]}
    assert set(pools) == {"training", "inference"}
    assert len(pools["training"]["servers"]) == 2 and len(pools["inference"]["servers"]) == 4
    standby = [s["node"] for s in pools["training"]["servers"] if s["state"] == "standby"]
    assert state["standbys"] == standby and len(standby) <= 1  # one standby, maybe handed out
