"""Two `trainguard api` processes (as if on two hosts, no shared file): a write through one
is in the other's cached lists within TG_API_STORE_GENERATION_MS (real ClickHouse). A third
with the stored count turned off shows that the lists are cached at all."""

from __future__ import annotations

import functools
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from api.auth import Role, TokenBook
from diagnosis.incident_store import save_incidents
from tests.actions_builders import make_incident
from tests.integration.conftest import process_env, wait_for
from tests.integration.replica_helpers import Replicas, free_port, running

pytestmark = pytest.mark.integration


@pytest.fixture
def replicas() -> Iterator[Replicas]:
    """The `trainguard` processes a test starts, stopped (children too) whatever happens."""
    with running() as started:
        yield started


BOUND_MS = 400  # the stated bound the second instance is started with


def _call(port: int, token: str, path: str, body: dict[str, str] | None = None) -> object:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.loads(resp.read())


def _ids(port: int, token: str) -> set[str]:
    page = _call(port, token, "/v1/incidents?status=open&limit=500")
    assert isinstance(page, dict)
    return {item["id"] for item in page["items"]}


def _up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_write_through_one_api_is_seen_by_the_other_within_the_bound(
    services,
    topics,
    server_store,
    tmp_path,
    replicas: Replicas,
):
    token = TokenBook(server_store).create(f"replicas-{topics.prefix}", Role.OPERATOR)
    incidents = [make_incident(n, node=f"node-00{n:02d}", at=datetime.now(UTC)) for n in (1, 2)]
    save_incidents(server_store, incidents)
    ports = [free_port(), free_port(), free_port()]
    for i, (port, bound_ms) in enumerate(zip(ports, (BOUND_MS, BOUND_MS, 0), strict=True)):
        env = process_env(
            services,
            topics,
            server_store,
            TG_API_PORT=str(port),
            TG_API_CACHE_S="120",  # without the stored count, a stale list lives 2 minutes
            TG_API_STORE_GENERATION_MS=str(bound_ms),
            TG_WEBHOOK_KEY_FILE=str(tmp_path / f"webhook-{i}.key"),
        )
        replicas.start(["api"], env, tmp_path / f"api-{i}.log")
    for port in ports:
        wait_for(functools.partial(_up, port), 90, f"the API on port {port}")
    writer, reader, control = ports  # the control follows no other instance (bound 0)
    wanted = {i.id for i in incidents}
    for port in (reader, control):
        assert wanted <= _ids(port, token)  # each caches its list now
    _call(writer, token, f"/v1/incidents/{incidents[0].id}/resolve", {"reason": "fixed by hand"})
    # the reader follows the store's count: polled, as tests assert no timings (BOUND_MS)
    wait_for(
        lambda: incidents[0].id not in _ids(reader, token),
        30,
        "the reader to drop the resolved incident",
    )
    seen = _ids(reader, token)
    assert incidents[1].id in seen
    assert _ids(writer, token) == seen  # both instances give the same answer
    # the cache is really in play: the instance that follows no store count is still stale
    assert incidents[0].id in _ids(control, token)
