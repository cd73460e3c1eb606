"""Remediation webhooks: subscriptions, test deliveries, the delivery log, re-delivery."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import SecretStr

from actions.webhooks.delivery import (
    Deliverer,
    Outcome,
    Subscription,
    WebhookUrlError,
    deliveries,
    load_subscriptions,
    save_subscription,
)
from actions.webhooks.formats import WebhookEvent
from actions.webhooks.sealing import fingerprint, mask_url
from api.context import Admin, ApiContext, Ctx
from api.models import (
    ERRORS,
    DeliveryView,
    NewSubscription,
    OutcomeView,
    SubscriptionView,
)
from api.problems import NotFound

router = APIRouter(responses=ERRORS, prefix="/v1/webhooks", tags=["webhooks"])


@router.get("", response_model=list[SubscriptionView])
def list_webhooks(ctx: Ctx, _who: Admin) -> list[SubscriptionView]:
    """List active subscriptions."""
    return [_view(s) for s in load_subscriptions(ctx.store)]


@router.post("", response_model=SubscriptionView, status_code=201)
def create_webhook(body: NewSubscription, ctx: Ctx, who: Admin) -> SubscriptionView:
    """Create or replace a subscription; its host must be on the allowlist."""
    sub = Subscription(
        id=body.id,
        url=body.url,
        secret=SecretStr(body.secret),
        events=body.events,
        format=body.format,
    )
    try:
        save_subscription(ctx.store, sub, _deliverer(ctx).allowed_hosts)
    except WebhookUrlError as exc:
        raise HTTPException(422, f"url: {exc}") from exc
    ctx.audit(who, "POST", "webhooks", body.id, 201, _shown(body.url))
    return _view(sub)


@router.delete("/{webhook_id}", status_code=204)
def delete_webhook(webhook_id: str, ctx: Ctx, who: Admin) -> None:
    """Deactivate a subscription (its delivery log stays)."""
    sub = _subscription(ctx, webhook_id)
    save_subscription(
        ctx.store, sub.model_copy(update={"active": False}), _deliverer(ctx).allowed_hosts
    )
    ctx.audit(who, "DELETE", "webhooks", webhook_id, 204, "")


@router.post("/{webhook_id}/test", response_model=OutcomeView)
def test_webhook(webhook_id: str, ctx: Ctx, who: Admin) -> OutcomeView:
    """Send a signed test event now (with the usual retries) and say how it went."""
    sub = _subscription(ctx, webhook_id)
    event = WebhookEvent(
        id=f"test-{uuid.uuid4().hex[:12]}",
        type=sub.events[0],
        at=datetime.now(UTC),
        incident_id="inc-test",
        summary=f"TrainGuard test delivery to {webhook_id}, sent by {who.name}",
        severity="info",
    )
    outcome = _deliverer(ctx).deliver(sub, event)
    ctx.audit(who, "POST", "webhooks/test", webhook_id, 200, outcome.status)
    return _outcome(outcome)


@router.get("/{webhook_id}/deliveries", response_model=list[DeliveryView])
def list_deliveries(webhook_id: str, ctx: Ctx, _who: Admin) -> list[DeliveryView]:
    """Return the delivery attempts logged for a subscription, oldest first."""
    return [
        DeliveryView(**{k: _clean(v) for k, v in d.items() if k in DeliveryView.model_fields})
        for d in deliveries(ctx.store)
        if d["subscription_id"] == webhook_id
    ]


@router.post("/deliveries/{delivery_id}/redeliver", response_model=OutcomeView)
def redeliver(delivery_id: str, ctx: Ctx, who: Admin) -> OutcomeView:
    """Send a logged delivery again (e.g. a dead letter once the receiver is fixed)."""
    try:
        outcome = _deliverer(ctx).redeliver(delivery_id)
    except LookupError as exc:
        raise NotFound(str(exc)) from exc
    ctx.audit(who, "POST", "webhooks/redeliver", delivery_id, 200, outcome.status)
    return _outcome(outcome)


def _deliverer(ctx: ApiContext) -> Deliverer:
    if ctx.deliverer is None:
        raise HTTPException(503, "webhook delivery is not configured in this API process")
    return ctx.deliverer


def _subscription(ctx: ApiContext, webhook_id: str) -> Subscription:
    for sub in load_subscriptions(ctx.store):
        if sub.id == webhook_id:
            return sub
    raise NotFound(f"no active webhook {webhook_id!r}")


def _view(sub: Subscription) -> SubscriptionView:
    return SubscriptionView(
        id=sub.id,
        url=mask_url(sub.url),
        url_fingerprint=fingerprint(sub.url),
        events=sub.events,
        format=sub.format,
    )


def _shown(url: str) -> str:
    """Return what the audit keeps of a URL (never the URL: for Slack it is the credential)."""
    return f"{mask_url(url)} {fingerprint(url)}"


def _outcome(o: Outcome) -> OutcomeView:
    return OutcomeView(
        delivery_id=o.delivery_id,
        status=o.status,
        attempts=o.attempts,
        http_status=o.http_status,
        error=o.error,
    )


def _clean(value: Any) -> Any:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return int(value) if hasattr(value, "item") and not isinstance(value, str) else value
