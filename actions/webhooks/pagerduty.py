"""PagerDuty Events API v2: one alert per incident, following the incident's lifecycle.

The dedup key is the incident id, so every event of an incident lands on one PagerDuty alert.
`trigger` opens (or adds to) it, `acknowledge` says someone is on it (the incident is being
mitigated, or an action was approved, started or done), `resolve` closes it. Once an incident
is resolved or a false alarm nothing but `resolve` is sent: PagerDuty would open a new page for
a trigger on a resolved dedup key, so a late action event must not become one.
"""

from __future__ import annotations

from typing import Any, Literal

from actions.webhooks.events import EventType, WebhookEvent, console_link
from diagnosis.incidents import Incident
from diagnosis.lifecycle import is_final
from diagnosis.model import IncidentStatus

# PagerDuty wants its routing key in the body: it is filled in at send time only, so the body
# stored in ClickHouse (and re-delivered from there) never carries it.
ROUTING_KEY_PLACEHOLDER = "__TRAINGUARD_ROUTING_KEY__"
SUMMARY_MAX = 1024
SOURCE_MAX = 255
EventAction = Literal["trigger", "acknowledge", "resolve"]
_SEVERITY = {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}
_ACK_STATES = frozenset({"approved", "executing", "waiting", "done"})


def event_action(event: WebhookEvent, incident: Incident | None) -> EventAction | None:
    """Return what an event does to the page; None: nothing (the incident is already closed)."""
    if event.type == EventType.INCIDENT_RESOLVED:
        return "resolve"
    if incident is not None and is_final(incident.status):
        return None
    acting = event.type in (EventType.ACTION_PLANNED, EventType.ACTION_EXECUTED)
    if acting and event.data.get("state") in _ACK_STATES:
        return "acknowledge"
    mitigating = incident is not None and incident.status == IncidentStatus.MITIGATING
    return "acknowledge" if mitigating and event.type != EventType.ACTION_FAILED else "trigger"


def source(event: WebhookEvent, incident: Incident | None) -> str:
    """Return the affected host: the top suspect's node, else the job, else `trainguard`."""
    node = next((s.node for s in incident.suspects if s.node), None) if incident else None
    job = (incident.job if incident else None) or event.data.get("job")
    return str(node or job or "trainguard")[:SOURCE_MAX]


def _details(event: WebhookEvent, incident: Incident | None) -> dict[str, Any]:
    details: dict[str, Any] = {"event": event.type.value, **event.data}
    if incident is not None:
        top = incident.suspects[0] if incident.suspects else None
        details.update(
            {
                "category": incident.category.value,
                "blame": incident.blame.value,
                "status": incident.status.value,
                "job": incident.job,
                "node": top.node if top else None,
                "gpu": top.gpu if top else None,
                "suspect": top.explanation if top else None,
                "recommended_action": incident.action.value,
                "evidence": incident.evidence[:10],
                "detected_at": incident.detected_at.isoformat(),
            }
        )
    return details


def pagerduty_event(
    event: WebhookEvent, incident: Incident | None = None, console_url: str | None = None
) -> dict[str, Any] | None:
    """Return the Events v2 body of an event (routing key as a placeholder), or None to skip."""
    action = event_action(event, incident)
    if action is None:
        return None
    body: dict[str, Any] = {
        "routing_key": ROUTING_KEY_PLACEHOLDER,
        "event_action": action,
        "dedup_key": event.incident_id,
    }
    if action != "trigger":
        return body  # acknowledge and resolve take no payload
    top = incident.suspects[0] if incident and incident.suspects else None
    body["payload"] = {
        "summary": event.summary[:SUMMARY_MAX],
        "source": source(event, incident),
        "severity": _SEVERITY.get(event.severity, "error"),
        "timestamp": event.at.isoformat(),
        "component": (f"gpu {top.gpu}" if top and top.gpu is not None else None)
        or str(event.data.get("target", ""))
        or None,
        "group": incident.job if incident else event.data.get("job"),
        "class": incident.category.value if incident else event.type.value,
        "custom_details": _details(event, incident),
    }
    body["client"] = "TrainGuard"
    link = console_link(console_url, event.incident_id)
    if link is not None:
        body["client_url"] = link
        body["links"] = [{"href": link, "text": "Incident in the TrainGuard console"}]
    return body
