"""Reasons the engine must not execute an action: a maintenance window, a node opted out.

The engine asks `Holds.check(plan)` before an action runs (after it is planned and stored):

- an active maintenance window matching the action: the action is **skipped** (state
  `skipped`, audit event `silenced` naming the window, its author and reason). Every step of
  the ladder is checked on its own, so the steps the window covers are all skipped and
  nothing is done for the incident: it stays for a person. An expired window stops matching.
- a node that opted out of remediation (for Kubernetes the node label
  `trainguard.io/remediation=disabled`): an action that would take capacity out of it
  (isolate, taint, reboot) is **blocked** (state `blocked`, audit event `opted_out`) and the
  incident is escalated: the rest of the ladder (restart elsewhere, reboot) assumes an
  isolation that did not happen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from actions.model import ISOLATING, ActionKind, ActionPlan
from actions.silences import MaintenanceWindow, Subject, first_match, list_windows
from analytics.store import Store
from diagnosis.incident_store import IncidentNotFound, load_incident

# Kinds that take a node's capacity away or disturb it: an opted-out node refuses these.
NODE_DISTURBING: frozenset[ActionKind] = ISOLATING | {ActionKind.TAINT_NODE, ActionKind.REBOOT_NODE}


class NodeOptOut(Protocol):
    """Whether a node's owner opted it out of automatic remediation."""

    def opted_out(self, node: str) -> str | None:
        """Return why the node is opted out (e.g. the label), or None."""


@dataclass(frozen=True)
class Hold:
    """Why an action is not executed."""

    kind: Literal["silenced", "opted_out"]
    reason: str
    detail: dict[str, str]


def plan_nodes(plan: ActionPlan) -> tuple[str, ...]:
    """Return the nodes an action acts on (a leaf switch's isolation lists them all)."""
    nodes = [plan.target.node] if plan.target.node else []
    return tuple(dict.fromkeys([*nodes, *map(str, plan.params.get("nodes", []))]))


def silenced_hold(
    plan: ActionPlan,
    windows: Sequence[MaintenanceWindow],
    category: str,
    cluster: str,
    now: datetime,
) -> Hold | None:
    """Return the hold of the first active window matching an action, or None."""
    subject = Subject(plan_nodes(plan), plan.target.job or "", cluster, category)
    window = first_match(windows, subject, now)
    if window is None:
        return None
    return Hold(
        "silenced",
        f"maintenance window {window.id} by {window.author} until "
        f"{window.ends_at.isoformat()}: {window.reason}",
        {
            "window": window.id,
            "author": window.author,
            "window_reason": window.reason,
            "ends_at": window.ends_at.isoformat(),
        },
    )


def opted_out_hold(plan: ActionPlan, optout: NodeOptOut | None) -> Hold | None:
    """Return the hold of the first opted-out node a disturbing action acts on, or None."""
    if optout is None or plan.kind not in NODE_DISTURBING:
        return None
    for node in plan_nodes(plan):
        why = optout.opted_out(node)
        if why:
            return Hold(
                "opted_out",
                f"node {node} of cluster {plan.cluster} opted out of remediation ({why})",
                {"node": node, "cluster": plan.cluster, "opt_out": why},
            )
    return None


class Holds:
    """The engine's check for maintenance windows and opted-out nodes (reads, then decides)."""

    def __init__(self, store: Store, optout: NodeOptOut | None = None) -> None:
        self.store, self.optout = store, optout

    def check(self, plan: ActionPlan, now: datetime) -> Hold | None:
        """Return why an action must not run now, or None."""
        return self._silenced(plan, now) or opted_out_hold(plan, self.optout)

    def _silenced(self, plan: ActionPlan, now: datetime) -> Hold | None:
        windows = list_windows(self.store, active_at=now)
        if not windows:
            return None
        category, cluster = "", plan.cluster
        try:
            incident = load_incident(self.store, plan.incident_id)
            category = incident.category.value
            cluster = incident.cluster  # also right for plans stored before they carried it
        except IncidentNotFound:
            pass  # matched on node, job and the plan's cluster only
        return silenced_hold(plan, windows, category, cluster, now)
