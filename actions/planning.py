"""Plans of a ladder: each policy step planned by its executor, with no side effects."""

from __future__ import annotations

from typing import Any

from actions.model import ISOLATING, ActionKind, ActionPlan
from actions.policy import Selection
from actions.registry import ActionRegistry, ActionRequest
from diagnosis.incidents import Incident


def plan_steps(registry: ActionRegistry, incident: Incident, sel: Selection) -> list[ActionPlan]:
    """Return the plan of every step of the selected rule's ladder, in order.

    A restart in a ladder that isolates excludes the isolated node. A step that cannot be
    planned raises ValueError naming the step.
    """
    isolated = [sel.target.node] if sel.target.node else []
    isolates = any(r.kind in ISOLATING for r in sel.rule.ladder)
    plans = []
    for step, rung in enumerate(sel.rule.ladder):
        params: dict[str, Any] = {**rung.params, "timeout_s": rung.timeout_s}
        params["optional"] = rung.optional
        if rung.kind == ActionKind.RESTART_JOB:
            params.setdefault("exclude", isolated if isolates else [])
        request = ActionRequest(
            incident=incident,
            kind=rung.kind,
            target=sel.target,
            step=step,
            rule=sel.rule.name,
            component_key=sel.component_key,
            params=params,
        )
        try:
            plans.append(registry.get(rung.kind).plan(request))
        except (LookupError, ValueError, RuntimeError) as exc:
            raise ValueError(f"step {step} ({rung.kind.value}): {exc}") from exc
    return plans
