"""Kubernetes executors (official `kubernetes` client): cordon, taint, evict a job's pods.

Only nodes TrainGuard cordoned (annotation `trainguard.io/cordoned-by`) are ever uncordoned,
and only TrainGuard's own taint is removed; a cordon or taint a person made is left as it is.
Isolating (cordon or taint) also sets the node condition `TrainGuardIsolated` and records an
Event; returning the node clears the condition and records an Event (kube_marks.py).
Credentials: kube_credentials.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from pydantic import SecretStr

from actions.executors.kube_credentials import KubeAuth, load_credentials
from actions.executors.kube_marks import MERGE_PATCH, KubeOptOut, NodeMarks, condition_of
from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed, skipped
from actions.registry import ActionRequest, Executor, make_plan

ANNOTATION = "trainguard.io/cordoned-by"
TAINT_KEY = "trainguard.io/incident"


def core_api(host: str, token: str | None = None, verify_ssl: bool = True) -> k8s.CoreV1Api:
    """Return a CoreV1Api for an API server URL (bearer token optional; explicit settings)."""
    config = k8s.Configuration(host=host)
    config.verify_ssl = verify_ssl
    if token:
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
    return k8s.CoreV1Api(k8s.ApiClient(config))


def _error(exc: ApiException) -> ActionResult:
    return failed(f"Kubernetes API {exc.status}: {exc.reason}")


def _marked(result: str, problems: list[str]) -> ActionResult:
    """The node action happened; a missing condition or event is told, not a failure."""
    if problems:
        return done(f"{result}; " + "; ".join(problems), unrecorded=problems)
    return done(result)


def _isolation_plan(executor: Executor, request: ActionRequest, what: str) -> ActionPlan:
    node = request.target.node or ""
    category = request.incident.category.value
    return make_plan(executor, request, what, node=node, category=category)


def _annotations(node: Any) -> dict[str, str]:
    return dict(getattr(node.metadata, "annotations", None) or {})


def _taints(api: k8s.CoreV1Api, node: Any) -> list[dict[str, Any]]:
    """Return a node's taints in wire form (camelCase, no nulls) for a patch that keeps them."""
    spec = node.spec
    taints = (spec.taints or []) if spec is not None else []
    return [api.api_client.sanitize_for_serialization(t) for t in taints]


def _cordoned(node: Any) -> bool:
    return bool(node.spec is not None and node.spec.unschedulable)


class KubeCordon:
    """Isolate a node: mark it unschedulable, annotate who did it, set the condition."""

    name = "kubernetes"
    kind = ActionKind.ISOLATE_NODE
    risk = Risk.HIGH

    def __init__(self, api: k8s.CoreV1Api) -> None:
        self.api, self.marks = api, NodeMarks(api)

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return _isolation_plan(self, request, f"cordon Kubernetes node {node}")

    def execute(self, plan: ActionPlan) -> ActionResult:
        name = plan.params["node"]
        try:
            node = self.api.read_node(name)
            if _cordoned(node) and not _annotations(node).get(ANNOTATION):
                return skipped("already cordoned by someone else: preserved")
            body = {
                "metadata": {"annotations": {ANNOTATION: plan.incident_id}},
                "spec": {"unschedulable": True},
            }
            node = self.api.patch_node(name, body, _content_type=MERGE_PATCH)
        except ApiException as exc:
            return _error(exc)
        category = str(plan.params.get("category", "unknown"))
        problems = self.marks.isolated(node, plan.incident_id, category, "cordoned the node")
        return _marked(f"cordoned {name}", problems)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        try:
            node = self.api.read_node(plan.params["node"])
        except ApiException as exc:
            return _error(exc)
        if not _cordoned(node):
            return None
        if _annotations(node).get(ANNOTATION) == plan.incident_id and condition_of(node) is None:
            # crashed between the cordon and its condition: finish the marks
            category = str(plan.params.get("category", "unknown"))
            problems = self.marks.isolated(node, plan.incident_id, category, "cordoned the node")
            return _marked("cordon found after restart", problems)
        return done("cordon found after restart")


