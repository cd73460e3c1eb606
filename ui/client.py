"""A typed client of the TrainGuard REST API: the console's only way to the data.

Every failure is an `ApiError` whose `message` a person can act on; the console shows it
instead of a traceback. A 404 (or 405) without problem details means the route itself is
not served by this API version (the action engine's and scheduler's routes land later):
that is `RouteMissing`, which pages show as "not available yet".
"""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from ui.models import (
    ActionItem,
    AuditEntry,
    Breaker,
    Caller,
    ClusterSummary,
    Delivery,
    FleetSummary,
    GpuHealth,
    Incident,
    IncidentDetail,
    JobDetail,
    JobSummary,
    NodeDetail,
    NodeHealth,
    Page,
    SchedulerState,
    Webhook,
)

M = TypeVar("M", bound=BaseModel)
PROBLEM = "application/problem+json"


class ApiError(Exception):
    """The API could not answer a request; `message` says what to do."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class ApiUnreachable(ApiError):
    """No HTTP answer at all (connection refused, DNS, timeout)."""


class TokenRejected(ApiError):
    """401: no token, or an unknown or revoked one."""


class Forbidden(ApiError):
    """403: the token's role is not enough."""


class NotFound(ApiError):
    """404 with problem details: the resource does not exist."""


class RouteMissing(ApiError):
    """The API does not serve this route (yet)."""

    def __init__(self, route: str) -> None:
        super().__init__(f"{route} is not available yet on this API", 404)
        self.route = route


