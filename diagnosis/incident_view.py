"""The read model of one incident: its timeline, who acknowledged it, the culprit's groups.

The API's incident route serves it as is (api/models.py `IncidentDetail`); the timeline is
assembled by a pure function (`incident_timeline`) from what the stores hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field

from analytics.api_audit import AuditedWrite, writes_to
from analytics.queries import latest_topology
from analytics.store import Store
from diagnosis.graph import build_comm_graph, neighbourhood
from diagnosis.incident_store import load_incident, transitions
from diagnosis.incidents import Incident
from diagnosis.lifecycle import Transition

ACKNOWLEDGE = "acknowledge"
"""The API audit path of an acknowledgement (POST /v1/incidents/{id}/acknowledge)."""


class TimelineEntry(BaseModel):
    """One moment in an incident's life."""

    at: datetime
    event: str = Field(description="detected, evidence, acknowledged, mitigating, resolved, ...")
    actor: str
    detail: str = ""


@dataclass(frozen=True)
class IncidentStory:
    """An incident with its timeline, acknowledgements and the culprit's parallel groups."""

    incident: Incident
    timeline: list[TimelineEntry]
    acknowledged_by: list[str]
    neighbourhood: dict[str, object] | None


def incident_timeline(
    incident: Incident, moves: Sequence[Transition], acks: Sequence[AuditedWrite]
) -> list[TimelineEntry]:
    """Return an incident's timeline, oldest first: detection, evidence, moves, acks."""
    timeline = [TimelineEntry(at=incident.detected_at, event="detected", actor="diagnosis")]
    if incident.updated_at and incident.updated_at != incident.detected_at:
        timeline.append(
            TimelineEntry(
                at=incident.updated_at,
                event="evidence",
                actor="diagnosis",
                detail=f"{incident.findings} finding(s), revision {incident.revision}",
            )
        )
    timeline += [
        TimelineEntry(at=t.at, event=t.status.value, actor=t.actor, detail=t.reason) for t in moves
    ]
    timeline += [
        TimelineEntry(at=a.at, event="acknowledged", actor=a.actor, detail=a.detail) for a in acks
    ]
    timeline.sort(key=lambda e: e.at)
    return timeline


def incident_story(store: Store, incident_id: str) -> IncidentStory:
    """Return one incident's read model; raise IncidentNotFound."""
    incident = load_incident(store, incident_id)
    acks = writes_to(store, incident_id, ACKNOWLEDGE)
    return IncidentStory(
        incident=incident,
        timeline=incident_timeline(incident, transitions(store, incident_id), acks),
        acknowledged_by=sorted({a.actor for a in acks}),
        neighbourhood=suspect_neighbourhood(store, incident),
    )


def suspect_neighbourhood(store: Store, incident: Incident) -> dict[str, object] | None:
    """Return the top suspect rank's communicators, members and nodes, or None."""
    if incident.job is None:
        return None
    top = incident.suspects[0] if incident.suspects else None
    topology = latest_topology(store, incident.job, incident.cluster)
    if topology is None or top is None:
        return None
    graph = build_comm_graph(topology)
    rank = top.rank
    if rank is None and top.node is not None and top.gpu is not None:
        placed = {(n, graph.rank_gpu[r]): r for r, n in graph.rank_node.items()}
        rank = placed.get((top.node, top.gpu))
    return None if rank is None else neighbourhood(graph, rank)
