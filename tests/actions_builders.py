"""Small builders for action-engine tests."""

from __future__ import annotations

from datetime import UTC, datetime

from diagnosis.incidents import Incident
from diagnosis.model import Action, Blame, Category, ComponentKind, Suspect


def make_incident(
    n: int = 1,
    category: Category = Category.GPU_HARDWARE,
    node: str | None = "node-0001",
    gpu: int | None = 3,
    job: str | None = "job-1",
    component: ComponentKind = ComponentKind.GPU,
    score: float = 0.9,
    blame: Blame = Blame.INFRASTRUCTURE,
    at: datetime | None = None,
    findings: int = 1,
    incident_id: str | None = None,
) -> Incident:
    """Return an incident blaming one component."""
    suspects = []
    if component != ComponentKind.JOB or node is not None:
        suspects = [
            Suspect(
                component=component,
                score=score,
                node=node,
                gpu=gpu,
                nic="mlx5_3" if component == ComponentKind.NIC else None,
                explanation="Xid 79: GPU has fallen off the bus",
            )
        ]
    return Incident(
        id=incident_id or f"inc-{n:012x}",
        category=category,
        blame=blame,
        job=job,
        detected_at=at or datetime.now(UTC),
        suspects=suspects,
        summary=f"{category.value} on {node} GPU {gpu}",
        action=Action.ISOLATE_NODE,
        evidence=["NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."],
        findings=findings,
    )
