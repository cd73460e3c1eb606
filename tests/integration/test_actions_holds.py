"""The engine honours opted-out nodes and maintenance windows (real ClickHouse, the default
policy, Kubernetes executors against the loopback fake API server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from actions import store as db
from actions.engine import ActionEngine, EngineConfig
from actions.executors.kube_marks import CONDITION, KubeOptOut
from actions.executors.kubernetes import KubeCordon, KubeEvictJob, KubeUncordon, core_api
from actions.executors.scheduler import SchedulerCapacity
from actions.holds import Holds
from actions.model import ActionKind, Mode, State
from actions.policy import load_policy
from actions.progress import VerifyProgress
from actions.registry import ActionRegistry
from actions.safety import BreakerLimits
from actions.silences import WindowNotFound, WindowSpec, create_window, delete_window, list_windows
from diagnosis.incident_store import load_incident
from diagnosis.model import IncidentStatus
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import AlwaysProgress, LoggingAction, PoolCapacity
from tests.integration.kube_fake import FakeKubeApi

pytestmark = pytest.mark.integration
HOUR = timedelta(hours=1)


@pytest.fixture
def kube() -> Iterator[FakeKubeApi]:
    api = FakeKubeApi(
        {"gpu-1": {}, "gpu-2": {}, "gpu-3": {"trainguard.io/remediation": "disabled"}}
    )
    yield api
    api.close()


def _engine(store, kube: FakeKubeApi) -> tuple[ActionEngine, LoggingAction]:
    api = core_api(kube.url)
    reboot = LoggingAction(ActionKind.REBOOT_NODE)
    registry = ActionRegistry(
        [
            KubeCordon(api),
            KubeUncordon(api),
            KubeEvictJob(api, "training"),
            SchedulerCapacity(PoolCapacity(["spare-1", "spare-2", "spare-3"])),
            VerifyProgress(AlwaysProgress()),
            reboot,
        ]
    )
    for kind in (ActionKind.HARDWARE_INSPECTION, ActionKind.NOTIFY_OWNER):
        registry.register(LoggingAction(kind))
    config = EngineConfig(mode=Mode.AUTO, breaker=BreakerLimits(fleet_nodes=100))
    holds = Holds(store, KubeOptOut(api))
    return ActionEngine(store, registry, load_policy(), config, holds=holds), reboot


def _events(store, incident_id: str) -> list[tuple[str, str, dict]]:
    frame = db.audit_events(store, incident_id=incident_id)
    rows = zip(frame["event"], frame["kind"], frame["detail"], strict=True)
    return [(e, k, json.loads(d)) for e, k, d in rows]


def test_an_opted_out_node_is_not_isolated_and_the_audit_says_why(server_store, kube):
    engine, reboot = _engine(server_store, kube)
    incident = make_incident(1, node="gpu-3")
    actions = engine.handle(incident)
    assert [a.state for a in actions][:2] == [State.BLOCKED, State.PLANNED]
    assert not kube.nodes["gpu-3"]["spec"].get("unschedulable")
    assert kube.condition("gpu-3", CONDITION) is None and not kube.events
    assert not kube.evicted and not reboot.calls, "nothing after the refused isolation ran"
    events = _events(server_store, incident.id)
    opted = [d for e, k, d in events if e == "opted_out"]
    assert opted and opted[0]["opt_out"] == "label trainguard.io/remediation=disabled"
    assert opted[0]["node"] == "gpu-3" and "escalated" in [e for e, _, _ in events]
    assert load_incident(server_store, incident.id).status == IncidentStatus.OPEN
    # the same fault on a node that did not opt out is isolated as usual
    other = make_incident(2, node="gpu-1")
    assert engine.handle(other)[0].state == State.DONE
    assert kube.nodes["gpu-1"]["spec"]["unschedulable"] is True
    assert kube.condition("gpu-1", CONDITION)["status"] == "True"


def test_a_maintenance_window_skips_what_it_matches_until_it_ends(server_store, kube):
    engine, reboot = _engine(server_store, kube)
    now = datetime.now(UTC)
    spec = WindowSpec(
        node="gpu-1", category="gpu.*", starts_at=now - HOUR, ends_at=now + HOUR, reason="fw"
    )
    window = create_window(server_store, spec, author="alice")
    silenced = make_incident(1, node="gpu-1")
    actions = engine.handle(silenced)
    assert actions and {a.state for a in actions} == {State.SKIPPED}
    assert not kube.nodes["gpu-1"]["spec"].get("unschedulable") and not kube.evicted
    assert not reboot.calls
    skips = [(k, d) for e, k, d in _events(server_store, silenced.id) if e == "silenced"]
    assert [k for k, _ in skips] == [a.plan.kind.value for a in actions]
    assert {d["window"] for _, d in skips} == {window.id}
    assert skips[0][1]["author"] == "alice" and skips[0][1]["window_reason"] == "fw"
    assert load_incident(server_store, silenced.id).status != IncidentStatus.RESOLVED
    # a node the window does not name is remediated
    assert engine.handle(make_incident(2, node="gpu-2"))[0].state == State.DONE
    # the window ends (the engine's clock moves past it): the same kind of fault acts again
    engine.clock = lambda: now + 2 * HOUR
    later = make_incident(4, node="gpu-1", at=now + 2 * HOUR)
    assert engine.handle(later)[0].state == State.DONE
    assert kube.nodes["gpu-1"]["spec"]["unschedulable"] is True


def test_a_deleted_window_stops_matching_at_once(server_store, kube):
    engine, _ = _engine(server_store, kube)
    now = datetime.now(UTC)
    spec = WindowSpec(job="job-1", starts_at=now - HOUR, ends_at=now + HOUR, reason="upgrade")
    window = create_window(server_store, spec, author="alice")
    assert [w.id for w in list_windows(server_store, active_at=now)] == [window.id]
    gone = delete_window(server_store, window.id, actor="bob")
    assert gone.deleted and gone.deleted_by == "bob"
    assert list_windows(server_store, active_at=now) == []
    assert list_windows(server_store) == []
    kept = list_windows(server_store, include_deleted=True)
    assert [(w.id, w.deleted, w.author) for w in kept] == [(window.id, True, "alice")]
    with pytest.raises(WindowNotFound):
        delete_window(server_store, window.id, actor="bob")
    assert engine.handle(make_incident(1, node="gpu-2"))[0].state == State.DONE


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_windows_round_trip_on_the_server_and_chdb(store_kind, request):
    store = request.getfixturevalue(store_kind)
    now = datetime.now(UTC).replace(microsecond=0)
    first = create_window(
        store,
        WindowSpec(cluster="*", starts_at=now - HOUR, ends_at=now + HOUR, reason="freeze"),
        author="alice",
    )
    later = create_window(
        store,
        WindowSpec(node="gpu-9", starts_at=now + HOUR, ends_at=now + 2 * HOUR, reason="later"),
        author="bob",
    )
    assert [w.id for w in list_windows(store, active_at=now)] == [first.id]
    assert [w.id for w in list_windows(store, active_at=now + HOUR)] == [later.id]
    assert {w.id for w in list_windows(store)} == {first.id, later.id}
    back = next(w for w in list_windows(store) if w.id == first.id)
    assert back.model_dump(exclude={"created_at"}) == first.model_dump(exclude={"created_at"})


def test_an_act_process_of_one_cluster_leaves_other_clusters_incidents_alone(server_store, kube):
    engine, _ = _engine(server_store, kube)
    engine.config = engine.config.model_copy(update={"cluster": "west"})
    elsewhere = make_incident(1, node="gpu-1").model_copy(update={"cluster": "east"})
    assert engine.handle(elsewhere) == []
    assert not kube.nodes["gpu-1"]["spec"].get("unschedulable") and not kube.events
    assert _events(server_store, elsewhere.id) == []  # east's act process audits it, not this
    own = make_incident(2, node="gpu-1").model_copy(update={"cluster": "west"})
    actions = engine.handle(own)
    assert actions[0].state == State.DONE and actions[0].plan.cluster == "west"
    assert kube.nodes["gpu-1"]["spec"]["unschedulable"] is True
