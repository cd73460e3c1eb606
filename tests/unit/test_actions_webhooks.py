"""Webhook signing, replay rejection, URL allowlisting and payload formats, with no I/O."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime

import pytest

from actions.webhooks.delivery import Deliverer, WebhookUrlError, check_url
from actions.webhooks.formats import ROUTING_KEY_PLACEHOLDER, EventType, WebhookEvent, render
from actions.webhooks.signing import ReplayCache, sign, verify_signature

SECRET = "s3cret-value"
BODY = b'{"hello": "world"}'


def test_signature_verifies_and_rejects_tampering_old_timestamps_and_replays():
    header = sign(SECRET, BODY, 1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    assert verify_signature(SECRET, header, BODY, 300, now=1_700_000_100)
    assert not verify_signature(SECRET, header, BODY + b" ", 300, now=1_700_000_100)
    assert not verify_signature("other", header, BODY, 300, now=1_700_000_100)
    assert not verify_signature(SECRET, header, BODY, 300, now=1_700_000_301)  # too old
    assert not verify_signature(SECRET, header, BODY, 300, now=1_699_999_000)  # from the future
    forged_ts = header.replace("t=1700000000", "t=1700000200")
    assert not verify_signature(SECRET, forged_ts, BODY, 300, now=1_700_000_200)
    for bad in ("", "garbage", "t=abc,v1=00", "v1=00"):
        assert not verify_signature(SECRET, bad, BODY, 300, now=1_700_000_000)
    cache = ReplayCache()
    assert verify_signature(SECRET, header, BODY, 300, now=1_700_000_010, replays=cache)
    assert not verify_signature(SECRET, header, BODY, 300, now=1_700_000_011, replays=cache)


ALLOWED = ["hooks.example.com", ".corp.example", "127.0.0.1"]


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/x",
        "http://127.0.0.1:8080/hook?a=1",
        "https://pager.corp.example/v2/enqueue",
    ],
)
def test_allowlisted_urls_pass(url):
    assert check_url(url, ALLOWED).hostname


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com@evil.test/x",  # userinfo: the real host is evil.test
        "https://user:pw@hooks.example.com/x",
        "https://evil.test\\@hooks.example.com/",
        "https://evil.test#@hooks.example.com",
        "file:///etc/passwd",
        "gopher://hooks.example.com/",
        "ftp://hooks.example.com/",
        "https://hooks.example.com.evil.test/",
        "https://corp.example.evil/",
        "https:///nohost",
        "https://hooks.example.com:99999/",
        "https://hooks.example.com/\nX-Injected: 1",
    ],
)
def test_tricky_urls_are_rejected(url):
    with pytest.raises(WebhookUrlError):
        check_url(url, ALLOWED)


def _event(kind: EventType = EventType.ACTION_FAILED) -> WebhookEvent:
    return WebhookEvent(
        id="e1",
        type=kind,
        at=datetime(2026, 12, 1, tzinfo=UTC),
        incident_id="inc-1",
        summary="gpu.hardware on node-0001 GPU 3",
        severity="critical",
        data={"target": "node=node-0001", "kind": "isolate_node"},
    )


def test_payload_formats():
    tg = render("trainguard", _event())
    assert tg["type"] == "action.failed" and tg["schema_version"] == 1
    slack = render("slack", _event())
    assert "inc-1" in slack["text"] and slack["blocks"][0]["type"] == "header"
    pd = render("pagerduty", _event())
    assert pd["routing_key"] == ROUTING_KEY_PLACEHOLDER and pd["event_action"] == "trigger"
    assert pd["dedup_key"] == "inc-1" and pd["payload"]["severity"] == "critical"
    assert pd["payload"]["source"] == "trainguard"
    resolved = render("pagerduty", _event(EventType.INCIDENT_RESOLVED))
    assert resolved["event_action"] == "resolve" and "payload" not in resolved
    json.dumps([tg, slack, pd])


def test_backoff_grows_exponentially_with_jitter_and_a_cap():
    d = Deliverer(
        store=None,
        allowed_hosts=[],
        backoff_s=1.0,
        max_backoff_s=8.0,  # type: ignore[arg-type]
        rng=random.Random(1),
    )
    waits = [d.backoff(n) for n in range(1, 7)]
    for n, w in enumerate(waits, start=1):
        cap = min(8.0, 2 ** (n - 1))
        assert cap / 2 <= w <= cap
    assert len({round(w, 6) for w in waits}) == len(waits)
