"""Scheduler executors: replacement capacity and reclaiming loaned nodes.

`CapacityProvider` is the interface the Lyra scheduler (`scheduler.service.Scheduler`)
satisfies; the action engine only depends on this Protocol.
"""

from __future__ import annotations

from typing import Any, Protocol

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed
from actions.registry import ActionRequest, make_plan
from scheduler.service import Replacement


class CapacityProvider(Protocol):
    """Hands out replacement capacity and takes loaned nodes back."""

    def request_replacement(self, job_id: str, failed_node: str, gpus: int) -> Replacement | str:
        """Return the replacement of `failed_node` for `job_id`, or the reason there is none."""

    def reclaim(self, node: str) -> list[str]:
        """Take a node back from whatever holds it; return the jobs it held."""


class SchedulerCapacity:
    """Ask the scheduler for a replacement of an isolated node (warm standby or a loan)."""

    name = "scheduler"
    kind = ActionKind.REQUEST_CAPACITY
    risk = Risk.LOW

    def __init__(self, provider: CapacityProvider, gpus_per_node: int = 8) -> None:
        self.provider = provider
        self.gpus_per_node = gpus_per_node

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        node = request.target.node or ""
        gpus = int(request.params.get("gpus", self.gpus_per_node))
        what = f"request {gpus} GPU(s) to replace {node or 'nothing'} for job {job or '?'}"
        return make_plan(self, request, what, job=job, node=node, gpus=gpus)

    def execute(self, plan: ActionPlan) -> ActionResult:
        if not plan.params["job"]:
            return failed("no job named: nothing to get capacity for")
        got = self.provider.request_replacement(
            plan.params["job"], plan.params["node"], plan.params["gpus"]
        )
        if isinstance(got, str):
            return failed(f"no replacement capacity: {got}")
        return done(f"replacement {got.node}: {got.describe()}", replacement=[got.node])

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # asking again is safe: the Lyra scheduler returns its first grant


class SchedulerReclaim:
    """Reclaim a loaned node (preempting what runs there) so it can serve as a replacement."""

    name = "scheduler"
    kind = ActionKind.RECLAIM_NODE
    risk = Risk.HIGH

    def __init__(self, provider: CapacityProvider) -> None:
        self.provider = provider

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = request.params.get("node") or request.target.node or ""
        return make_plan(self, request, f"reclaim node {node} from its current jobs", node=node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        if not plan.params["node"]:
            return failed("no node to reclaim")
        jobs = self.provider.reclaim(plan.params["node"])
        return done(f"reclaimed {plan.params['node']} from {len(jobs)} job(s)", preempted=jobs)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # reclaiming a node already reclaimed preempts nothing


class LyraCapacity:
    """The Lyra scheduler (`scheduler.service.Scheduler`) as a capacity provider."""

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def request_replacement(self, job_id: str, failed_node: str, gpus: int) -> Replacement | str:
        """Ask for a warm standby, else a loaned inference server."""
        got: Replacement | None = self.scheduler.request_replacement(job_id, failed_node, gpus)
        if got is None:
            refusals = self.scheduler.refusals
            return str(refusals[-1]) if refusals else "no capacity"
        return got

    def reclaim(self, node: str) -> list[str]:
        """Take a node the scheduler manages out of service; others hold nothing of it."""
        try:
            return list(self.scheduler.reclaim(node).jobs)
        except KeyError:
            return []  # not one of the scheduler's servers (a fleet node it does not place)
