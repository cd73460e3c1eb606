"""What the action engine tells the world: audit rows, the actions topic and webhooks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from actions import store as db
from actions.model import ActionPlan, ActionResult, Mode, State
from actions.webhooks.delivery import Dispatcher
from actions.webhooks.formats import EventType, WebhookEvent
from analytics.store import Store
from diagnosis.incidents import Incident
from ingest.action_events import ActionEvent, encode_action_event
from ingest.bus import BusError, Producer

log = logging.getLogger(__name__)


class Outbox:
    """Audits every engine event in ClickHouse, publishes action changes, notifies webhooks."""

    def __init__(
        self,
        store: Store,
        actor: str,
        mode: Mode,
        clock: Callable[[], datetime],
        producer: Producer | None = None,
        actions_topic: str = "tg.actions",
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.store, self.actor, self.mode, self.clock = store, actor, mode, clock
        self.producer, self.actions_topic, self.dispatcher = producer, actions_topic, dispatcher

    def audit(
        self,
        event: str,
        plan: ActionPlan | None = None,
        incident_id: str = "",
        component_key: str = "",
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Write one audit row (who: this engine's actor, in its mode)."""
        db.write_audit(
            self.store,
            event,
            self.clock(),
            self.actor,
            self.mode,
            plan,
            incident_id,
            component_key,
            detail,
        )

    def publish(
        self, kind: EventType, plan: ActionPlan, state: State, result: ActionResult | None = None
    ) -> None:
        """Put an action's change on the actions topic and tell the webhook subscribers."""
        if self.producer is not None:
            event = ActionEvent(
                event=kind.value,  # an action.* webhook type
                ts=self.clock(),
                cluster=plan.cluster,  # also in the plan; here for consumers that filter
                state=state,
                plan=plan,
                result=result,
            )
            try:
                self.producer.send_raw(
                    self.actions_topic, event.key.encode(), encode_action_event(event)
                )
            except BusError as exc:  # the audit row is the record; the topic is a feed
                log.warning("action %s not published on the actions topic: %s", plan.action_id, exc)
        data = {
            "action_id": plan.action_id,
            "kind": plan.kind.value,
            "cluster": plan.cluster,
            "target": plan.target.key(),
            "what": plan.what,
            "state": state.value,
        }
        if result is not None:
            data["result"] = result.detail or result.error or ""
        self.notify(kind, plan.incident_id, f"{plan.kind.value} {state.value}: {plan.what}", data)

    def incident(self, incident: Incident, first: bool) -> None:
        """Tell the webhook subscribers an incident opened (first sighting) or changed."""
        kind = EventType.INCIDENT_OPENED if first else EventType.INCIDENT_UPDATED
        data = {
            "category": incident.category.value,
            "blame": incident.blame.value,
            "job": incident.job,
            "revision": incident.revision,
        }
        self.notify(kind, incident.id, incident.summary, data, incident.severity.value)

    def notify(
        self,
        kind: EventType,
        incident_id: str,
        summary: str,
        data: dict[str, Any],
        severity: str = "error",
    ) -> None:
        """Queue one webhook event (its id makes a redelivered event the same event)."""
        if self.dispatcher is None:
            return
        event_id = f"{kind.value}:{incident_id}:{data.get('action_id', data.get('revision', ''))}"
        self.dispatcher.publish(
            WebhookEvent(
                id=event_id,
                type=kind,
                at=self.clock(),
                incident_id=incident_id,
                summary=summary,
                severity=severity,
                data=data,
            )
        )
