"""The REST API over a real ClickHouse server filled by the sink and the diagnosis worker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role, TokenBook
from tests.api_fixtures import api_context, populate

pytestmark = pytest.mark.integration


class Api:
    """A test client with one token per role."""

    def __init__(self, client: TestClient, tokens: dict[str, str], truth: list[dict[str, Any]]):
        self.client = client
        self.tokens = tokens
        self.truth = truth

    def get(self, path: str, role: str = "viewer", **params: Any) -> Any:
        return self.client.get(path, params=params, headers=self._auth(role))

    def post(self, path: str, body: dict[str, Any], role: str = "operator") -> Any:
        return self.client.post(path, json=body, headers=self._auth(role))

    def _auth(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}


@pytest.fixture(scope="module")
def api(services) -> Iterator[Api]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_api_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    truth = populate(store)
    context = api_context(store)
    tokens = {r.value: context.tokens.create(f"{r.value}-user", r) for r in Role}
    with TestClient(create_app(context)) as client:
        yield Api(client, tokens, truth)
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


def _incidents(api: Api, **params: Any) -> list[dict[str, Any]]:
    response = api.get("/v1/incidents", **params)
    assert response.status_code == 200, response.text
    return response.json()["items"]


def _by(api: Api, category: str) -> dict[str, Any]:
    (one,) = [i for i in _incidents(api) if i["category"] == category]
    return one


def test_every_route_needs_a_token_and_errors_are_problem_details(api):
    for path in ("/v1/incidents", "/v1/jobs", "/v1/gpus", "/v1/nodes"):
        bare = api.client.get(path)
        assert bare.status_code == 401
        assert bare.headers["content-type"] == "application/problem+json"
        assert bare.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in bare.json()["detail"]
        wrong = api.client.get(path, headers={"Authorization": "Bearer tg_not-a-real-token"})
        assert wrong.status_code == 401 and wrong.json()["detail"] == "unknown or revoked token"


def test_roles_gate_the_writes_and_revocation_takes_effect(api, services):
    hang = _by(api, "hang")
    denied = api.post(f"/v1/incidents/{hang['id']}/acknowledge", {}, role="viewer")
    assert denied.status_code == 403 and "needs the operator role" in denied.json()["detail"]
    book: TokenBook = api.client.app.state.context.tokens  # type: ignore[attr-defined]
    temp = book.create("temp", Role.ADMIN)
    assert (
        api.client.get("/v1/jobs", headers={"Authorization": f"Bearer {temp}"}).status_code == 200
    )
    assert book.revoke("temp") == 1
    again = api.client.get("/v1/jobs", headers={"Authorization": f"Bearer {temp}"})
    assert again.status_code == 401
    assert {t.name for t in book.tokens() if not t.revoked} >= {"viewer-user", "operator-user"}


def test_incidents_name_the_injected_faults(api):
    truth = {f["kind"]: f["component"] for f in api.truth}
    gpu = _by(api, "gpu.hardware")
    top = gpu["suspects"][0]
    assert (top["node"], top["gpu"]) == (truth["xid79"]["node"], truth["xid79"]["gpu"])
    assert gpu["blame"] == "infrastructure" and gpu["severity"] == "critical"
    hang = _by(api, "hang")
    assert hang["job"] == "j2" and hang["suspects"][0]["rank"] == truth["hang"]["rank"]


def test_incident_detail_has_timeline_and_the_culprits_parallel_groups(api):
    hang = _by(api, "hang")
    ack = api.post(f"/v1/incidents/{hang['id']}/acknowledge", {"note": "looking"})
    assert ack.status_code == 200, ack.text
    detail = api.get(f"/v1/incidents/{hang['id']}").json()
    assert detail["acknowledged_by"] == ["operator-user"]
    events = [e["event"] for e in detail["timeline"]]
    assert events[0] == "detected" and "acknowledged" in events
    hood = detail["neighbourhood"]
    assert hood["rank"] == hang["suspects"][0]["rank"]
    kinds = {c["kind"] for c in hood["communicators"]}
    assert {"tp", "dp"} <= kinds
    for comm in hood["communicators"]:
        assert hood["rank"] in [m["rank"] for m in comm["members"]]
    assert api.get("/v1/incidents/inc-doesnotexist").status_code == 404


def test_lifecycle_through_the_api_and_status_filter(api):
    gpu = _by(api, "gpu.hardware")
    empty = api.post(f"/v1/incidents/{gpu['id']}/resolve", {"reason": ""})
    assert empty.status_code == 422 and "reason" in empty.json()["detail"]
    done = api.post(f"/v1/incidents/{gpu['id']}/resolve", {"reason": "GPU replaced"})
    assert done.status_code == 200 and done.json()["status"] == "resolved"
    twice = api.post(f"/v1/incidents/{gpu['id']}/false-alarm", {"reason": "oops"})
    assert (
        twice.status_code == 409 and "resolved cannot become false_alarm" in twice.json()["detail"]
    )
    assert [i["id"] for i in _incidents(api, status="resolved")] == [gpu["id"]]
    assert gpu["id"] not in [i["id"] for i in _incidents(api, status="open")]
    timeline = api.get(f"/v1/incidents/{gpu['id']}").json()["timeline"]
    assert [(e["event"], e["actor"]) for e in timeline if e["event"] == "resolved"] == [
        ("resolved", "operator-user")
    ]


def test_cursor_pagination_walks_every_incident_once(api):
    everything = [i["id"] for i in _incidents(api, limit=500)]
    assert len(everything) >= 2
    seen, cursor = [], None
    while True:
        params = {"limit": 1} | ({"cursor": cursor} if cursor else {})
        page = api.get("/v1/incidents", **params).json()
        seen += [i["id"] for i in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == everything
    bad = api.get("/v1/incidents", cursor="not-a-cursor")
    assert bad.status_code == 400 and "malformed cursor" in bad.json()["detail"]


def test_filters_reject_bad_values_with_a_clear_message(api):
    assert [i["job"] for i in _incidents(api, job="j2")] == ["j2"]
    assert _incidents(api, severity="critical")[0]["severity"] == "critical"
    for params in ({"severity": "apocalyptic"}, {"limit": 0}, {"since": "yesterday"}):
        response = api.get("/v1/incidents", **params)
        assert response.status_code == 422, params
        assert response.headers["content-type"] == "application/problem+json"


def test_jobs_show_progress_ettr_and_incidents(api):
    jobs = {j["job_id"]: j for j in api.get("/v1/jobs").json()["items"]}
    assert set(jobs) == {"j1", "j2"}
    for job in jobs.values():
        assert job["world_size"] == 32 and job["tp"] == 8 and job["nodes"] == 4
        assert 0 < job["ettr"] <= 1
    assert jobs["j2"]["open_incidents"] == 1  # its hang (the GPU incident of j1 was resolved)
    # j2 hung at 90 s of 180 and j1 lost a GPU at 60 s: neither trained the whole time
    assert jobs["j2"]["ettr"] < 0.9
    detail = api.get("/v1/jobs/j2").json()
    assert detail["communicators"]["tp"] == 4 and len(detail["nodes"]) == 4
    steps = [s["step"] for s in detail["steps"]]
    assert steps == sorted(steps) and len(steps) > 10
    assert [i["category"] for i in detail["incidents"]] == ["hang"]
    assert api.get("/v1/jobs/nope").status_code == 404


def test_gpu_and_node_health(api):
    truth = {f["kind"]: f["component"] for f in api.truth}["xid79"]
    response = api.get("/v1/gpus", limit=5000)
    assert response.status_code == 200, response.text
    gpus = response.json()["items"]
    assert len(gpus) == 64
    lost = [(g["node"], g["gpu"]) for g in gpus if g["state"] == "lost"]
    assert lost == [(truth["node"], truth["gpu"])]
    page = api.get("/v1/gpus", limit=10).json()
    nxt = api.get("/v1/gpus", limit=10, cursor=page["next_cursor"]).json()
    assert [(g["node"], g["gpu"]) for g in page["items"] + nxt["items"]] == [
        (g["node"], g["gpu"]) for g in gpus[:20]
    ]
    nodes = {n["node"]: n for n in api.get("/v1/nodes").json()["items"]}
    assert nodes[truth["node"]]["state"] == "lost" and nodes[truth["node"]]["gpus_unhealthy"] == 1
    detail = api.get(f"/v1/nodes/{truth['node']}", minutes=5).json()
    assert any(": 79," in x["line"] for x in detail["xids"])
    assert {m["gpu"] for m in detail["metrics"]} <= set(range(8)) and detail["metrics"]
    assert api.get("/v1/nodes/node-9999").status_code == 404
    assert api.get("/v1/gpus", state="broken").status_code == 422


def test_health_readiness_and_metrics(api):
    assert api.client.get("/healthz").json() == {"status": "ok"}
    ready = api.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {"clickhouse": "ok"}
    text = api.client.get("/metrics").text
    assert 'trainguard_api_requests_total{route="/v1/incidents",status="200"}' in text
    schema = api.client.get("/openapi.json").json()
    assert {"/v1/incidents", "/v1/incidents/{incident_id}/resolve", "/v1/gpus"} <= set(
        schema["paths"]
    )


def test_failure_risk_from_prediction_reaches_gpu_health(api):
    import pandas as pd

    from prediction.risk import write_risk

    ctx = api.client.app.state.context  # type: ignore[attr-defined]
    frame = pd.DataFrame(
        [
            {
                "ts": 1_800_000_000,
                "node": "node-0003",
                "gpu": 4,
                "uuid": "GPU-x",
                "horizon_h": 48,
                "risk": 0.93,
                "alert": 1,
                "model": "cascade",
                "reason": "SBE trend",
            },
            {
                "ts": 1_800_000_000,
                "node": "node-0003",
                "gpu": 4,
                "uuid": "GPU-x",
                "horizon_h": 1,
                "risk": 0.2,
                "alert": 0,
                "model": "cascade",
                "reason": "-",
            },
        ]
    )
    write_risk(ctx.store, frame)
    ctx.invalidate()
    gpus = {(g["node"], g["gpu"]): g for g in api.get("/v1/gpus", limit=5000).json()["items"]}
    assert gpus[("node-0003", 4)]["risk"] == 0.93  # the 48 h horizon is the one shown
    assert gpus[("node-0003", 5)]["risk"] is None
    ctx.risk_horizon_h = 1  # TG_API_RISK_HORIZON_H=1
    ctx.invalidate()
    try:
        gpus = {(g["node"], g["gpu"]): g for g in api.get("/v1/gpus", limit=5000).json()["items"]}
        assert gpus[("node-0003", 4)]["risk"] == 0.2
    finally:
        ctx.risk_horizon_h = 48
        ctx.invalidate()
