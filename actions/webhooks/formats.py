"""Webhook events and their payload formats: TrainGuard JSON, Slack, PagerDuty Events v2."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

# PagerDuty wants its routing key in the body: it is filled in at send time only, so the body
# stored in ClickHouse (and re-delivered from there) never carries it.
ROUTING_KEY_PLACEHOLDER = "__TRAINGUARD_ROUTING_KEY__"

Format = Literal["trainguard", "slack", "pagerduty"]


class EventType(StrEnum):
    """What a subscription can ask for."""

    INCIDENT_OPENED = "incident.opened"
    INCIDENT_UPDATED = "incident.updated"
    INCIDENT_RESOLVED = "incident.resolved"
    ACTION_PLANNED = "action.planned"
    ACTION_EXECUTED = "action.executed"
    ACTION_FAILED = "action.failed"


class WebhookEvent(BaseModel):
    """One event sent to subscribers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="Deterministic: a re-sent event keeps its id.")
    type: EventType
    at: AwareDatetime
    incident_id: str
    summary: str
    severity: str = "error"
    data: dict[str, Any] = Field(default_factory=dict)


def _trainguard(e: WebhookEvent) -> dict[str, Any]:
    return {"schema_version": 1, **e.model_dump(mode="json")}


def _slack(e: WebhookEvent) -> dict[str, Any]:
    title = f"[TrainGuard] {e.type.value}: {e.incident_id}"
    fields = [{"type": "mrkdwn", "text": f"*{k}*\n{v}"} for k, v in list(e.data.items())[:8]]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": e.summary[:2900]}},
    ]
    if fields:
        blocks.append({"type": "section", "fields": fields})
    return {"text": f"{title}: {e.summary}"[:3000], "blocks": blocks}


_PD_SEVERITY = {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}


def _pagerduty(e: WebhookEvent) -> dict[str, Any]:
    resolve = e.type == EventType.INCIDENT_RESOLVED
    body: dict[str, Any] = {
        "routing_key": ROUTING_KEY_PLACEHOLDER,
        "event_action": "resolve" if resolve else "trigger",
        "dedup_key": e.incident_id,
    }
    if not resolve:
        body["payload"] = {
            "summary": e.summary[:1024],
            "source": "trainguard",
            "severity": _PD_SEVERITY.get(e.severity, "error"),
            "timestamp": e.at.isoformat(),
            "component": str(e.data.get("target", "")) or None,
            "class": e.type.value,
            "custom_details": e.data,
        }
    return body


def render(fmt: Format, event: WebhookEvent) -> dict[str, Any]:
    """Return the JSON body of an event in a subscription's format."""
    return {"trainguard": _trainguard, "slack": _slack, "pagerduty": _pagerduty}[fmt](event)
