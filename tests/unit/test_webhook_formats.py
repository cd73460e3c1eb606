"""Slack within Block Kit limits, PagerDuty's lifecycle, Retry-After and alert labels, no I/O."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from actions.alertmanager import alert_labels, incident_alert
from actions.webhooks.events import EventType, WebhookEvent
from actions.webhooks.formats import render
from actions.webhooks.pagerduty import event_action
from actions.webhooks.slack import (
    BLOCKS_MAX,
    FIELD_MAX,
    FIELDS_MAX,
    HEADER_MAX,
    SECTION_MAX,
    TEXT_MAX,
)
from actions.webhooks.transport import Answer, parse_retry_after
from diagnosis.model import IncidentStatus
from tests.actions_builders import make_incident
from trainguard.settings import AlertmanagerSettings

HUGE = 200_000
NOW = datetime(2026, 12, 2, 4, 0, tzinfo=UTC)


def _event(event_type: EventType = EventType.INCIDENT_OPENED, **kw) -> WebhookEvent:
    base = {
        "id": "e1",
        "type": event_type,
        "at": NOW,
        "incident_id": "inc-1",
        "summary": "gpu.hardware on node-0001 GPU 3",
        "severity": "critical",
    }
    return WebhookEvent(**{**base, **kw})


def _texts(message: dict) -> list[tuple[str, str]]:
    """Return (kind, text) of every text in a Slack message."""
    found = [("fallback", message["text"])]
    for block in message["blocks"]:
        if block["type"] == "header":
            found.append(("header", block["text"]["text"]))
        if "text" in block and block["type"] == "section":
            found.append(("section", block["text"]["text"]))
        found += [("field", f["text"]) for f in block.get("fields", [])]
    return found


def test_slack_texts_stay_within_block_kit_limits_with_huge_inputs():
    incident = make_incident(1).model_copy(
        update={"evidence": ["Xid 79 " + "x" * HUGE for _ in range(50)]}
    )
    event = _event(
        incident_id="inc-" + "9" * HUGE,
        summary="<!channel> & " + "s" * HUGE,
        data={f"key{n}": "v" * HUGE for n in range(200)} | {"nested": {"a": ["b" * HUGE]}},
    )
    message = render("slack", event, incident, "https://console.example.test")
    limits = {
        "fallback": TEXT_MAX,
        "header": HEADER_MAX,
        "section": SECTION_MAX,
        "field": FIELD_MAX,
    }
    texts = _texts(message)
    for kind, text in texts:
        assert len(text) <= limits[kind], kind
    cut = [t for k, t in texts if k in ("fallback", "header") or t.startswith(("*key", "&lt;"))]
    # fallback, header, summary; the fields: severity, status, category, node, then data keys
    assert len(cut) == 3 + (FIELDS_MAX - 1 - 4) and all(t.endswith("…") for t in cut)
    (evidence,) = [t for k, t in texts if k == "section" and t.startswith("```")]
    assert evidence.endswith("…```")
    assert [t for k, t in texts if k == "field"][-1].startswith("*more*\n")
    assert len(message["blocks"]) <= BLOCKS_MAX
    assert all(len(b.get("fields", [])) <= FIELDS_MAX for b in message["blocks"])
    assert "<!channel>" not in json.dumps(message) and "&lt;!channel&gt; &amp; " in texts[2][1]
    assert len(json.dumps(message)) < 60_000  # a few limits' worth, not the 40 MB put in


def test_slack_truncation_never_cuts_an_escape_in_half():
    for n in range(SECTION_MAX - 10, SECTION_MAX + 5):
        summary = "a" * n + "<" * 10
        section = render("slack", _event(summary=summary))["blocks"][1]["text"]["text"]
        assert len(section) <= SECTION_MAX
        head = section.removesuffix("…")
        assert head.count("&") == head.count("&lt;")  # only whole escapes


def test_slack_small_message_is_whole_with_a_console_button():
    message = render("slack", _event(), make_incident(1), "https://console.example.test/")
    assert message["blocks"][1]["text"]["text"] == "gpu.hardware on node-0001 GPU 3"
    (button,) = message["blocks"][-1]["elements"]
    assert button["url"] == "https://console.example.test/?page=incident&id=inc-1"
    node = next(f["text"] for f in message["blocks"][2]["fields"] if f["text"].startswith("*node"))
    assert node == "*node*\nnode-0001 GPU 3"


@pytest.mark.parametrize(
    ("event_type", "state", "status", "wanted"),
    [
        (EventType.INCIDENT_OPENED, None, IncidentStatus.OPEN, "trigger"),
        (EventType.INCIDENT_UPDATED, None, IncidentStatus.MITIGATING, "acknowledge"),
        (EventType.ACTION_PLANNED, "planned", IncidentStatus.OPEN, "trigger"),
        (EventType.ACTION_PLANNED, "approved", IncidentStatus.OPEN, "acknowledge"),
        (EventType.ACTION_EXECUTED, "done", IncidentStatus.OPEN, "acknowledge"),
        (EventType.ACTION_EXECUTED, "skipped", IncidentStatus.OPEN, "trigger"),
        (EventType.ACTION_FAILED, "failed", IncidentStatus.MITIGATING, "trigger"),
        (EventType.INCIDENT_RESOLVED, None, IncidentStatus.RESOLVED, "resolve"),
        (EventType.ACTION_FAILED, "failed", IncidentStatus.RESOLVED, None),
        (EventType.ACTION_EXECUTED, "done", IncidentStatus.FALSE_ALARM, None),
        (EventType.INCIDENT_UPDATED, None, IncidentStatus.RESOLVED, None),
    ],
)
def test_pagerduty_event_action_follows_the_lifecycle(event_type, state, status, wanted):
    incident = make_incident(1).model_copy(update={"status": status})
    data = {"state": state} if state else {}
    assert event_action(_event(event_type, data=data), incident) == wanted
    body = render("pagerduty", _event(event_type, data=data), incident)
    assert (body["event_action"] if body else None) == wanted
    if body and wanted != "trigger":
        assert "payload" not in body


def test_pagerduty_trigger_names_the_host_and_links_back():
    body = render("pagerduty", _event(), make_incident(1), "https://console.example.test")
    assert body is not None and body["payload"]["source"] == "node-0001"
    assert body["payload"]["custom_details"]["category"] == "gpu.hardware"
    assert body["client_url"] == body["links"][0]["href"]
    without = render("pagerduty", _event(data={"job": "job-9"}))
    assert without is not None and without["payload"]["source"] == "job-9"
    assert "links" not in without


def test_retry_after_parses_seconds_and_dates():
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Wed, 02 Dec 2026 04:01:30 GMT", now=NOW) == 90.0
    assert parse_retry_after("Wed, 02 Dec 2026 03:00:00 GMT", now=NOW) == 0.0  # past: now
    for bad in (None, "", "soon", "-5", "1.5e3"):
        assert parse_retry_after(bad) is None
    assert Answer(None, "ConnectError").retryable and Answer(429, "").retryable
    assert not Answer(404, "").retryable and not Answer(301, "").retryable


def test_alert_labels_and_times():
    incident = make_incident(1, job=None, at=NOW)
    labels = alert_labels(incident)
    assert labels["cluster"] == "default" and "job" not in labels and labels["gpu"] == "3"
    alert = incident_alert(incident, None, NOW, 60.0)
    assert alert["endsAt"] == (NOW + timedelta(minutes=4)).isoformat()
    assert "generatorURL" not in alert
    closed = incident_alert(incident, NOW - timedelta(hours=1), NOW, 60.0)
    assert closed["endsAt"] == closed["startsAt"]  # never before the start


def test_alertmanager_settings_refuse_half_configured_auth(monkeypatch, tmp_path):
    monkeypatch.setenv("TG_ALERTMANAGER_URL", "http://am.example.test:9093")
    monkeypatch.setenv("TG_ALERTMANAGER_USERNAME", "tg")
    with pytest.raises(ValidationError, match="PASSWORD_FILE"):
        AlertmanagerSettings()
    monkeypatch.setenv("TG_ALERTMANAGER_PASSWORD_FILE", str(tmp_path / "pw"))
    monkeypatch.setenv("TG_ALERTMANAGER_BEARER_TOKEN_FILE", str(tmp_path / "tok"))
    with pytest.raises(ValidationError, match="not both"):
        AlertmanagerSettings()
    monkeypatch.setenv("TG_ALERTMANAGER_URL", "http://user:pw@am.example.test")
    with pytest.raises(ValidationError):
        AlertmanagerSettings()
