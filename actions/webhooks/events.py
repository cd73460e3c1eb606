"""Webhook events: what a subscription can ask for, and the one event model every format renders."""

from __future__ import annotations

from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


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


def console_link(console_url: str | None, incident_id: str) -> str | None:
    """Return the console page of an incident (`?page=incident&id=...`), or None without a URL."""
    if not console_url:
        return None
    return f"{console_url.rstrip('/')}/?{urlencode({'page': 'incident', 'id': incident_id})}"
