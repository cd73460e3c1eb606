"""Webhooks to a loopback receiver: signed, retried after 500s, logged, dead-lettered."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import SecretStr

from actions.engine import ActionEngine, EngineConfig
from actions.executors.webhook import OperatorWebhook
from actions.model import ActionKind, Mode, State
from actions.policy import parse_policy
from actions.registry import ActionRegistry
from actions.webhooks.delivery import (
    Deliverer,
    Dispatcher,
    Subscription,
    WebhookUrlError,
    deliveries,
    save_subscription,
)
from actions.webhooks.formats import EventType
from actions.webhooks.signing import HEADER, ReplayCache, verify_signature
from tests.actions_builders import make_incident

pytestmark = pytest.mark.integration
SECRET = "whsec-very-secret-4f1c"


class Receiver:
    """A loopback webhook endpoint: answers the queued statuses, then 200; verifies signatures."""

    def __init__(self) -> None:
        self.statuses: list[int] = []
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.verified: list[bool] = []
        self.replays = ReplayCache()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((dict(self.headers), body))
                status = outer.statuses.pop(0) if outer.statuses else 200
                # a receiver remembers only what it accepted: a retry after its 500 is not a replay
                replays = outer.replays if status == 200 else None
                outer.verified.append(
                    verify_signature(
                        SECRET, self.headers.get(HEADER, ""), body, 300, replays=replays
                    )
                )
                self.send_response(status)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


def _sub(url: str, fmt: str = "trainguard", events=None) -> Subscription:
    return Subscription(
        id="ops", url=url, secret=SecretStr(SECRET), events=events or list(EventType), format=fmt
    )


def test_signed_deliveries_retry_after_500s_and_are_logged_without_secrets(
    server_store, receiver, caplog
):
    caplog.set_level(logging.DEBUG)
    receiver.statuses = [500, 500]
    deliverer = Deliverer(server_store, ["127.0.0.1"], max_attempts=4, backoff_s=0.01)
    save_subscription(server_store, _sub(receiver.url), ["127.0.0.1"])
    dispatcher = Dispatcher(deliverer)
    notify = OperatorWebhook(ActionKind.NOTIFY_OWNER, deliverer, _sub(receiver.url))
    policy = parse_policy(
        "version: 1\nrules:\n  - {name: app, match: {categories: [application]}, "
        "ladder: [notify_owner]}\n"
    )
    eng = ActionEngine(
        server_store,
        ActionRegistry([notify]),
        policy,
        EngineConfig(mode=Mode.AUTO),
        dispatcher=dispatcher,
    )
    from diagnosis.model import Blame, Category, ComponentKind

    incident = make_incident(
        1,
        category=Category.APPLICATION,
        blame=Blame.APPLICATION,
        component=ComponentKind.JOB,
        node=None,
    )
    got = eng.handle(incident)
    outcomes = dispatcher.wait()
    assert got[0].state == State.DONE
    assert outcomes and all(o.status == "delivered" for o in outcomes)
    assert all(receiver.verified) and len(receiver.verified) >= 4
    types = [json.loads(b).get("type") for _h, b in receiver.received]
    for wanted in ("incident.opened", "action.planned", "action.executed", "incident.resolved"):
        assert wanted in types
    logged = deliveries(server_store)
    # the notify action and the dispatcher's lane send at once: the two 500s may fall on one
    # delivery or on two, and their rows interleave; each delivery retried to `delivered`
    retried = [r for r in logged if r["status"] == "retrying"]
    assert [r["http_status"] for r in retried] == [500, 500]
    last = {r["delivery_id"]: r["status"] for r in logged}
    assert set(last.values()) == {"delivered"}
    text = caplog.text + json.dumps(logged, default=str)
    assert SECRET not in text and "v1=" not in text
    assert "attempt 1: HTTP 500" in caplog.text


def test_dead_letter_after_n_attempts_then_redelivery(server_store, receiver):
    receiver.statuses = [500, 503, 500]
    sleeps: list[float] = []
    deliverer = Deliverer(
        server_store, ["127.0.0.1"], max_attempts=3, backoff_s=0.01, sleep=sleeps.append
    )
    save_subscription(server_store, _sub(receiver.url, "pagerduty"), ["127.0.0.1"])
    dispatcher = Dispatcher(deliverer)
    from datetime import UTC, datetime

    from actions.webhooks.formats import WebhookEvent

    dispatcher.publish(
        WebhookEvent(
            id="e1",
            type=EventType.ACTION_FAILED,
            at=datetime.now(UTC),
            incident_id="inc-1",
            summary="drain failed",
        )
    )
    (dead,) = dispatcher.wait()
    assert dead.status == "dead" and dead.attempts == 3 and len(sleeps) == 2
    assert sleeps[1] > sleeps[0] * 0.9
    again = deliverer.redeliver(dead.delivery_id)
    assert again.status == "delivered" and again.delivery_id == dead.delivery_id
    body = json.loads(receiver.received[-1][1])
    assert body["routing_key"] == SECRET and body["dedup_key"] == "inc-1"  # sent, never stored
    stored = deliveries(server_store, dead.delivery_id)
    assert [r["status"] for r in stored] == ["retrying", "retrying", "dead", "delivered"]
    assert all(SECRET not in r["body"] for r in stored)


def test_destinations_outside_the_allowlist_are_refused(server_store, receiver):
    with pytest.raises(WebhookUrlError):
        save_subscription(server_store, _sub("http://evil.test/hook"), ["127.0.0.1"])
    tricky = receiver.url.replace("127.0.0.1", "127.0.0.1@evil.test")
    with pytest.raises(WebhookUrlError):
        save_subscription(server_store, _sub(tricky), ["127.0.0.1"])
    deliverer = Deliverer(server_store, ["hooks.example.com"])
    outcome = deliverer.deliver(_sub(receiver.url), _event())
    assert outcome.status == "rejected" and not receiver.received


def _event():
    from datetime import UTC, datetime

    from actions.webhooks.formats import WebhookEvent

    return WebhookEvent(
        id="e2",
        type=EventType.INCIDENT_OPENED,
        at=datetime.now(UTC),
        incident_id="inc-2",
        summary="x",
    )
