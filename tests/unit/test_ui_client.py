"""The console's API client over recorded API answers (httpx.MockTransport, no sockets)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from actions.model import Action, ActionKind, ActionPlan, Risk, State, Target
from api.models import ActionView
from ui.client import (
    ApiClient,
    ApiError,
    ApiUnreachable,
    Forbidden,
    NotFound,
    RouteMissing,
    TokenRejected,
)

RECORDED = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "console" / "api_responses.json").read_text()
)
PROBLEM = {"content-type": "application/problem+json"}


def make_client(handler: Callable[[httpx.Request], httpx.Response]) -> ApiClient:
    return ApiClient("http://api.test/", "tg_secret", transport=httpx.MockTransport(handler))


def recorded(routes: dict[str, Any], seen: list[httpx.Request] | None = None) -> ApiClient:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        if request.url.path not in routes:
            return httpx.Response(404, json={"detail": "Not Found"})
        return httpx.Response(200, json=routes[request.url.path])

    return make_client(handler)


def problem(status: int, detail: str) -> Callable[[httpx.Request], httpx.Response]:
    body = {"type": "about:blank", "title": "x", "status": status, "detail": detail}
    return lambda _r: httpx.Response(status, json=body, headers=PROBLEM)


def test_incidents_send_the_token_and_only_the_filters_given():
    seen: list[httpx.Request] = []
    client = recorded({"/v1/incidents": RECORDED["incidents"]}, seen)
    page = client.incidents(status="open", severity=None, job="j2", limit=20)
    assert {i.category for i in page.items} == {"hang", "gpu.hardware"}
    assert page.next_cursor is None
    (request,) = seen
    assert request.headers["authorization"] == "Bearer tg_secret"
    assert dict(request.url.params) == {"status": "open", "job": "j2", "limit": "20"}


def test_incident_detail_keeps_timeline_suspects_and_parallel_groups():
    hang = RECORDED["incident_hang"]
    client = recorded({f"/v1/incidents/{hang['incident']['id']}": hang})
    detail = client.incident(hang["incident"]["id"])
    assert detail.incident.suspects[0].rank == 13
    assert [e.event for e in detail.timeline] == ["detected"]
    assert detail.neighbourhood is not None and detail.neighbourhood["rank"] == 13


def test_writes_post_their_bodies():
    seen: list[httpx.Request] = []
    hang = RECORDED["incident_hang"]
    iid = hang["incident"]["id"]
    closed = {**hang["incident"], "status": "resolved", "status_reason": "fixed"}
    client = recorded(
        {f"/v1/incidents/{iid}/acknowledge": hang, f"/v1/incidents/{iid}/resolve": closed}, seen
    )
    client.acknowledge(iid, "on it")
    assert client.resolve(iid, "fixed").status == "resolved"
    assert [(r.method, json.loads(r.content)) for r in seen] == [
        ("POST", {"note": "on it"}),
        ("POST", {"reason": "fixed"}),
    ]


def test_gpus_follow_cursors_to_the_last_page():
    gpus = RECORDED["gpus"]["items"]

    def handler(request: httpx.Request) -> httpx.Response:
        start = int(request.url.params.get("cursor", "0"))
        chunk = gpus[start : start + 10]
        more = start + 10 < len(gpus)
        return httpx.Response(
            200, json={"items": chunk, "next_cursor": str(start + 10) if more else None}
        )

    got = make_client(handler).gpus()
    assert [(g.node, g.gpu) for g in got] == [(g["node"], g["gpu"]) for g in gpus]
    assert {g.state for g in got} >= {"healthy", "lost"}


def test_jobs_nodes_and_node_detail_parse():
    client = recorded(
        {
            "/v1/jobs": RECORDED["jobs"],
            "/v1/nodes": RECORDED["nodes"],
            "/v1/nodes/node-0001": RECORDED["node_1"],
            "/v1/jobs/j1": RECORDED["job_j1"],
        }
    )
    assert [j.job_id for j in client.jobs()] == ["j1", "j2"]
    assert any(n.state == "lost" for n in client.nodes())
    node = client.node("node-0001", minutes=30)
    assert node.xids and "fallen off the bus" in node.xids[0]["line"]
    assert client.job("j1").communicators


def test_path_segments_are_quoted():
    seen: list[httpx.Request] = []
    client = recorded({}, seen)
    with pytest.raises(RouteMissing):
        client.node("rack/1 node?x")
    assert seen[0].url.raw_path == b"/v1/nodes/rack%2F1%20node%3Fx?minutes=15"


@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        (401, TokenRejected, "rejected the token (unknown or revoked token)"),
        (403, Forbidden, "needs the operator role"),
        (404, NotFound, "no incident"),
        (409, ApiError, "(409)"),
        (503, ApiError, "store is not"),
    ],
)
def test_problem_details_become_typed_errors(status, error, words):
    detail = {
        401: "unknown or revoked token",
        403: "needs the operator role; v is viewer",
        404: "no incident 'x'",
        409: "already resolved",
        503: "ClickHouse did not answer",
    }[status]
    with pytest.raises(error) as caught:
        make_client(problem(status, detail)).incident("x")
    assert words in caught.value.message
    assert not isinstance(caught.value, RouteMissing)


def test_routes_not_served_yet_are_route_missing():
    client = recorded({})
    with pytest.raises(RouteMissing) as caught:
        client.actions(status="pending")
    assert caught.value.route == "GET /v1/actions"
    assert "not available yet" in caught.value.message
    for call in (client.breaker, client.scheduler_state, client.webhooks, client.audit):
        with pytest.raises(RouteMissing):
            call()
    not_allowed = make_client(lambda _r: httpx.Response(405, json={"detail": "Method Not Allowed"}))
    with pytest.raises(RouteMissing):
        not_allowed.delete_webhook("w1")


@pytest.mark.parametrize("failure", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
def test_no_answer_is_unreachable(failure):
    def handler(request: httpx.Request) -> httpx.Response:
        raise failure

    with pytest.raises(ApiUnreachable) as caught:
        make_client(handler).jobs()
    assert "http://api.test" in caught.value.message


def test_an_answer_of_the_wrong_shape_is_an_api_error():
    client = make_client(lambda _r: httpx.Response(200, json={"items": [{"job_id": 3}]}))
    with pytest.raises(ApiError, match="unexpected answer from /v1/jobs"):
        client.jobs()


ACTION = {
    "id": "act-1",
    "incident_id": "inc-857e0d00f21b",
    "kind": "isolate_gpu",
    "target": "node-0001/2",
    "risk": "medium",
    "mode": "approval",
    "status": "pending",
    "plan": {"what": "drain GPU 2", "target": "node-0001/2", "why": "Xid 79"},
    "created_at": "2026-11-02T08:01:05Z",
    "updated_at": "2026-11-02T08:01:05Z",
    "result": None,
    "added_later": True,
}


def test_action_engine_contract_parses():
    audit = {
        "items": [
            {
                "at": "2026-11-02T08:02:00Z",
                "action_id": "act-1",
                "incident_id": "inc-857e0d00f21b",
                "event": "approved",
                "actor": "operator-user",
                "detail": "go",
            }
        ],
        "next_cursor": "abc",
    }
    breaker = {
        "state": "open",
        "isolated_in_window": 3,
        "limit": 3,
        "window_s": 600,
        "opened_at": "2026-11-02T08:03:00Z",
    }
    client = recorded(
        {
            "/v1/actions": {"items": [ACTION], "next_cursor": None},
            "/v1/actions/act-1/approve": {**ACTION, "status": "approved"},
            "/v1/actions/audit": audit,
            "/v1/breaker": breaker,
            "/v1/scheduler/state": {"pools": [{"name": "train"}], "loans": [], "queue": []},
            "/v1/webhooks": [{"id": "w1", "url": "https://h.test", "format": "slack"}],
        }
    )
    (action,) = client.actions(status="pending").items
    assert action.plan.why == "Xid 79" and action.status == "pending"
    assert client.approve("act-1", "ok").status == "approved"
    assert client.audit().next_cursor == "abc"
    assert client.breaker().state == "open"
    assert client.scheduler_state().pools == [{"name": "train"}]
    (hook,) = client.webhooks()
    assert hook.url == "https://h.test" and hook.model_dump()["format"] == "slack"


def test_the_apis_own_action_view_parses_as_the_consoles_action_item():
    plan = ActionPlan(
        action_id="act-1",
        incident_id="inc-857e0d00f21b",
        kind=ActionKind.ISOLATE_GPU,
        target=Target(node="node-0001", gpu=2),
        risk=Risk.HIGH,
        executor="slurm",
        step=0,
        rule="xid79",
        what="drain GPU 2",
        why="Xid 79",
        created_at=datetime(2026, 11, 2, 8, 1, 5, tzinfo=UTC),
    )
    view = ActionView.of(Action(plan=plan, state=State.AWAITING_APPROVAL), "approve")
    client = recorded({"/v1/actions": {"items": [view.model_dump(mode="json")]}})
    (action,) = client.actions(status="pending").items
    assert (action.id, action.kind, action.status) == ("act-1", "isolate_gpu", "pending")
    assert action.target == "node=node-0001,gpu=2" and action.plan.why == "Xid 79"
    assert action.created_at == plan.created_at == action.updated_at


def test_me_names_the_token_and_its_role():
    client = recorded({"/v1/me": {"name": "alice", "role": "operator", "extra": 1}})
    me = client.me()
    assert (me.name, me.role) == ("alice", "operator")
    with pytest.raises(RouteMissing):
        recorded({}).me()  # an API older than /v1/me
