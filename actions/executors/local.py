"""An in-process cluster manager for the embedded demo (`TG_ACT_EXECUTOR=local`).

The demo's simulated fleet has no Slurm or Kubernetes to drain; these executors keep the
cordons and restart requests in memory (and, like the real ones, in the action audit), so the
engine, the approvals and the console behave exactly as with a real backend. They touch no
machine: never use them for a real cluster.
"""

from __future__ import annotations

import threading

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, skipped
from actions.registry import ActionRequest, make_plan


class LocalCluster:
    """Which nodes are cordoned (and why) and which jobs were restarted."""

    def __init__(self) -> None:
        self.cordoned: dict[str, str] = {}
        self.restarts: list[tuple[str, list[str]]] = []
        self.reboots: list[str] = []
        self._lock = threading.Lock()

    def cordon(self, node: str, reason: str) -> bool:
        """Cordon a node; return False if it already was."""
        with self._lock:
            if node in self.cordoned:
                return False
            self.cordoned[node] = reason
            return True

    def uncordon(self, node: str) -> bool:
        """Lift a cordon; return False if there was none."""
        with self._lock:
            return self.cordoned.pop(node, None) is not None


class _Local:
    name = "local"

    def __init__(self, cluster: LocalCluster, kind: ActionKind, risk: Risk) -> None:
        self.cluster, self.kind, self.risk = cluster, kind, risk

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


class LocalDrain(_Local):
    """Cordon a node (isolate it, or the node of a GPU)."""

    def __init__(self, cluster: LocalCluster, kind: ActionKind = ActionKind.ISOLATE_NODE) -> None:
        super().__init__(cluster, kind, Risk.HIGH)

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        if not node:
            raise ValueError("no node to isolate")
        return make_plan(self, request, f"cordon {node} (demo cluster)", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        reason = f"trainguard:{plan.incident_id}"
        if self.cluster.cordon(plan.params["node"], reason):
            return done(f"cordoned {plan.params['node']}")
        return done(f"{plan.params['node']} already cordoned")


class LocalResume(_Local):
    """Lift a cordon TrainGuard set."""

    def __init__(self, cluster: LocalCluster) -> None:
        super().__init__(cluster, ActionKind.RESUME_NODE, Risk.LOW)

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return make_plan(self, request, f"uncordon {node} (demo cluster)", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        if self.cluster.uncordon(plan.params["node"]):
            return done(f"uncordoned {plan.params['node']}")
        return skipped("not cordoned")


class LocalReboot(_Local):
    """Record a reboot request."""

    def __init__(self, cluster: LocalCluster) -> None:
        super().__init__(cluster, ActionKind.REBOOT_NODE, Risk.HIGH)

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.target.node or ""
        return make_plan(self, request, f"reboot {node} (demo cluster)", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        self.cluster.reboots.append(plan.params["node"])
        return done(f"reboot requested for {plan.params['node']}")


class LocalRestart(_Local):
    """Record a restart of the job from its checkpoint, away from cordoned nodes."""

    def __init__(self, cluster: LocalCluster) -> None:
        super().__init__(cluster, ActionKind.RESTART_JOB, Risk.HIGH)

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        if not job:
            raise ValueError("no job to restart")
        exclude = list(request.params.get("exclude", []))
        what = f"restart job {job} from its latest checkpoint excluding {exclude or 'nothing'}"
        return make_plan(self, request, what, job=job, exclude=exclude)

    def execute(self, plan: ActionPlan) -> ActionResult:
        self.cluster.restarts.append((plan.params["job"], list(plan.params["exclude"])))
        return done(f"restarted {plan.params['job']}")


def local_executors(
    cluster: LocalCluster,
) -> list[LocalDrain | LocalResume | LocalReboot | LocalRestart]:
    """Return the demo backend's executors."""
    return [
        LocalDrain(cluster),
        LocalDrain(cluster, ActionKind.ISOLATE_GPU),
        LocalResume(cluster),
        LocalReboot(cluster),
        LocalRestart(cluster),
    ]
