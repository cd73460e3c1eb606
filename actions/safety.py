"""Safety limits: the isolation circuit breaker and per-node / per-job remediation budgets.

The rules here are pure functions over counts (`judge_limits` decides for one step); the
engine reads the counts from ClickHouse (`actions.store.limit_counts`) so the limits hold
across engine restarts and replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from actions.model import ISOLATING, ActionKind, ActionPlan

BREAKER = "isolation"


class BreakerLimits(BaseModel):
    """How much of the fleet may be isolated within a sliding window before isolation stops."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fleet_nodes: int = Field(ge=1, description="Nodes in the fleet the share is taken of.")
    max_share: float = Field(0.05, gt=0, le=1, description="Share of the fleet (default 5%).")
    max_nodes: int | None = Field(None, ge=1, description="Absolute cap instead of the share.")
    window_s: float = Field(3600.0, gt=0, description="Sliding window.")

    def limit(self) -> int:
        """Return the most nodes that may be isolated within the window."""
        if self.max_nodes is not None:
            return self.max_nodes
        return max(1, math.floor(self.max_share * self.fleet_nodes))


def breaker_trips(isolated_in_window: int, limits: BreakerLimits) -> bool:
    """Return whether isolating one more node would exceed the limit."""
    return isolated_in_window + 1 > limits.limit()


class Budgets(BaseModel):
    """Remediation budgets that break loops (a node that keeps failing, a job that never runs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_node: int = Field(3, ge=1, description="Actions on one node within the node window.")
    node_window_s: float = Field(86_400.0, gt=0)
    per_job_restarts: int = Field(5, ge=1, description="Restarts of one job within the window.")
    job_window_s: float = Field(21_600.0, gt=0)

    @model_validator(mode="after")
    def _sane(self) -> Budgets:
        if self.per_node > 1000 or self.per_job_restarts > 1000:
            raise ValueError("budgets above 1000 actions do not break loops")
        return self


NODE_BUDGETED: frozenset[ActionKind] = frozenset(
    {ActionKind.ISOLATE_NODE, ActionKind.ISOLATE_GPU, ActionKind.REBOOT_NODE, ActionKind.TAINT_NODE}
)


def over_budget(kind: ActionKind, node_actions: int, job_restarts: int, b: Budgets) -> str | None:
    """Return why an action is over its budget, or None (counts exclude the action itself)."""
    if kind in NODE_BUDGETED and node_actions >= b.per_node:
        return f"node budget spent: {node_actions} node actions in {b.node_window_s:.0f} s"
    if kind == ActionKind.RESTART_JOB and job_restarts >= b.per_job_restarts:
        return f"job budget spent: {job_restarts} restarts in {b.job_window_s:.0f} s"
    return None


@dataclass(frozen=True)
class LimitCounts:
    """What the store says about the safety limits, for one step (read before its gate)."""

    breaker_open: bool = False
    breaker_reason: str = ""
    isolated: int = 0  # distinct nodes isolated in the breaker's window
    node_actions: int = 0  # isolations of the step's node in the node window
    job_restarts: int = 0  # restarts of the step's job in the job window


def reads_limits(plan: ActionPlan) -> tuple[bool, bool, bool]:
    """Return which counts a step's limits need: (breaker, node actions, job restarts)."""
    node = bool(plan.target.node) and plan.kind in NODE_BUDGETED
    job = plan.kind == ActionKind.RESTART_JOB and bool(plan.target.job)
    return plan.kind in ISOLATING, node, job


@dataclass(frozen=True)
class Verdict:
    """Why a step is blocked (None: it is not), and whether the breaker trips now."""

    blocked: str | None
    trip: str | None = None


def judge_limits(
    plan: ActionPlan, counts: LimitCounts, breaker: BreakerLimits, budgets: Budgets
) -> Verdict:
    """Return whether the breaker or a budget blocks a step (counts exclude the step)."""
    if plan.kind in ISOLATING:
        if counts.breaker_open:
            why = f"circuit breaker open ({counts.breaker_reason}); an operator must reset it"
            return Verdict(why)
        # a multi-node isolation counts every node it would take out
        count = counts.isolated + len(plan.params.get("nodes", [1])) - 1
        if breaker_trips(count, breaker):
            why = f"{count} node(s) isolated in {breaker.window_s:.0f} s, limit "
            why += f"{breaker.limit()} of {breaker.fleet_nodes}"
            return Verdict(f"circuit breaker tripped: {why}", trip=why)
    return Verdict(over_budget(plan.kind, counts.node_actions, counts.job_restarts, budgets))