class ApiClient:
    """Calls /v1 with a bearer token; one instance per console session."""

    def __init__(
        self,
        base_url: str,
        token: str,
        timeout_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def me(self) -> Caller:
        """Return the token's name and role."""
        return self._get(Caller, "/v1/me")

    # incidents
    def incidents(
        self,
        status: str | None = None,
        severity: str | None = None,
        job: str | None = None,
        node: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        cluster: str | None = None,
    ) -> Page[Incident]:
        """Return one page of incidents, newest first."""
        params = _params(
            status=status,
            severity=severity,
            job=job,
            node=node,
            limit=limit,
            cursor=cursor,
            cluster=cluster,
        )
        return self._get(Page[Incident], "/v1/incidents", params)

    def incident(self, incident_id: str) -> IncidentDetail:
        """Return one incident with its timeline and parallel groups."""
        return self._get(IncidentDetail, f"/v1/incidents/{_seg(incident_id)}")

    def acknowledge(self, incident_id: str, note: str = "") -> IncidentDetail:
        """Say that a person is on it."""
        path = f"/v1/incidents/{_seg(incident_id)}/acknowledge"
        return self._post(IncidentDetail, path, {"note": note})

    def resolve(self, incident_id: str, reason: str) -> Incident:
        """Mark an incident resolved."""
        path = f"/v1/incidents/{_seg(incident_id)}/resolve"
        return self._post(Incident, path, {"reason": reason})

    def false_alarm(self, incident_id: str, reason: str) -> Incident:
        """Mark an incident a false alarm."""
        path = f"/v1/incidents/{_seg(incident_id)}/false-alarm"
        return self._post(Incident, path, {"reason": reason})

    # jobs and fleet
    def jobs(self, cluster: str | None = None) -> list[JobSummary]:
        """Return every job with its progress and ETTR."""
        return self._get(Page[JobSummary], "/v1/jobs", _params(cluster=cluster)).items

    def job(self, job_id: str, cluster: str | None = None) -> JobDetail:
        """Return one job's topology, steps and incidents."""
        return self._get(JobDetail, f"/v1/jobs/{_seg(job_id)}", _params(cluster=cluster))

    def gpus(
        self, state: str | None = None, node: str | None = None, cluster: str | None = None
    ) -> list[GpuHealth]:
        """Return every GPU (all pages)."""
        params = _params(state=state, node=node, cluster=cluster, limit=5000)
        return self._all(GpuHealth, "/v1/gpus", params)

    def nodes(self, cluster: str | None = None) -> list[NodeHealth]:
        """Return every node (all pages)."""
        return self._all(NodeHealth, "/v1/nodes", _params(cluster=cluster, limit=5000))

    def node(self, node: str, minutes: int = 15, cluster: str | None = None) -> NodeDetail:
        """Return a node's GPUs, recent samples and Xids."""
        params = _params(minutes=minutes, cluster=cluster)
        return self._get(NodeDetail, f"/v1/nodes/{_seg(node)}", params)

    def clusters(self) -> list[ClusterSummary]:
        """Return the clusters the installation hears from."""
        return self._get(Page[ClusterSummary], "/v1/clusters").items

    def fleet_groups(self, cluster: str | None = None) -> FleetSummary:
        """Return GPUs counted by state per job (aggregated by the API's store)."""
        return self._get(FleetSummary, "/v1/fleet/groups", _params(by="job", cluster=cluster))

    def fleet_group_nodes(self, group: str, cluster: str | None = None) -> list[NodeHealth]:
        """Return one group's nodes with their state."""
        path = f"/v1/fleet/groups/{_seg(group)}/nodes"
        return self._get(Page[NodeHealth], path, _params(cluster=cluster)).items

    # actions (the action engine's routes)
    def actions(
        self,
        status: str | None = None,
        incident: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        cluster: str | None = None,
    ) -> Page[ActionItem]:
        """Return one page of actions."""
        params = _params(
            status=status, incident=incident, limit=limit, cursor=cursor, cluster=cluster
        )
        return self._get(Page[ActionItem], "/v1/actions", params)

    def approve(self, action_id: str, reason: str) -> ActionItem:
        """Approve a pending action."""
        path = f"/v1/actions/{_seg(action_id)}/approve"
        return self._post(ActionItem, path, {"reason": reason})

    def reject(self, action_id: str, reason: str) -> ActionItem:
        """Reject a pending action."""
        path = f"/v1/actions/{_seg(action_id)}/reject"
        return self._post(ActionItem, path, {"reason": reason})

    def audit(self, limit: int = 100, cursor: str | None = None) -> Page[AuditEntry]:
        """Return one page of the action audit log, newest first."""
        return self._get(Page[AuditEntry], "/v1/actions/audit", _params(limit=limit, cursor=cursor))

    def breaker(self) -> Breaker:
        """Return the isolation circuit breaker's state."""
        return self._get(Breaker, "/v1/breaker")

    def reset_breaker(self) -> Breaker:
        """Close the breaker (admin)."""
        return self._post(Breaker, "/v1/breaker/reset", {})

    # webhooks
    def webhooks(self) -> list[Webhook]:
        """Return every webhook subscription."""
        return [Webhook.model_validate(w) for w in _items(self._json("GET", "/v1/webhooks"))]

    def create_webhook(self, body: dict[str, Any]) -> Webhook:
        """Create a webhook subscription (admin)."""
        return self._post(Webhook, "/v1/webhooks", body)

    def delete_webhook(self, webhook_id: str) -> None:
        """Delete a webhook subscription (admin)."""
        self._json("DELETE", f"/v1/webhooks/{_seg(webhook_id)}")

    def test_webhook(self, webhook_id: str) -> Any:
        """Send a test delivery (admin); return what the API says."""
        return self._json("POST", f"/v1/webhooks/{_seg(webhook_id)}/test", {})

    def deliveries(self, webhook_id: str) -> list[Delivery]:
        """Return a webhook's recent deliveries."""
        body = self._json("GET", f"/v1/webhooks/{_seg(webhook_id)}/deliveries")
        return [Delivery.model_validate(d) for d in _items(body)]

    def redeliver(self, delivery_id: str) -> Any:
        """Send a delivery again (admin)."""
        return self._json("POST", f"/v1/webhooks/deliveries/{_seg(delivery_id)}/redeliver", {})

    # scheduler
    def scheduler_state(self) -> SchedulerState:
        """Return the scheduler's pools, loans, standbys and queue."""
        return self._get(SchedulerState, "/v1/scheduler/state")

    # plumbing
    def _get(self, model: type[M], path: str, params: dict[str, Any] | None = None) -> M:
        return _parse(model, self._json("GET", path, params=params), path)

    def _post(self, model: type[M], path: str, body: dict[str, Any]) -> M:
        return _parse(model, self._json("POST", path, body), path)

    def _all(self, model: type[M], path: str, params: dict[str, Any]) -> list[M]:
        out: list[M] = []
        cursor = None
        while True:
            page = self._get(Page[model], path, {**params, **_params(cursor=cursor)})  # type: ignore[valid-type]
            out += page.items
            cursor = page.next_cursor
            if not cursor:
                return out

    def _json(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        try:
            response = self._http.request(method, path, json=body, params=params)
        except httpx.TimeoutException as exc:
            raise ApiUnreachable(
                f"the API at {self.base_url} did not answer {method} {path} in time"
            ) from exc
        except httpx.TransportError as exc:
            raise ApiUnreachable(
                f"cannot reach the TrainGuard API at {self.base_url} ({exc}); is "
                f"`trainguard api` running and TG_CONSOLE_API_URL right?"
            ) from exc
        if response.is_success:
            return response.json() if response.content else None
        raise _error(method, path, response)


def _error(method: str, path: str, response: httpx.Response) -> ApiError:
    status = response.status_code
    problem = response.headers.get("content-type", "").startswith(PROBLEM)
    detail = _detail(response)
    if status in (404, 405) and not problem:
        return RouteMissing(f"{method} {path.split('?')[0]}")
    if status == 401:
        return TokenRejected(
            f"the API rejected the token ({detail}); paste a valid one in the sidebar", status
        )
    if status == 403:
        return Forbidden(f"not allowed: {detail}", status)
    if status == 404:
        return NotFound(detail, status)
    if status == 503:
        return ApiError(f"the API is up but its store is not: {detail}", status)
    return ApiError(f"{method} {path} failed ({status}): {detail}", status)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("title") or body)[:500]
    return str(body)[:500]


def _parse(model: type[M], body: Any, path: str) -> M:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = exc.error_count()
        raise ApiError(f"unexpected answer from {path}: {errors} field error(s)") from exc


def _items(body: Any) -> list[Any]:
    if isinstance(body, dict):
        return list(body.get("items", []))
    return list(body or [])


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != ""}


def _seg(value: str) -> str:
    """Quote one path segment (ids and node names come from the API or the URL)."""
    return quote(value, safe="")
