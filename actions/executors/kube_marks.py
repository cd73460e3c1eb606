"""What TrainGuard leaves on a Kubernetes node besides the cordon: a condition, events, opt-out.

- The NodeCondition `TrainGuardIsolated` (status subresource, strategic merge on `type`, so
  the kubelet's and other controllers' conditions stay as they are): `True` while TrainGuard
  holds the node out, reason the incident category in CamelCase (`gpu.hardware` ->
  `GpuHardware`), message with the incident id; set to `False` (reason `Returned`) when
  TrainGuard returns the node, as Kubernetes conditions are kept rather than removed.
- An `events.k8s.io/v1` Event regarding the Node (namespace `default`, where the kubelet
  records node events), reportingController `trainguard.io/act`, so `kubectl describe node`
  and `kubectl get events` show what TrainGuard did and why.
- The opt-out label (default `trainguard.io/remediation=disabled`): a node carrying it is
  never isolated by TrainGuard (the engine checks it through `KubeOptOut`).

Every PATCH names its content type (strategic merge) rather than rely on the client turning
its JSON Patch default into strategic merge for an object body (kubernetes/client/rest.py).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

CONDITION = "TrainGuardIsolated"
REPORTING_CONTROLLER = "trainguard.io/act"
EVENT_NAMESPACE = "default"
OPT_OUT_LABEL = "trainguard.io/remediation"
OPT_OUT_VALUE = "disabled"
MERGE_PATCH = "application/strategic-merge-patch+json"


def camel(category: str) -> str:
    """Return a category as a CamelCase reason (`gpu.hardware` -> `GpuHardware`)."""
    words = [w for w in category.replace("_", ".").replace("-", ".").split(".") if w]
    return "".join(w[:1].upper() + w[1:] for w in words) or "Unknown"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_of(node: Any) -> Any | None:
    """Return TrainGuard's condition on a node object, or None."""
    status = getattr(node, "status", None)
    for cond in getattr(status, "conditions", None) or []:
        if cond.type == CONDITION:
            return cond
    return None


class NodeMarks:
    """Sets TrainGuard's condition and records events on nodes."""

    def __init__(self, api: k8s.CoreV1Api, instance: str = "trainguard-act") -> None:
        self.api = api
        self.events = k8s.EventsV1Api(api.api_client)
        self.instance = instance

    def isolated(self, node: Any, incident_id: str, category: str, what: str) -> list[str]:
        """Mark a node isolated for an incident; return what could not be recorded."""
        reason = camel(category)
        message = f"TrainGuard {what} for incident {incident_id} ({category})"
        return self._record(node, "True", reason, message, "Warning", "Isolate")

    def returned(self, node: Any, incident_id: str, what: str) -> list[str]:
        """Mark a node returned to service; return what could not be recorded."""
        message = f"TrainGuard {what} (incident {incident_id})"
        return self._record(node, "False", "Returned", message, "Normal", "Return")

    def _record(
        self, node: Any, status: str, reason: str, message: str, kind: str, action: str
    ) -> list[str]:
        problems = []
        try:
            self._condition(node, status, reason, message)
        except (ApiException, HTTPError) as exc:
            problems.append(f"condition {CONDITION} not set: {_why(exc)}")
        try:
            self._event(node, reason, message, kind, action)
        except (ApiException, HTTPError) as exc:
            problems.append(f"event not recorded: {_why(exc)}")
        return problems

    def _condition(self, node: Any, status: str, reason: str, message: str) -> None:
        now = _now()
        previous = condition_of(node)
        since = now
        if previous is not None and previous.status == status:
            since = _stamp(previous.last_transition_time)
        condition = {
            "type": CONDITION,
            "status": status,
            "reason": reason,
            "message": message[:1024],
            "lastHeartbeatTime": now,
            "lastTransitionTime": since,
        }
        self.api.patch_node_status(
            node.metadata.name,
            {"status": {"conditions": [condition]}},
            _content_type=MERGE_PATCH,
        )

    def _event(self, node: Any, reason: str, note: str, kind: str, action: str) -> None:
        name = node.metadata.name
        event = k8s.EventsV1Event(
            api_version="events.k8s.io/v1",
            kind="Event",
            metadata=k8s.V1ObjectMeta(
                name=f"{name}.{uuid.uuid4().hex[:16]}", namespace=EVENT_NAMESPACE
            ),
            event_time=datetime.now(UTC),
            reporting_controller=REPORTING_CONTROLLER,
            reporting_instance=self.instance,
            action=action,
            reason=reason,
            note=note[:1024],
            type=kind,
            regarding=k8s.V1ObjectReference(
                api_version="v1", kind="Node", name=name, uid=getattr(node.metadata, "uid", None)
            ),
        )
        self.events.create_namespaced_event(EVENT_NAMESPACE, event)


def _why(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        return f"Kubernetes API {exc.status}: {exc.reason}"
    return f"Kubernetes API unreachable: {type(exc).__name__}"


def _stamp(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value or _now())


class KubeOptOut:
    """A node opted out of automatic remediation by its label (engine's NodeOptOut)."""

    def __init__(self, api: k8s.CoreV1Api, label: str = OPT_OUT_LABEL) -> None:
        self.api, self.label = api, label

    def opted_out(self, node: str) -> str | None:
        """Return the opt-out label if the node carries it; None if not (or no such node).

        A label that cannot be read counts as an opt-out: no node is isolated unverified.
        """
        try:
            found = self.api.read_node(node)
        except ApiException as exc:
            if exc.status == 404:
                return None  # not a Kubernetes node: the executor reports it
            return f"label {self.label} unreadable ({_why(exc)})"
        except HTTPError as exc:
            return f"label {self.label} unreadable ({_why(exc)})"
        labels = dict(getattr(found.metadata, "labels", None) or {})
        if labels.get(self.label) == OPT_OUT_VALUE:
            return f"label {self.label}={OPT_OUT_VALUE}"
        return None
