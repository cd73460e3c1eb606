"""Kubernetes executors (official `kubernetes` client): cordon, taint, evict a job's pods.

Only nodes TrainGuard cordoned (annotation `trainguard.io/cordoned-by`) are ever uncordoned;
a cordon a person made is left as it is.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed, skipped
from actions.registry import ActionRequest, make_plan

ANNOTATION = "trainguard.io/cordoned-by"
TAINT_KEY = "trainguard.io/incident"


def core_api(host: str, token: str | None = None, verify_ssl: bool = True) -> k8s.CoreV1Api:
    """Return a CoreV1Api for an API server URL (bearer token optional)."""
    config = k8s.Configuration(host=host)
    config.verify_ssl = verify_ssl
    if token:
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
    return k8s.CoreV1Api(k8s.ApiClient(config))


def _error(exc: ApiException) -> ActionResult:
    return failed(f"Kubernetes API {exc.status}: {exc.reason}")


def _annotations(node: Any) -> dict[str, str]:
    return dict(getattr(node.metadata, "annotations", None) or {})


class KubeCordon:
    """Isolate a node: mark it unschedulable and annotate who did it."""

    name = "kubernetes"
    kind = ActionKind.ISOLATE_NODE
    risk = Risk.HIGH

    def __init__(self, api: k8s.CoreV1Api) -> None:
        self.api = api

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return make_plan(self, request, f"cordon Kubernetes node {node}", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        name = plan.params["node"]
        try:
            node = self.api.read_node(name)
            ours = _annotations(node).get(ANNOTATION)
            if node.spec is not None and node.spec.unschedulable and not ours:
                return skipped("already cordoned by someone else: preserved")
            body = {
                "metadata": {"annotations": {ANNOTATION: plan.incident_id}},
                "spec": {"unschedulable": True},
            }
            self.api.patch_node(name, body)
            return done(f"cordoned {name}")
        except ApiException as exc:
            return _error(exc)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        try:
            node = self.api.read_node(plan.params["node"])
        except ApiException as exc:
            return _error(exc)
        if node.spec is not None and node.spec.unschedulable:
            return done("cordon found after restart")
        return None


class KubeUncordon:
    """Return a node TrainGuard cordoned; other cordons are not undone."""

    name = "kubernetes"
    kind = ActionKind.RESUME_NODE
    risk = Risk.LOW

    def __init__(self, api: k8s.CoreV1Api) -> None:
        self.api = api

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return make_plan(self, request, f"uncordon {node} if TrainGuard cordoned it", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        name = plan.params["node"]
        try:
            node = self.api.read_node(name)
            if not (node.spec is not None and node.spec.unschedulable):
                return skipped("not cordoned")
            if not _annotations(node).get(ANNOTATION):
                return skipped("cordoned by someone else: not undone")
            self.api.patch_node(
                name,
                {"metadata": {"annotations": {ANNOTATION: None}}, "spec": {"unschedulable": False}},
            )
            return done(f"uncordoned {name}")
        except ApiException as exc:
            return _error(exc)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


class KubeTaint:
    """Taint a node NoSchedule with the incident id (kept alongside existing taints)."""

    name = "kubernetes"
    kind = ActionKind.TAINT_NODE
    risk = Risk.HIGH

    def __init__(self, api: k8s.CoreV1Api) -> None:
        self.api = api

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return make_plan(
            self, request, f"taint {node} {TAINT_KEY}=<incident>:NoSchedule", node=node
        )

    def execute(self, plan: ActionPlan) -> ActionResult:
        name = plan.params["node"]
        try:
            node = self.api.read_node(name)
            taints = [t.to_dict() for t in (node.spec.taints or [])] if node.spec else []
            if any(t.get("key") == TAINT_KEY for t in taints):
                return done("taint already present")
            taints.append({"key": TAINT_KEY, "value": plan.incident_id, "effect": "NoSchedule"})
            self.api.patch_node(name, {"spec": {"taints": taints}})
            return done(f"tainted {name}")
        except ApiException as exc:
            return _error(exc)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # execute() checks for the taint first


class KubeEvictJob:
    """Restart a job: evict its pods (label `job_label=<job>`) so its controller recreates them
    off the cordoned nodes, respecting PodDisruptionBudgets."""

    name = "kubernetes"
    kind = ActionKind.RESTART_JOB
    risk = Risk.HIGH

    def __init__(self, api: k8s.CoreV1Api, namespace: str, job_label: str = "trainguard.io/job"):
        self.api, self.namespace, self.job_label = api, namespace, job_label

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        what = f"evict pods {self.job_label}={job} in namespace {self.namespace}"
        return make_plan(self, request, what, job=job)

    def execute(self, plan: ActionPlan) -> ActionResult:
        if not plan.params["job"]:
            return failed("no job named")
        try:
            pods = self.api.list_namespaced_pod(
                self.namespace, label_selector=f"{self.job_label}={plan.params['job']}"
            )
            names = [str(p.metadata.name) for p in pods.items if p.metadata is not None]
            for pod in names:
                body = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=pod, namespace=self.namespace))
                self.api.create_namespaced_pod_eviction(pod, self.namespace, body)
        except ApiException as exc:
            return _error(exc)
        if not names:
            return failed(f"no pods with {self.job_label}={plan.params['job']}")
        return done(f"evicted {len(names)} pod(s)", pods=names)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # evicting again only touches pods that still exist