class KubeUncordon:
    """Return a node TrainGuard isolated: undo its cordon and taint, clear the condition.

    A cordon or taint someone else made is not undone.
    """

    name = "kubernetes"
    kind = ActionKind.RESUME_NODE
    risk = Risk.LOW

    def __init__(self, api: k8s.CoreV1Api) -> None:
        self.api, self.marks = api, NodeMarks(api)

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        what = f"uncordon and untaint {node} where TrainGuard did it"
        return make_plan(self, request, what, node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        name = plan.params["node"]
        try:
            node = self.api.read_node(name)
            ours = _cordoned(node) and bool(_annotations(node).get(ANNOTATION))
            taints = _taints(self.api, node)
            kept = [t for t in taints if t.get("key") != TAINT_KEY]
            if not ours and len(kept) == len(taints):
                why = "cordoned by someone else: not undone" if _cordoned(node) else "not cordoned"
                return skipped(why)
            spec: dict[str, Any] = {"taints": kept} if len(kept) != len(taints) else {}
            body: dict[str, Any] = {"spec": spec}
            if ours:
                body = {"metadata": {"annotations": {ANNOTATION: None}}, "spec": spec}
                spec["unschedulable"] = False
            node = self.api.patch_node(name, body, _content_type=MERGE_PATCH)
        except ApiException as exc:
            return _error(exc)
        undone = "uncordoned" if ours else "untainted"
        if condition_of(node) is None:
            return done(f"{undone} {name}")
        problems = self.marks.returned(node, plan.incident_id, f"{undone} the node")
        return _marked(f"{undone} {name}", problems)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


class KubeTaint:
    """Taint a node NoSchedule with the incident id (kept alongside existing taints)."""

    name = "kubernetes"
    kind = ActionKind.TAINT_NODE
    risk = Risk.HIGH

    def __init__(self, api: k8s.CoreV1Api) -> None:
        self.api, self.marks = api, NodeMarks(api)

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return _isolation_plan(self, request, f"taint {node} {TAINT_KEY}=<incident>:NoSchedule")

    def execute(self, plan: ActionPlan) -> ActionResult:
        name = plan.params["node"]
        try:
            node = self.api.read_node(name)
            taints = _taints(self.api, node)
            if any(t.get("key") == TAINT_KEY for t in taints):
                return done("taint already present")
            taints.append({"key": TAINT_KEY, "value": plan.incident_id, "effect": "NoSchedule"})
            # spec.taints has no merge key: the patch carries the whole list
            node = self.api.patch_node(
                name, {"spec": {"taints": taints}}, _content_type=MERGE_PATCH
            )
        except ApiException as exc:
            return _error(exc)
        category = str(plan.params.get("category", "unknown"))
        problems = self.marks.isolated(node, plan.incident_id, category, "tainted the node")
        return _marked(f"tainted {name}", problems)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # execute() checks for the taint first


class KubeNoReboot:
    """reboot_node on Kubernetes: the API has no reboot, so the step is skipped and audited.

    The node stays cordoned (isolated) for its owner; without this entry the default policy's
    hardware ladder (reboot optional at its end) could not be planned on Kubernetes at all.
    """

    name = "kubernetes"
    kind = ActionKind.REBOOT_NODE
    risk = Risk.LOW

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return make_plan(self, request, f"no reboot API: {node} stays cordoned", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        return skipped("Kubernetes has no node reboot API: the node stays cordoned for a person")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


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


class KubeAccess(Protocol):
    """Where and how to reach the API server (`trainguard.settings.ActSettings` has these)."""

    @property
    def kube_auth(self) -> KubeAuth: ...
    @property
    def kube_config(self) -> Path | None: ...
    @property
    def kube_context(self) -> str | None: ...
    @property
    def kube_host(self) -> str | None: ...
    @property
    def kube_token(self) -> SecretStr | None: ...
    @property
    def kube_ca_cert(self) -> Path | None: ...
    @property
    def kube_namespace(self) -> str: ...
    @property
    def kube_optout_label(self) -> str: ...


def kube_backend(settings: KubeAccess) -> tuple[list[Executor], KubeOptOut]:
    """Return the Kubernetes executors and the opt-out check, with credentials from settings.

    Raise KubeCredentialsError (a ValueError) naming every credential source tried.
    """
    token = settings.kube_token.get_secret_value() if settings.kube_token else None
    credentials = load_credentials(
        settings.kube_auth,
        kubeconfig=settings.kube_config,
        context=settings.kube_context,
        host=settings.kube_host,
        token=token,
        ca_cert=settings.kube_ca_cert,
    )
    api = k8s.CoreV1Api(credentials.client())
    executors: list[Executor] = [
        KubeCordon(api),
        KubeUncordon(api),
        KubeTaint(api),
        KubeNoReboot(),
        KubeEvictJob(api, settings.kube_namespace),
    ]
    return executors, KubeOptOut(api, settings.kube_optout_label)
