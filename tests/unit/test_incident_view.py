"""The incident read model's timeline, assembled with no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analytics.api_audit import AuditedWrite
from diagnosis.incident_view import incident_timeline
from diagnosis.lifecycle import Transition
from diagnosis.model import IncidentStatus
from tests.actions_builders import make_incident

T0 = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


def test_the_timeline_orders_detection_evidence_moves_and_acknowledgements():
    incident = make_incident(at=T0).model_copy(
        update={"updated_at": T0 + timedelta(minutes=5), "revision": 3, "findings": 4}
    )
    moves = [
        Transition(
            incident_id=incident.id,
            status=IncidentStatus.MITIGATING,
            reason="isolate_node: drain",
            actor="trainguard-act",
            at=T0 + timedelta(minutes=2),
        )
    ]
    acks = [AuditedWrite(at=T0 + timedelta(minutes=1), actor="alice", detail="on it")]
    timeline = incident_timeline(incident, moves, acks)
    assert [(e.event, e.actor) for e in timeline] == [
        ("detected", "diagnosis"),
        ("acknowledged", "alice"),
        ("mitigating", "trainguard-act"),
        ("evidence", "diagnosis"),
    ]
    assert timeline[1].detail == "on it"
    assert timeline[3].detail == "4 finding(s), revision 3"


def test_an_incident_never_updated_has_no_evidence_entry():
    incident = make_incident(at=T0)
    assert incident.updated_at in (None, incident.detected_at)
    assert [e.event for e in incident_timeline(incident, [], [])] == ["detected"]
