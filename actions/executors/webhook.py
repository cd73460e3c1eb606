"""Webhook executor: an operator's endpoint performs the action (diagnostics, tickets...).

The plan is POSTed as signed TrainGuard JSON; a 2xx answer means the endpoint accepted it.
One instance per action kind, each its own registry entry.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed
from actions.registry import ActionRequest, make_plan
from actions.webhooks.delivery import Deliverer, Subscription
from actions.webhooks.formats import EventType, WebhookEvent


class OperatorWebhook:
    """Ask an operator endpoint to perform one kind of action."""

    name = "webhook"

    def __init__(
        self,
        kind: ActionKind,
        deliverer: Deliverer,
        subscription: Subscription,
        risk: Risk = Risk.LOW,
    ) -> None:
        self.kind, self.deliverer, self.subscription, self.risk = (
            kind,
            deliverer,
            subscription,
            risk,
        )

    def plan(self, request: ActionRequest) -> ActionPlan:
        what = f"POST {self.kind.value} for {request.target.key()} to {self.subscription.id}"
        return make_plan(self, request, what, evidence=request.incident.evidence[:20])

    def execute(self, plan: ActionPlan) -> ActionResult:
        event = WebhookEvent(
            id=plan.action_id,
            type=EventType.ACTION_PLANNED,
            at=datetime.now(UTC),
            incident_id=plan.incident_id,
            summary=f"{plan.kind.value}: {plan.why}",
            data={"perform": plan.kind.value, "plan": json.loads(plan.model_dump_json())},
        )
        outcome = self.deliverer.deliver(self.subscription, event)
        if outcome.status == "delivered":
            return done(
                f"{self.subscription.id} accepted ({outcome.http_status})",
                delivery=outcome.delivery_id,
            )
        return failed(
            f"{self.subscription.id}: {outcome.status} after {outcome.attempts} "
            f"attempt(s): {outcome.error}"
        )

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # receivers deduplicate on the event id (= action id)


class NoEndpoint:
    """Stands in for an operator action when no endpoint is configured: recorded, skipped."""

    name = "none"
    risk = Risk.LOW

    def __init__(self, kind: ActionKind) -> None:
        self.kind = kind

    def plan(self, request: ActionRequest) -> ActionPlan:
        return make_plan(self, request, "no operator endpoint, audit only")

    def execute(self, plan: ActionPlan) -> ActionResult:
        from actions.model import skipped

        return skipped("no operator endpoint configured (TG_ACT_OPERATOR_URL)")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None
