"""Webhook payload formats: TrainGuard JSON, Slack (slack.py), PagerDuty Events v2 (pagerduty.py).

A format is one entry in `_RENDERERS`. A renderer may return None: the event means nothing in
that format (PagerDuty: an event about an incident already resolved) and is not sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from actions.webhooks.events import EventType, WebhookEvent, console_link
from actions.webhooks.pagerduty import ROUTING_KEY_PLACEHOLDER, pagerduty_event
from actions.webhooks.slack import slack_message
from diagnosis.incidents import Incident

__all__ = [
    "ROUTING_KEY_PLACEHOLDER",
    "EventType",
    "Format",
    "WebhookEvent",
    "console_link",
    "render",
]

Format = Literal["trainguard", "slack", "pagerduty"]
Renderer = Callable[[WebhookEvent, Incident | None, str | None], dict[str, Any] | None]


def _trainguard(
    e: WebhookEvent, incident: Incident | None, console_url: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"schema_version": 1, **e.model_dump(mode="json")}
    link = console_link(console_url, e.incident_id)
    if link is not None:
        body["console_url"] = link
    return body


_RENDERERS: dict[str, Renderer] = {
    "trainguard": _trainguard,
    "slack": slack_message,
    "pagerduty": pagerduty_event,
}


def render(
    fmt: Format,
    event: WebhookEvent,
    incident: Incident | None = None,
    console_url: str | None = None,
) -> dict[str, Any] | None:
    """Return the JSON body of an event in a subscription's format (None: not sent).

    `incident` is the incident as stored now (status, suspects), where known: PagerDuty takes
    the affected host and the lifecycle from it.
    """
    return _RENDERERS[fmt](event, incident, console_url)
