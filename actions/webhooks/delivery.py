"""Webhook subscriptions and deliveries: allowlisted, signed, retried, dead-lettered, logged.

Secrets never reach a log line or the deliveries table: the signature header is computed at
send time, PagerDuty's routing key is substituted into the body at send time only. A
subscription's URL (for Slack the credential itself) and secret are stored sealed
(sealing.py), logged by host only, and left out of a subscription's repr.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
import zlib
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from actions.store import next_seq
from actions.webhooks.formats import (
    ROUTING_KEY_PLACEHOLDER,
    EventType,
    Format,
    WebhookEvent,
    render,
)
from actions.webhooks.sealing import PREFIX, Sealer, SealError, default_sealer, is_sealed
from actions.webhooks.signing import HEADER, sign
from actions.webhooks.transport import Answer, Poster
from analytics.action_tables import WEBHOOK_DELIVERIES, WEBHOOK_SUBSCRIPTIONS
from analytics.store import Store, StoreError, query_scalar
from analytics.tables import Features
from diagnosis.incident_store import IncidentNotFound, load_incident
from diagnosis.incidents import Incident

log = logging.getLogger(__name__)
_SUB_TYPES = {c.name: c.type for c in WEBHOOK_SUBSCRIPTIONS.columns}
_DELIVERY_TYPES = {c.name: c.type for c in WEBHOOK_DELIVERIES.columns}


class WebhookUrlError(ValueError):
    """A destination URL that is not allowed."""


def check_url(url: str, allowed_hosts: Collection[str]) -> SplitResult:
    """Return a parsed URL if its scheme is http(s) and its host is allowlisted; else raise.

    The host is taken after parsing, so `https://allowed.example@evil.test/` (userinfo) and
    `https://evil.test\\@allowed.example` are judged by the host they really reach.
    """
    if any(c in url for c in "\\\r\n\t ") or not url.isascii():
        raise WebhookUrlError("URL contains whitespace, backslashes or non-ASCII characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise WebhookUrlError(f"scheme {parts.scheme!r} not allowed (http or https only)")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise WebhookUrlError("URLs with user info are not allowed")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise WebhookUrlError("URL has no host")
    try:
        _ = parts.port
    except ValueError as exc:
        raise WebhookUrlError(f"bad port: {exc}") from exc
    allowed = {h.lower().rstrip(".") for h in allowed_hosts}
    if host not in allowed and not any(a.startswith(".") and host.endswith(a) for a in allowed):
        raise WebhookUrlError(f"host {host!r} is not in the webhook allowlist")
    return parts


class Subscription(BaseModel):
    """Where to send which events, in which format, signed with which secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    url: str = Field(repr=False, description="For Slack the credential itself: never logged.")
    secret: SecretStr = Field(description="HMAC key (PagerDuty: the routing key). Never logged.")
    events: list[EventType] = Field(min_length=1)
    format: Format = "trainguard"
    active: bool = True


def save_subscription(
    store: Store,
    sub: Subscription,
    allowed_hosts: Collection[str],
    sealer: Sealer | None = None,
) -> None:
    """Store a subscription, its URL and secret sealed, after checking the URL's host."""
    check_url(sub.url, allowed_hosts)
    _insert(store, sub, sealer or default_sealer())


def _insert(store: Store, sub: Subscription, sealer: Sealer) -> None:
    now = datetime.now(UTC)
    row: dict[str, Any] = {
        "id": sub.id,
        "seq": next_seq(),
        "url": sealer.seal(sub.url),
        "secret": sealer.seal(sub.secret.get_secret_value()),
        "events": [e.value for e in sub.events],
        "format": sub.format,
        "active": int(sub.active),
        "at": int(now.timestamp()),
        "at_us": now.microsecond,
    }
    store.insert(WEBHOOK_SUBSCRIPTIONS.name, {k: [v] for k, v in row.items()}, _SUB_TYPES)


