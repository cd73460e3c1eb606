"""The API's fast path for hot lists, write invalidation across workers, and /v1/me."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role, TokenBook
from api.context import ApiContext
from api.generation import Generation
from tests.api_fixtures import api_context, populate

pytestmark = pytest.mark.integration


class Workers:
    """Two API workers over one store that share a write generation file, as `trainguard api`
    runs them, and one token per role."""

    def __init__(self, one: TestClient, two: TestClient, tokens: dict[str, str]) -> None:
        self.one, self.two, self.tokens = one, two, tokens

    def auth(self, role: str = "viewer") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}


@pytest.fixture(scope="module")
def workers(services, tmp_path_factory) -> Iterator[Workers]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_hot_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    populate(store)
    path: Path = tmp_path_factory.mktemp("api") / "api.generation"
    first = api_context(store, generation_file=path)
    second = ApiContext(store=store, tokens=TokenBook(store), generation=Generation(path))
    tokens = {r.value: first.tokens.create(f"{r.value}-user", r) for r in Role}
    with TestClient(create_app(first)) as one, TestClient(create_app(second)) as two:
        yield Workers(one, two, tokens)
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


def _metric(client: TestClient, route: str, status: int) -> int:
    needle = f'trainguard_api_requests_total{{route="{route}",status="{status}"}} '
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(needle):
            return int(line.removeprefix(needle))
    return 0


def test_a_repeated_list_is_answered_from_its_rendered_bytes(workers):
    path = "/v1/gpus?state=suspect&limit=100"
    first = workers.one.get(path, headers=workers.auth())
    assert first.status_code == 200 and first.json()["items"]
    served = _metric(workers.one, "/v1/gpus", 200)
    again = workers.one.get(path, headers=workers.auth())
    assert again.status_code == 200
    assert again.content == first.content and again.headers["etag"] == first.headers["etag"]
    assert again.headers["content-type"] == "application/json"
    assert _metric(workers.one, "/v1/gpus", 200) == served + 1  # still counted
    same = workers.one.get(path, headers={**workers.auth(), "If-None-Match": again.headers["etag"]})
    assert same.status_code == 304 and same.content == b""


def test_the_fast_path_still_checks_the_token(workers):
    path = "/v1/incidents?limit=5"
    assert workers.one.get(path, headers=workers.auth()).status_code == 200
    bare = workers.one.get(path)
    assert bare.status_code == 401 and bare.headers["content-type"] == "application/problem+json"
    wrong = workers.one.get(path, headers={"Authorization": "Bearer tg_not-a-real-token"})
    assert wrong.status_code == 401 and wrong.json()["detail"] == "unknown or revoked token"
    basic = workers.one.get(path, headers={"Authorization": f"Basic {workers.tokens['viewer']}"})
    assert basic.status_code == 401


def test_a_write_in_one_worker_shows_in_the_lists_of_the_other(workers):
    listed = workers.two.get("/v1/incidents?status=open&limit=500", headers=workers.auth())
    assert listed.status_code == 200
    target: dict[str, Any] = listed.json()["items"][0]
    moved = workers.one.post(
        f"/v1/incidents/{target['id']}/resolve",
        json={"reason": "fixed"},
        headers=workers.auth("operator"),
    )
    assert moved.status_code == 200, moved.text
    after = workers.two.get("/v1/incidents?status=open&limit=500", headers=workers.auth())
    assert target["id"] not in [i["id"] for i in after.json()["items"]]  # not 5 s later: now
    done = workers.two.get("/v1/incidents?status=resolved&limit=500", headers=workers.auth())
    assert target["id"] in [i["id"] for i in done.json()["items"]]


@pytest.mark.parametrize("role", [r.value for r in Role])
def test_me_names_the_callers_token_and_role(workers, role):
    me = workers.one.get("/v1/me", headers=workers.auth(role))
    assert me.status_code == 200 and me.json() == {"name": f"{role}-user", "role": role}


def test_me_needs_a_token(workers):
    bare = workers.one.get("/v1/me")
    assert bare.status_code == 401 and bare.headers["content-type"] == "application/problem+json"
