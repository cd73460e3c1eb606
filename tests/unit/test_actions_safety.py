"""Action ids, the registry, safety limits and Slurm argument validation, with no I/O."""

from __future__ import annotations

import pytest

from actions.executors.slurm import SlurmDrain, SlurmError, check_node, clean_reason, hostlist
from actions.model import ActionKind, Target, action_id
from actions.registry import ActionRegistry, DuplicateActionError, UnknownActionError
from actions.safety import BreakerLimits, Budgets, breaker_trips, over_budget


def test_action_id_is_deterministic_per_incident_kind_and_target():
    t = Target(node="node-0001", gpu=3, job="j")
    a = action_id("inc-1", ActionKind.ISOLATE_NODE, t)
    assert a == action_id(
        "inc-1", ActionKind.ISOLATE_NODE, Target(node="node-0001", gpu=3, job="j")
    )
    assert a != action_id("inc-2", ActionKind.ISOLATE_NODE, t)
    assert a != action_id("inc-1", ActionKind.RESTART_JOB, t)
    assert a != action_id(
        "inc-1", ActionKind.ISOLATE_NODE, Target(node="node-0002", gpu=3, job="j")
    )


def test_registry_rejects_duplicates_and_names_unknown_kinds():
    from actions.executors.slurm import Slurm

    registry = ActionRegistry([SlurmDrain(Slurm())])
    with pytest.raises(DuplicateActionError, match="isolate_node"):
        registry.register(SlurmDrain(Slurm()))
    with pytest.raises(UnknownActionError, match="restart_job"):
        registry.get(ActionKind.RESTART_JOB)
    other = ActionRegistry()
    other.register(SlurmDrain(Slurm()))  # registries are instances: no global state


def test_breaker_limit_is_a_share_of_the_fleet_or_an_absolute_cap():
    share = BreakerLimits(fleet_nodes=1000)
    assert share.limit() == 50
    assert not breaker_trips(49, share) and breaker_trips(50, share)
    assert BreakerLimits(fleet_nodes=10).limit() == 1  # never zero
    cap = BreakerLimits(fleet_nodes=1000, max_nodes=3)
    assert not breaker_trips(2, cap) and breaker_trips(3, cap)


def test_budgets_break_loops_per_node_and_per_job():
    b = Budgets(per_node=2, per_job_restarts=3)
    assert over_budget(ActionKind.ISOLATE_NODE, 1, 0, b) is None
    assert "node budget" in over_budget(ActionKind.ISOLATE_NODE, 2, 0, b)
    assert over_budget(ActionKind.RESTART_JOB, 5, 2, b) is None
    assert "job budget" in over_budget(ActionKind.RESTART_JOB, 0, 3, b)
    assert over_budget(ActionKind.NOTIFY_OWNER, 99, 99, b) is None


@pytest.mark.parametrize(
    "name", ["", "-rf", "node;reboot", "a b", "node$(id)", "../etc", "n" * 64, "node-[1-3]"]
)
def test_node_names_are_validated_before_any_command(name):
    with pytest.raises(SlurmError):
        check_node(name)


def test_hostlist_and_reason_are_safe():
    assert hostlist(["node-0002", "node-0001", "node-0002"]) == "node-0001,node-0002"
    assert check_node("gpu-a100.rack7") == "gpu-a100.rack7"
    assert clean_reason('bad\nline "x=y"') == "bad line x y"


def test_the_drain_reason_is_carried_in_the_plan_and_read_back_as_given():
    from actions.executors.slurm import DrainReason, Slurm, SlurmReboot
    from actions.registry import ActionRequest
    from tests.actions_builders import make_incident

    incident = make_incident(node="node-0001")
    request = ActionRequest(
        incident=incident,
        kind=ActionKind.ISOLATE_NODE,
        target=Target(node="node-0001"),
        step=0,
        rule="isolate",
    )
    drain = SlurmDrain(Slurm()).plan(request)
    reboot = SlurmReboot(Slurm()).plan(request.model_copy(update={"kind": ActionKind.REBOOT_NODE}))
    expected = f"trainguard:{incident.id}: {incident.summary}"
    assert drain.params["reason"] == reboot.params["reason"] == expected
    assert DrainReason.text_of(drain) == expected
    # a plan stored before plans carried the reason: the same text, from its `why`
    old = drain.model_copy(update={"params": {"node": "node-0001"}})
    assert DrainReason.text_of(old) == expected


def test_a_node_is_drained_for_an_incident_only_with_trainguards_reason_for_it():
    from actions.executors.slurm import NodeState

    ours = NodeState("n1", frozenset({"IDLE", "DRAIN"}), "trainguard:inc-7: Xid 79")
    theirs = NodeState("n1", frozenset({"DRAIN"}), "bad fan (alice)")
    idle = NodeState("n1", frozenset({"IDLE"}), "trainguard:inc-7: Xid 79")
    assert ours.drained_for("inc-7") and ours.ours
    assert not ours.drained_for("inc-8")
    assert not theirs.drained_for("inc-7") and not theirs.ours
    assert not idle.drained_for("inc-7")
    # an id that is a prefix of another incident's id is not that incident
    longer = NodeState("n1", frozenset({"DRAIN"}), "trainguard:inc-12: Xid 48")
    assert not longer.drained_for("inc-1") and longer.drained_for("inc-12")
