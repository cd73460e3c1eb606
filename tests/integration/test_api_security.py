"""What one caller must not do to the others, through the app on a real ClickHouse server:
poison a shared cache, reach ClickHouse with a crafted cursor, keep using a revoked token,
grow the process with unknown tokens; and webhook credentials never shown or stored plain."""

from __future__ import annotations

import base64
import logging
import secrets
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from actions.webhooks.delivery import (
    Subscription,
    load_subscriptions,
    reseal_subscriptions,
    save_subscription,
)
from actions.webhooks.sealing import Sealer, fingerprint, is_sealed
from analytics.action_tables import WEBHOOK_SUBSCRIPTIONS
from analytics.api_tables import API_AUDIT, API_TOKENS
from analytics.migrations import migrate
from analytics.store import ServerStore, Store
from api.app import create_app
from api.auth import TOKEN_PREFIX, Role, TokenBook, hash_token
from api.context import ApiContext
from tests.api_fixtures import api_context, populate

pytestmark = pytest.mark.integration


class Api:
    """A test client with one token per role, and the app's context."""

    def __init__(self, client: TestClient, tokens: dict[str, str]) -> None:
        self.client, self.tokens = client, tokens
        self.context: ApiContext = client.app.state.context  # type: ignore[attr-defined]

    def get(self, path: str, role: str = "viewer", **params: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.tokens[role]}"}
        return self.client.get(path, params=params, headers=headers)


@pytest.fixture(scope="module")
def api(services) -> Iterator[Api]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_sec_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    populate(store)
    context = api_context(store)
    tokens = {r.value: context.tokens.create(f"{r.value}-user", r) for r in Role}
    with TestClient(create_app(context)) as client:
        yield Api(client, tokens)
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


def _cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("path", "poison", "field"),
    [("/v1/gpus", {"node": "None"}, "items"), ("/v1/incidents", {"job": "None"}, "items")],
)
def test_a_filter_spelled_none_does_not_poison_the_unfiltered_list(api, path, poison, field):
    api.context.invalidate()  # nothing cached: the poisoned request is the first of its key
    poisoned = api.get(path, **poison)
    assert poisoned.status_code == 200 and poisoned.json()[field] == []
    everyone = api.get(path)
    assert everyone.status_code == 200 and len(everyone.json()[field]) > 0
    if path == "/v1/gpus":
        assert len(everyone.json()["items"]) == 64
    assert api.get(path, **poison).json()[field] == []  # and the other way round


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/v1/incidents", '[true,0,"inc"]'),
        ("/v1/incidents", '[1,true,"inc"]'),
        ("/v1/incidents", '[18446744073709551616,0,"inc"]'),
        ("/v1/incidents", '[1,0,"\\ud800"]'),
        ("/v1/gpus", '["node-0001",true]'),
        ("/v1/nodes", "[1]"),
        ("/v1/actions", "[true]"),
        ("/v1/actions/audit", "[-5]"),
    ],
)
def test_a_crafted_cursor_is_a_400_problem_not_a_query(api, path, raw):
    response = api.get(path, cursor=_cursor(raw))
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert "malformed cursor" in response.json()["detail"]


def test_a_revocation_elsewhere_stops_the_token_within_seconds(api):
    elsewhere = TokenBook(api.context.store)  # `trainguard api token-revoke`, another process
    token = elsewhere.create("leaver", Role.VIEWER)
    auth = {"Authorization": f"Bearer {token}"}
    for path in ("/v1/gpus", "/v1/jobs", "/v1/gpus"):  # verified, cached, the fast path
        assert api.client.get(path, headers=auth).status_code == 200
    assert elsewhere.revoke("leaver") == 1
    revoked = time.monotonic()
    statuses: dict[str, int] = {}
    while time.monotonic() - revoked < 10:
        statuses = {p: api.client.get(p, headers=auth).status_code for p in ("/v1/gpus", "/v1/me")}
        if set(statuses.values()) == {401}:
            break
        time.sleep(0.1)
    took = time.monotonic() - revoked
    assert set(statuses.values()) == {401}, f"still {statuses} {took:.1f} s after revoking"
    assert took <= api.context.tokens.check_s + 3.0  # its check period, plus a loaded CI's
    assert api.get("/v1/me").status_code == 200  # the others' tokens are unaffected


def _grant(store: Store, token: str, name: str) -> None:
    """Store a token as `TokenBook.create` would in another process."""
    store.insert(
        API_TOKENS.name,
        {
            "token_hash": [hash_token(token)],
            "name": [name],
            "role": [Role.VIEWER.value],
            "created": [int(time.time())],
            "revoked": [0],
            "version": [1],
        },
        {c.name: c.type for c in API_TOKENS.columns},
    )


def test_unknown_tokens_are_remembered_briefly_and_in_bounded_number(api):
    store = api.context.store
    book = TokenBook(store, unknown_s=5.0, max_unknown=50)
    for junk in ("tg_short", "x" * 46, TOKEN_PREFIX + "!" * 43, ""):
        assert book.verify(junk) is None  # malformed: no query, nothing remembered
    assert book.cached() == (0, 0)
    guesses = [TOKEN_PREFIX + secrets.token_urlsafe(32) for _ in range(200)]
    assert all(book.verify(g) is None for g in guesses)
    assert book.cached() == (0, 50)  # the 150 oldest were dropped
    _grant(store, guesses[0], "first")
    _grant(store, guesses[-1], "last")
    first = book.verify(guesses[0])  # dropped from memory: read again, found
    assert first is not None and first.name == "first"
    assert book.verify(guesses[-1]) is None  # still remembered as unknown
    time.sleep(5.1)
    last = book.verify(guesses[-1])  # ... for unknown_s only
    assert last is not None and last.name == "last"