def load_subscriptions(store: Store, sealer: Sealer | None = None) -> list[Subscription]:
    """Return the active subscriptions (latest version of each), URLs and secrets opened.

    Rows stored before sealing are read as plaintext. A subscription sealed with another key
    is left out, with an error logged (its id, never its values).
    """
    return [s for s in _latest(store, sealer or default_sealer()) if s.active]


def _latest(store: Store, sealer: Sealer) -> list[Subscription]:
    frame = store.query_df(
        f"SELECT id, argMax(url, seq) AS u, argMax(secret, seq) AS s, argMax(events, seq) AS e, "
        f"argMax(format, seq) AS f, argMax(active, seq) AS a "
        f"FROM `{store.database}`.`{WEBHOOK_SUBSCRIPTIONS.name}` GROUP BY id ORDER BY id"
    )
    subs = []
    for i, u, s, e, f, a in frame.itertuples(index=False):
        try:
            url, secret = sealer.open(str(u)), sealer.open(str(s))
        except SealError as exc:
            log.error("webhook subscription %s skipped: %s", i, exc)
            continue
        subs.append(
            Subscription(
                id=i, url=url, secret=SecretStr(secret), events=list(e), format=f, active=bool(a)
            )
        )
    return subs


def reseal_subscriptions(store: Store, sealer: Sealer | None = None) -> int:
    """Seal what was stored in plaintext before sealing; return how many subscriptions.

    The latest version of each subscription stored in plaintext is written again sealed
    (its host is not re-checked: it was allowed when stored), then every plaintext row,
    older versions too, is deleted (a ClickHouse mutation: gone shortly after). Idempotent.
    """
    sealer = sealer or default_sealer()
    table = f"`{store.database}`.`{WEBHOOK_SUBSCRIPTIONS.name}`"
    n = len(PREFIX)
    plain = f"substring(url, 1, {n}) != %(p)s OR substring(secret, 1, {n}) != %(p)s"
    if not query_scalar(store, f"SELECT count() AS n FROM {table} WHERE {plain}", {"p": PREFIX}):
        return 0
    frame = store.query_df(
        f"SELECT id, argMax(url, seq) AS u, argMax(secret, seq) AS s FROM {table} GROUP BY id"
    )
    stale = {
        str(i)
        for i, u, s in frame.itertuples(index=False)
        if not (is_sealed(str(u)) and is_sealed(str(s)))
    }
    resealed = [sub for sub in _latest(store, sealer) if sub.id in stale]
    for sub in resealed:
        _insert(store, sub, sealer)
    # a mutation goes to the table that stores the rows: in a cluster, <name>_local on
    # every server (a Distributed table refuses mutations)
    features = Features(cluster=store.cluster)
    rows = f"`{store.database}`.`{WEBHOOK_SUBSCRIPTIONS.local_name(features)}`{features.on}"
    store.command(f"ALTER TABLE {rows} DELETE WHERE {plain}", {"p": PREFIX})
    log.warning("sealed %d webhook subscription(s) stored in plaintext", len(resealed))
    return len(resealed)


@dataclass(frozen=True)
class Outcome:
    """How one delivery ended after its attempts."""

    delivery_id: str
    status: str  # delivered | dead | rejected | suppressed
    attempts: int
    http_status: int | None
    error: str | None


IncidentLookup = Callable[[str], Incident | None]
"""Returns an incident as stored now (latest revision and status), None if unknown."""


def stored_incident(store: Store) -> IncidentLookup:
    """Return a lookup of incidents in a store (a store that cannot answer: None, logged)."""

    def lookup(incident_id: str) -> Incident | None:
        try:
            return load_incident(store, incident_id)
        except IncidentNotFound:
            return None
        except StoreError as exc:
            log.warning("incident %s not read for its webhook: %s", incident_id, exc)
            return None

    return lookup


