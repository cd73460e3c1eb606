"""What the action engine does to incidents: mitigating, escalated (back to open), resolved."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from actions.model import ActionPlan
from actions.outbox import Outbox
from actions.webhooks.formats import EventType
from analytics.store import Store
from diagnosis.incident_store import IncidentNotFound, load_incident, record_transition
from diagnosis.lifecycle import Transition, is_final
from diagnosis.model import IncidentStatus

log = logging.getLogger(__name__)


class IncidentUpdates:
    """Moves an incident's status for the engine; a final or missing incident is left alone."""

    def __init__(self, store: Store, out: Outbox, actor: str, clock: Callable[[], datetime]):
        self.store, self.out, self.actor, self.clock = store, out, actor, clock

    def transition(self, incident_id: str, to: IncidentStatus, reason: str) -> None:
        """Record a status change unless the incident is already there or final."""
        try:
            current = load_incident(self.store, incident_id)
        except IncidentNotFound:
            return
        if current.status == to or is_final(current.status):
            return
        record_transition(
            self.store,
            Transition(
                incident_id=incident_id,
                status=to,
                reason=reason[:2000],
                actor=self.actor,
                at=self.clock(),
            ),
        )

    def mitigating(self, plan: ActionPlan) -> None:
        """An action of the incident starts executing."""
        self.transition(
            plan.incident_id, IncidentStatus.MITIGATING, f"{plan.kind.value}: {plan.what}"
        )

    def escalate(self, plan: ActionPlan, reason: str) -> None:
        """Give the incident back to people: audited, reopened."""
        log.warning("incident %s escalated: %s", plan.incident_id, reason)
        self.out.audit("escalated", plan, detail={"reason": reason})
        self.transition(plan.incident_id, IncidentStatus.OPEN, f"escalated: {reason}")

    def close(self, incident_id: str, reason: str) -> None:
        """Resolve the incident, audited and told to the webhook subscribers."""
        self.transition(incident_id, IncidentStatus.RESOLVED, reason)
        self.out.audit("closed", incident_id=incident_id, detail={"reason": reason})
        self.out.notify(EventType.INCIDENT_RESOLVED, incident_id, reason, {})
