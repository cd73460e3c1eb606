"""Incidents and their lifecycle on the real ClickHouse server (18.16) and on chdb."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.incident_store import (
    IncidentNotFound,
    load_incident,
    load_incidents,
    record_transition,
    save_incidents,
    transitions,
)
from diagnosis.incidents import Incident
from diagnosis.lifecycle import LifecycleError, Transition
from diagnosis.model import Action, Blame, Category, ComponentKind, IncidentStatus, Suspect

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 30, 3, 0, 0, 250_000, tzinfo=UTC)


def _incident(n: int, revision: int = 1, evidence: int = 1) -> Incident:
    return Incident(
        id=f"inc-{n:012d}",
        category=Category.GPU_HARDWARE,
        blame=Blame.INFRASTRUCTURE,
        job="job-1",
        detected_at=T0 + timedelta(minutes=n),
        suspects=[
            Suspect(
                component=ComponentKind.GPU,
                score=1.0,
                node=f"n{n}",
                gpu=3,
                explanation="Xid 79 on this GPU",
            )
        ],
        summary=f"gpu.hardware on n{n} GPU 3",
        action=Action.ISOLATE_NODE,
        evidence=[f"line {k}" for k in range(evidence)],
        revision=revision,
        findings=evidence,
    )


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_latest_revision_wins_and_replays_change_nothing(store_kind, request):
    store = request.getfixturevalue(store_kind)
    save_incidents(store, [_incident(1), _incident(2)])
    save_incidents(store, [_incident(1, revision=3, evidence=3)])
    save_incidents(store, [_incident(1, revision=2, evidence=2)])  # late, older revision
    save_incidents(store, [_incident(2)])  # replayed
    got = load_incidents(store)
    assert [i.id for i in got] == [_incident(2).id, _incident(1).id]  # newest first
    one = load_incident(store, _incident(1).id)
    assert one.revision == 3 and len(one.evidence) == 3
    assert one.detected_at == T0 + timedelta(minutes=1)
    assert one.suspects[0].node == "n1" and one.status == IncidentStatus.OPEN


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_lifecycle_is_enforced_and_audited(store_kind, request):
    store = request.getfixturevalue(store_kind)
    inc = _incident(1)
    save_incidents(store, [inc])

    def move(status: IncidentStatus, seconds: int, actor: str = "alice") -> Incident:
        at = T0 + timedelta(seconds=seconds)
        return record_transition(
            store,
            Transition(
                incident_id=inc.id, status=status, reason=f"to {status}", actor=actor, at=at
            ),
        )

    assert move(IncidentStatus.MITIGATING, 10, "action-engine").status == "mitigating"
    assert load_incident(store, inc.id).status == IncidentStatus.MITIGATING
    save_incidents(store, [_incident(1, revision=2, evidence=2)])  # diagnosis keeps updating
    assert load_incident(store, inc.id).status == IncidentStatus.MITIGATING
    move(IncidentStatus.RESOLVED, 20)
    with pytest.raises(LifecycleError, match="resolved cannot become open"):
        move(IncidentStatus.OPEN, 30)
    history = transitions(store, inc.id)
    assert [(t.status, t.actor) for t in history] == [
        (IncidentStatus.MITIGATING, "action-engine"),
        (IncidentStatus.RESOLVED, "alice"),
    ]
    assert history[1].at == T0 + timedelta(seconds=20)
    assert load_incident(store, inc.id).status_reason == "to resolved"


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_an_incident_moved_back_to_open_is_listed_as_open(store_kind, request):
    from diagnosis.incident_store import IncidentFilter, query_incidents

    store = request.getfixturevalue(store_kind)
    back, never, moved = _incident(1), _incident(2), _incident(3)
    save_incidents(store, [back, never, moved])
    for inc, statuses in ((back, ("mitigating", "open")), (moved, ("mitigating",))):
        for i, status in enumerate(statuses):
            record_transition(
                store,
                Transition(
                    incident_id=inc.id,
                    status=IncidentStatus(status),
                    reason="escalated" if status == "open" else "ladder started",
                    actor="action-engine",
                    at=T0 + timedelta(seconds=10 + i),
                ),
            )
    page, _ = query_incidents(store, IncidentFilter(status=IncidentStatus.OPEN), limit=10)
    assert sorted(i.id for i in page) == sorted([back.id, never.id])
    page, _ = query_incidents(store, IncidentFilter(status=IncidentStatus.MITIGATING), limit=10)
    assert [i.id for i in page] == [moved.id]


def test_unknown_incident_is_a_clear_error(server_store):
    with pytest.raises(IncidentNotFound, match="no incident 'inc-nope'"):
        load_incident(server_store, "inc-nope")
    with pytest.raises(IncidentNotFound):
        record_transition(
            server_store,
            Transition(
                incident_id="inc-nope",
                status=IncidentStatus.RESOLVED,
                reason="x",
                actor="bob",
                at=T0,
            ),
        )


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_incident_queries_run_on_both_engines_and_bad_sql_is_a_store_error(store_kind, request):
    from analytics.store import StoreError
    from diagnosis.incident_store import IncidentFilter, query_incidents

    store = request.getfixturevalue(store_kind)
    save_incidents(store, [_incident(n) for n in range(3)])
    page, after = query_incidents(store, IncidentFilter(), limit=2)
    assert [i.id for i in page] == [_incident(2).id, _incident(1).id] and after is not None
    rest, end = query_incidents(store, IncidentFilter(), after=after, limit=2)
    assert [i.id for i in rest] == [_incident(0).id] and end is None
    with pytest.raises(StoreError):
        store.query_df(f"SELECT no_such_column FROM `{store.database}`.incidents")