class Deliverer:
    """Sends events to subscriptions with retries, backoff with jitter and a dead letter.

    Transport errors, timeouts, 408, 429 and 5xx are retried after an exponential backoff
    with jitter, or after the receiver's `Retry-After` when that is longer (capped at
    `max_retry_after_s`); any other answer is final at once (dead, re-deliverable).
    """

    def __init__(
        self,
        store: Store,
        allowed_hosts: Collection[str],
        max_attempts: int = 5,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        timeout_s: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        console_url: str | None = None,
        max_retry_after_s: float = 60.0,
        incidents: IncidentLookup | None = None,
    ) -> None:
        self.store, self.allowed_hosts = store, list(allowed_hosts)
        self.max_attempts, self.backoff_s, self.max_backoff_s = (
            max_attempts,
            backoff_s,
            max_backoff_s,
        )
        self.timeout_s, self.sleep = timeout_s, sleep
        self.rng = rng or random.Random()
        self.console_url, self.max_retry_after_s = console_url, max_retry_after_s
        self.incidents = incidents or stored_incident(store)
        self._poster: Poster | None = None

    @property
    def poster(self) -> Poster:
        """The HTTP client, built on first use (proxy variables are read then)."""
        if self._poster is None:
            self._poster = Poster(self.timeout_s)
        return self._poster

    def backoff(self, attempt: int) -> float:
        """Return the wait before retry `attempt` (1-based): exponential, full jitter."""
        cap = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return cap / 2 + self.rng.uniform(0, cap / 2)

    def wait_before(self, attempt: int, answer: Answer) -> float:
        """Return the wait before retry `attempt`: the backoff, or a longer `Retry-After`."""
        asked = min(answer.retry_after_s or 0.0, self.max_retry_after_s)
        return max(self.backoff(attempt), asked)

    def deliver(self, sub: Subscription, event: WebhookEvent) -> Outcome:
        """Render and send one event; log every attempt in ClickHouse.

        Slack and PagerDuty bodies are rendered with the incident as stored now, so a
        PagerDuty event about an incident already resolved is suppressed (logged, not sent).
        """
        incident = self.incidents(event.incident_id) if sub.format != "trainguard" else None
        rendered = render(sub.format, event, incident, self.console_url)
        delivery_id = f"dlv-{uuid.uuid4().hex[:16]}"
        if rendered is None:
            why = "incident already closed: not sent"
            self._log_attempt(delivery_id, sub, event.type.value, 0, "suppressed", None, why, "")
            return Outcome(delivery_id, "suppressed", 0, None, why)
        body = json.dumps(rendered, sort_keys=True, default=str)
        return self.send(sub, event.type.value, body, delivery_id)

    def send(self, sub: Subscription, event: str, body: str, delivery_id: str) -> Outcome:
        """Send a stored body (first delivery or re-delivery) until it lands or is dead."""
        try:
            parts = check_url(sub.url, self.allowed_hosts)
        except WebhookUrlError as exc:
            self._log_attempt(delivery_id, sub, event, 0, "rejected", None, str(exc), body)
            return Outcome(delivery_id, "rejected", 0, None, str(exc))
        answer = Answer(None, "not sent")
        for attempt in range(1, self.max_attempts + 1):
            answer = self._attempt(sub, body)
            if answer.ok:
                self._log_attempt(
                    delivery_id, sub, event, attempt, "delivered", answer.status, "", body
                )
                return Outcome(delivery_id, "delivered", attempt, answer.status, None)
            last = attempt == self.max_attempts or not answer.retryable
            error = answer.error or ""
            state = "dead" if last else "retrying"
            self._log_attempt(delivery_id, sub, event, attempt, state, answer.status, error, body)
            log.warning("webhook %s to %s attempt %d: %s", sub.id, parts.hostname, attempt, error)
            if last:
                return Outcome(delivery_id, "dead", attempt, answer.status, answer.error)
            self.sleep(self.wait_before(attempt, answer))
        return Outcome(delivery_id, "dead", self.max_attempts, answer.status, answer.error)

    def _attempt(self, sub: Subscription, body: str) -> Answer:
        secret = sub.secret.get_secret_value()
        payload = body.replace(ROUTING_KEY_PLACEHOLDER, secret).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "trainguard-webhooks/1",
            HEADER: sign(secret, payload, int(time.time())),
        }
        return self.poster.post(sub.url, payload, headers)

    def _log_attempt(
        self,
        delivery_id: str,
        sub: Subscription,
        event: str,
        attempt: int,
        status: str,
        http_status: int | None,
        error: str,
        body: str,
    ) -> None:
        now = datetime.now(UTC)
        row: dict[str, Any] = {
            "delivery_id": delivery_id,
            "seq": next_seq(),
            "at": int(now.timestamp()),
            "at_us": now.microsecond,
            "subscription_id": sub.id,
            "event": event,
            "attempt": attempt,
            "status": status,
            "http_status": http_status if http_status is not None else -1,
            "error": error[:1000],
            "body": body,
        }
        self.store.insert(
            WEBHOOK_DELIVERIES.name, {k: [v] for k, v in row.items()}, _DELIVERY_TYPES
        )

    def redeliver(self, delivery_id: str) -> Outcome:
        """Send a logged delivery again (e.g. a dead letter once the receiver is fixed)."""
        frame = self.store.query_df(
            f"SELECT argMax(subscription_id, seq) AS s, argMax(event, seq) AS e, "
            f"argMax(body, seq) AS b FROM `{self.store.database}`.`{WEBHOOK_DELIVERIES.name}` "
            f"WHERE delivery_id = %(id)s GROUP BY delivery_id",
            {"id": delivery_id},
        )
        if frame.empty:
            raise LookupError(f"no delivery {delivery_id!r}")
        sub_id, event, body = (str(v) for v in frame.iloc[0])
        subs = {s.id: s for s in load_subscriptions(self.store)}
        if sub_id not in subs:
            raise LookupError(f"subscription {sub_id!r} of {delivery_id!r} is gone or inactive")
        return self.send(subs[sub_id], event, body, delivery_id)


