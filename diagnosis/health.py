"""Health states of GPUs and nodes from their latest telemetry and the open incidents."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from diagnosis.incidents import Incident
from diagnosis.model import ComponentKind, IncidentStatus

HEALTHY, SUSPECT, LOST = "healthy", "suspect", "lost"
ISOLATED, INSPECTION = "isolated", "inspection"
_LIVE = {IncidentStatus.OPEN, IncidentStatus.MITIGATING}


def suspects_by_component(
    incidents: Iterable[Incident],
) -> tuple[dict[tuple[str, int], list[str]], dict[str, list[str]]]:
    """Return the live incidents naming each GPU and each node (by their top suspect)."""
    gpus: dict[tuple[str, int], list[str]] = defaultdict(list)
    nodes: dict[str, list[str]] = defaultdict(list)
    for inc in incidents:
        if inc.status not in _LIVE or not inc.suspects:
            continue
        top = inc.suspects[0]
        if top.node is None:
            continue
        if top.gpu is not None and top.component in (ComponentKind.GPU, ComponentKind.JOB):
            gpus[(top.node, top.gpu)].append(inc.id)
        else:
            nodes[top.node].append(inc.id)
    return gpus, nodes


def gpu_state(nvml_error: str, named: bool, node_named: bool, isolation: str | None = None) -> str:
    """Return a GPU's state: inspection or isolated (its node was taken out by an action),
    lost (NVML cannot read it), suspect (an incident names it or its node), else healthy."""
    if isolation == "hardware_inspection":
        return INSPECTION
    if isolation is not None:
        return ISOLATED
    if nvml_error:
        return LOST
    return SUSPECT if named or node_named else HEALTHY
