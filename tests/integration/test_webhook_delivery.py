"""Webhook delivery over real loopback HTTP: proxies, Retry-After, which answers are retried,
PagerDuty following an incident stored in ClickHouse, and secrets sealed in the store."""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import SecretStr

from actions.alertmanager import AlertmanagerClient, Auth
from actions.webhooks.delivery import (
    Deliverer,
    Dispatcher,
    Subscription,
    deliveries,
    save_subscription,
)
from actions.webhooks.formats import EventType, WebhookEvent
from actions.webhooks.sealing import PREFIX
from actions.webhooks.signing import HEADER, verify_signature
from analytics.action_tables import WEBHOOK_SUBSCRIPTIONS
from diagnosis.incident_store import record_transition, save_incidents
from diagnosis.lifecycle import Transition
from diagnosis.model import Blame, Category, ComponentKind, IncidentStatus
from tests.actions_builders import make_incident

pytestmark = pytest.mark.integration
SECRET = "whsec-delivery-2b9e"
ROUTING_KEY = "R0UTINGKEY-very-secret-77"
CONSOLE = "https://console.example.test"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class Server:
    """A loopback HTTP server answering scripted replies (then 200) and keeping what it got."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append((self.command, self.path, dict(self.headers), body))
                reply = outer.replies.pop(0) if outer.replies else Reply()
                time.sleep(reply.delay_s)
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_CONNECT = _answer  # noqa: N815 (http.server's names)

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture
def proxy() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture(autouse=True)
def no_proxy_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def _sub(url: str, fmt: str = "trainguard", secret: str = SECRET) -> Subscription:
    return Subscription(
        id="ops", url=url, secret=SecretStr(secret), events=list(EventType), format=fmt
    )


def _event(
    event_type: EventType = EventType.INCIDENT_OPENED, incident_id: str = "inc-x", **data
) -> WebhookEvent:
    return WebhookEvent(
        id=f"{event_type.value}:{incident_id}",
        type=event_type,
        at=datetime.now(UTC),
        incident_id=incident_id,
        summary=f"{event_type.value} of {incident_id}",
        severity="critical",
        data=data,
    )


def _deliverer(store, sleeps: list[float] | None = None, **kw) -> Deliverer:
    hosts = ["127.0.0.1", "hooks.example.test", "secure.example.test"]
    sleep = sleeps.append if sleeps is not None else time.sleep
    return Deliverer(store, hosts, backoff_s=0.01, sleep=sleep, console_url=CONSOLE, **kw)


def test_http_proxy_from_the_environment_carries_the_delivery(
    server_store, receiver, proxy, monkeypatch
):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    outcome = _deliverer(server_store).deliver(_sub("http://hooks.example.test/in"), _event())
    assert outcome.status == "delivered"  # hooks.example.test does not resolve: the proxy did it
    ((method, target, headers, body),) = proxy.requests
    assert (method, target) == ("POST", "http://hooks.example.test/in")
    assert verify_signature(SECRET, headers[HEADER], body)
    assert not receiver.requests


def test_no_proxy_hosts_are_reached_directly(server_store, receiver, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert _deliverer(server_store).deliver(_sub(receiver.url), _event()).status == "delivered"
    assert len(receiver.requests) == 1 and not proxy.requests


def test_https_goes_through_the_https_proxy_as_a_tunnel(server_store, proxy, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
    proxy.replies = [Reply(403)] * 2  # this proxy refuses the tunnel
    sleeps: list[float] = []
    outcome = _deliverer(server_store, sleeps, max_attempts=2).deliver(
        _sub("https://secure.example.test/in"), _event()
    )
    assert outcome.status == "dead" and outcome.http_status is None
    assert [(m, t) for m, t, _h, _b in proxy.requests] == [
        ("CONNECT", "secure.example.test:443")
    ] * 2


def test_the_url_a_credential_for_slack_stays_out_of_the_log(server_store, receiver, caplog):
    caplog.set_level(logging.DEBUG)
    url = f"{receiver.url}/services/T000/B000/XXXXsecretpath"
    receiver.replies = [Reply(500)]
    outcome = _deliverer(server_store).deliver(_sub(url, "slack"), _event())
    assert outcome.status == "delivered" and len(receiver.requests) == 2
    assert f"127.0.0.1:{receiver.port}" in caplog.text  # httpx's request lines, redacted
    assert "XXXXsecretpath" not in caplog.text


def test_alertmanager_credentials_are_sent_and_reread_from_their_files(receiver, tmp_path):
    token = tmp_path / "token"
    token.write_text("tok-1\n")
    client = AlertmanagerClient(f"http://127.0.0.1:{receiver.port}", Auth(bearer_token_file=token))
    client.post([{"labels": {"alertname": "x"}}])
    token.write_text("tok-2\n")  # rotated
    client.post([{"labels": {"alertname": "x"}}])
    password = tmp_path / "password"
    password.write_text("pa:ss\n")
    basic = AlertmanagerClient(
        f"http://127.0.0.1:{receiver.port}/", Auth("tg", password_file=password)
    )
    basic.post([{"labels": {"alertname": "y"}}])
    sent = [(t, h["Authorization"]) for _m, t, h, _b in receiver.requests]
    assert sent == [
        ("/api/v2/alerts", "Bearer tok-1"),
        ("/api/v2/alerts", "Bearer tok-2"),
        ("/api/v2/alerts", "Basic " + base64.b64encode(b"tg:pa:ss").decode()),
    ]
    client.close()
    basic.close()


def test_retry_after_in_seconds_and_as_a_date_is_honoured_and_capped(server_store, receiver):
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    receiver.replies = [
        Reply(429, {"Retry-After": "7"}),
        Reply(503, {"Retry-After": later}),
        Reply(503, {"Retry-After": "86400"}),
    ]
    sleeps: list[float] = []
    deliverer = _deliverer(server_store, sleeps, max_retry_after_s=30.0)
    outcome = deliverer.deliver(_sub(receiver.url), _event())
    assert outcome.status == "delivered" and outcome.attempts == 4
    assert sleeps[0] == 7.0
    assert 17.0 <= sleeps[1] <= 20.0
    assert sleeps[2] == 30.0  # a day asked for, the cap waited
    logged = deliveries(server_store, outcome.delivery_id)
    assert [(r["status"], r["http_status"]) for r in logged] == [
        ("retrying", 429),
        ("retrying", 503),
        ("retrying", 503),
        ("delivered", 200),
    ]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 422])
def test_client_errors_are_not_retried(server_store, receiver, status):
    receiver.replies = [Reply(status)]
    sleeps: list[float] = []
    outcome = _deliverer(server_store, sleeps).deliver(_sub(receiver.url), _event())
    assert (outcome.status, outcome.attempts, outcome.http_status) == ("dead", 1, status)
    assert not sleeps and len(receiver.requests) == 1


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_timeouts_throttling_and_server_errors_are_retried(server_store, receiver, status):
    receiver.replies = [Reply(status), Reply(status)]
    sleeps: list[float] = []
    outcome = _deliverer(server_store, sleeps).deliver(_sub(receiver.url), _event())
    assert (outcome.status, outcome.attempts) == ("delivered", 3)
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0] * 0.9


def test_a_receiver_that_does_not_answer_in_time_is_retried(server_store, receiver):
    receiver.replies = [Reply(200, delay_s=2.0)]
    outcome = _deliverer(server_store, timeout_s=0.5).deliver(_sub(receiver.url), _event())
    assert (outcome.status, outcome.attempts) == ("delivered", 2)
    first = deliveries(server_store, outcome.delivery_id)[0]
    assert first["status"] == "retrying" and "Timeout" in first["error"]


def test_one_incidents_events_arrive_in_the_order_published(server_store, receiver):
    save_subscription(server_store, _sub(receiver.url), ["127.0.0.1"])
    # the first event of each incident is slow to be taken: nothing of that incident overtakes it
    receiver.replies = [Reply(200, delay_s=0.5), Reply(200, delay_s=0.5)]
    dispatcher = Dispatcher(_deliverer(server_store), workers=4)
    kinds = [EventType.INCIDENT_OPENED, EventType.ACTION_PLANNED, EventType.INCIDENT_RESOLVED]
    for kind in kinds:
        for incident_id in ("inc-a", "inc-b"):
            dispatcher.publish(_event(kind, incident_id))
    outcomes = dispatcher.wait()
    dispatcher.close()
    assert [o.status for o in outcomes] == ["delivered"] * 6
    got = [json.loads(b) for _m, _t, _h, b in receiver.requests]
    for incident_id in ("inc-a", "inc-b"):
        order = [g["type"] for g in got if g["incident_id"] == incident_id]
        assert order == [k.value for k in kinds]


def _pd(receiver: Server) -> list[dict]:
    return [json.loads(b) for _m, _t, _h, b in receiver.requests]


def _move(store, incident_id: str, status: IncidentStatus, reason: str) -> None:
    record_transition(
        store,
        Transition(
            incident_id=incident_id,
            status=status,
            reason=reason,
            actor="test",
            at=datetime.now(UTC),
        ),
    )


def test_pagerduty_follows_the_incident_and_never_pages_again_after_resolve(server_store, receiver):
    incident = make_incident(7, node="node-0042", gpu=6, job="job-pd")
    save_incidents(server_store, [incident])
    deliverer = _deliverer(server_store)
    sub = _sub(receiver.url, "pagerduty", ROUTING_KEY)

    def send(event_type: EventType, **data) -> str:
        return deliverer.deliver(sub, _event(event_type, incident.id, **data)).status

    assert send(EventType.INCIDENT_OPENED) == "delivered"
    _move(server_store, incident.id, IncidentStatus.MITIGATING, "drain_node: node-0042")
    assert send(EventType.INCIDENT_UPDATED) == "delivered"
    assert send(EventType.ACTION_EXECUTED, state="done", kind="drain_node") == "delivered"
    _move(server_store, incident.id, IncidentStatus.RESOLVED, "remediation ladder complete")
    assert send(EventType.INCIDENT_RESOLVED) == "delivered"
    # a late action event (a step that finished after the close) must not open a new page
    assert send(EventType.ACTION_FAILED, state="failed", kind="reboot_node") == "suppressed"
    assert send(EventType.INCIDENT_UPDATED) == "suppressed"

    bodies = _pd(receiver)
    assert [b["event_action"] for b in bodies] == [
        "trigger",
        "acknowledge",
        "acknowledge",
        "resolve",
    ]
    assert {b["dedup_key"] for b in bodies} == {incident.id}
    assert all(b["routing_key"] == ROUTING_KEY for b in bodies)
    payload = bodies[0]["payload"]
    assert payload["source"] == "node-0042" and payload["severity"] == "critical"
    assert payload["custom_details"]["gpu"] == 6 and payload["group"] == "job-pd"
    assert bodies[0]["links"] == [
        {
            "href": f"{CONSOLE}/?page=incident&id={incident.id}",
            "text": "Incident in the TrainGuard console",
        }
    ]
    logged = deliveries(server_store)
    assert [r["status"] for r in logged[-2:]] == ["suppressed", "suppressed"]
    assert all(ROUTING_KEY not in r["body"] for r in logged)


def test_pagerduty_source_is_the_job_when_no_node_is_to_blame(server_store, receiver):
    incident = make_incident(
        8,
        category=Category.APPLICATION,
        blame=Blame.APPLICATION,
        component=ComponentKind.JOB,
        node=None,
        job="job-app",
    )
    save_incidents(server_store, [incident])
    sub = _sub(receiver.url, "pagerduty", ROUTING_KEY)
    _deliverer(server_store).deliver(sub, _event(EventType.INCIDENT_OPENED, incident.id))
    (body,) = _pd(receiver)
    assert body["payload"]["source"] == "job-app"


def test_subscription_urls_and_secrets_are_sealed_in_the_store(server_store):
    slack_url = "https://hooks.example.test/services/T000/B000/XXXXsecretpath"
    save_subscription(server_store, _sub(slack_url, "slack", ROUTING_KEY), ["hooks.example.test"])
    frame = server_store.query_df(
        f"SELECT * FROM `{server_store.database}`.`{WEBHOOK_SUBSCRIPTIONS.name}`"
    )
    assert len(frame) == 1
    raw = json.dumps(frame.astype(str).to_dict(orient="records"))
    assert ROUTING_KEY not in raw and "XXXXsecretpath" not in raw and "hooks.example" not in raw
    assert str(frame["url"][0]).startswith(PREFIX) and str(frame["secret"][0]).startswith(PREFIX)