def deliveries(store: Store, delivery_id: str | None = None) -> list[dict[str, Any]]:
    """Return logged delivery attempts, oldest first."""
    where = "delivery_id = %(id)s" if delivery_id else "1"
    frame = store.query_df(
        f"SELECT delivery_id, subscription_id, event, attempt, status, http_status, error, body "
        f"FROM `{store.database}`.`{WEBHOOK_DELIVERIES.name}` WHERE {where} ORDER BY seq",
        {"id": delivery_id or ""},
    )
    return [dict(zip(frame.columns, row, strict=True)) for row in frame.itertuples(index=False)]


class Dispatcher:
    """Fans events out to matching subscriptions on worker threads (the engine never waits).

    The events of one incident go through one worker, in the order they were published, so
    a receiver never sees an incident resolved before the action event that came before it.
    """

    def __init__(self, deliverer: Deliverer, workers: int = 2) -> None:
        self.deliverer = deliverer
        self._lanes = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"tg-webhook-{n}")
            for n in range(max(1, workers))
        ]
        self._pending: list[Future[Outcome]] = []

    def publish(self, event: WebhookEvent) -> None:
        """Queue an event for every active subscription that asked for its type."""
        lane = self._lanes[zlib.crc32(event.incident_id.encode()) % len(self._lanes)]
        for sub in load_subscriptions(self.deliverer.store):
            if event.type in sub.events:
                self._pending.append(lane.submit(self.deliverer.deliver, sub, event))

    def wait(self, timeout_s: float = 60.0) -> list[Outcome]:
        """Wait for every queued delivery; return their outcomes."""
        pending, self._pending = self._pending, []
        return [f.result(timeout=timeout_s) for f in pending]

    def close(self) -> None:
        """Finish queued deliveries and stop the workers."""
        for lane in self._lanes:
            lane.shutdown(wait=True)