SLACKISH = "/services/T0SECRETTEAM/B0SECRETHOOK/XXSECRETTOKENXX"  # the path is the credential
HOOK_SECRET = "hmac-secret-for-the-test-0123456789"


def _stored(store: Store) -> list[tuple[str, str]]:
    frame = store.query_df(
        f"SELECT url, secret FROM `{store.database}`.`{WEBHOOK_SUBSCRIPTIONS.name}` ORDER BY seq"
    )
    return [(str(u), str(s)) for u, s in frame.itertuples(index=False)]


def _audit_details(store: Store) -> str:
    frame = store.query_df(f"SELECT detail FROM `{store.database}`.`{API_AUDIT.name}`")
    return "\n".join(str(d) for d in frame["detail"])


def test_webhook_urls_and_secrets_are_sealed_at_rest_and_shown_only_masked(api, caplog):
    caplog.set_level(logging.DEBUG)
    store = api.context.store
    url = f"http://127.0.0.1:9{SLACKISH}"
    admin = {"Authorization": f"Bearer {api.tokens['admin']}"}
    body = {"id": "slackish", "url": url, "secret": HOOK_SECRET, "events": ["incident.opened"]}
    created = api.client.post("/v1/webhooks", json=body, headers=admin)
    assert created.status_code == 201, created.text
    listed = api.client.get("/v1/webhooks", headers=admin)
    shown = [w for w in listed.json() if w["id"] == "slackish"]
    assert shown == [created.json()]
    assert shown[0]["url"] == "http://127.0.0.1:9/services/…"
    assert shown[0]["url_fingerprint"] == fingerprint(url)
    tested = api.client.post("/v1/webhooks/slackish/test", headers=admin)  # nobody listens on 9
    assert tested.status_code == 200 and tested.json()["status"] == "dead"
    for secret in ("SECRET", HOOK_SECRET):
        assert secret not in created.text + listed.text + tested.text
        assert secret not in _audit_details(store)
        assert secret not in caplog.text
        for stored_url, stored_secret in _stored(store):
            assert secret not in stored_url + stored_secret
    assert all(is_sealed(u) and is_sealed(s) for u, s in _stored(store))
    (sub,) = [s for s in load_subscriptions(store) if s.id == "slackish"]
    assert sub.url == url and sub.secret.get_secret_value() == HOOK_SECRET  # delivery has them
    assert "SECRET" not in repr(sub) and "SECRET" not in str(sub)


def test_plaintext_webhook_rows_from_before_sealing_still_work_and_get_sealed(api):
    store = api.context.store
    url = f"http://127.0.0.1:9{SLACKISH}/legacy"
    for seq, events in ((1, ["incident.opened"]), (2, ["incident.opened", "action.failed"])):
        store.insert(  # as the code before sealing stored them: two versions, in plaintext
            WEBHOOK_SUBSCRIPTIONS.name,
            {
                "id": ["legacy"],
                "seq": [seq],
                "url": [url],
                "secret": [HOOK_SECRET],
                "events": [events],
                "format": ["trainguard"],
                "active": [1],
                "at": [int(time.time())],
                "at_us": [0],
            },
            {c.name: c.type for c in WEBHOOK_SUBSCRIPTIONS.columns},
        )
    admin = {"Authorization": f"Bearer {api.tokens['admin']}"}
    listed = api.client.get("/v1/webhooks", headers=admin)
    (legacy,) = [w for w in listed.json() if w["id"] == "legacy"]
    assert legacy["url"] == "http://127.0.0.1:9/services/…" and "SECRET" not in listed.text
    assert legacy["events"] == ["incident.opened", "action.failed"]
    assert reseal_subscriptions(store) == 1
    deadline = time.monotonic() + 30  # the plaintext rows go with a ClickHouse mutation
    while any(SLACKISH in u + s for u, s in _stored(store)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(is_sealed(u) and is_sealed(s) for u, s in _stored(store))
    (sub,) = [s for s in load_subscriptions(store) if s.id == "legacy"]
    assert (sub.url, sub.secret.get_secret_value()) == (url, HOOK_SECRET)
    assert [e.value for e in sub.events] == ["incident.opened", "action.failed"]
    assert reseal_subscriptions(store) == 0


def test_a_subscription_sealed_with_another_key_is_skipped_not_garbled(api, caplog):
    store = api.context.store
    other = Sealer(Fernet.generate_key())
    sub = Subscription(
        id="otherkey", url="http://127.0.0.1:9/x", secret=HOOK_SECRET, events=["incident.opened"]
    )
    save_subscription(store, sub, ["127.0.0.1"], sealer=other)
    assert "otherkey" in [s.id for s in load_subscriptions(store, sealer=other)]
    assert "otherkey" not in [s.id for s in load_subscriptions(store)]
    assert "webhook subscription otherkey skipped" in caplog.text
