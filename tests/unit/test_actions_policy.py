"""Policy parsing (strict, with line numbers) and rule selection, with no database."""

from __future__ import annotations

import pytest

from actions.model import ActionKind
from actions.policy import (
    DEFAULT_POLICY,
    HistoryView,
    PolicyError,
    load_policy,
    parse_policy,
    select,
)
from diagnosis.model import Blame, Category, ComponentKind
from tests.actions_builders import make_incident


def _no_history(_key: str, _within: float) -> HistoryView:
    return HistoryView(occurrences=1, done_kinds=frozenset())


def _kinds(sel) -> list[ActionKind]:
    return [s.kind for s in sel.rule.ladder]


def test_default_policy_parses_and_gpu_fault_gets_the_full_ladder():
    policy = load_policy(DEFAULT_POLICY)
    sel = select(policy, make_incident(), _no_history)
    assert sel is not None and sel.rule.name == "hardware-fault"
    assert _kinds(sel) == [
        ActionKind.ISOLATE_NODE,
        ActionKind.REQUEST_CAPACITY,
        ActionKind.RESTART_JOB,
        ActionKind.VERIFY_PROGRESS,
        ActionKind.REBOOT_NODE,
    ]
    assert sel.component_key == "gpu:node-0001:3"
    assert sel.target.node == "node-0001" and sel.target.job == "job-1"


def test_same_fault_after_a_reboot_escalates_to_inspection_with_no_return():
    policy = load_policy()

    def rebooted(key: str, _within: float) -> HistoryView:
        assert key == "gpu:node-0001:3"
        return HistoryView(occurrences=2, done_kinds=frozenset({ActionKind.REBOOT_NODE}))

    sel = select(policy, make_incident(), rebooted)
    assert sel is not None and sel.rule.name == "hardware-recurring" and sel.rule.final
    assert ActionKind.HARDWARE_INSPECTION in _kinds(sel)
    assert ActionKind.REBOOT_NODE not in _kinds(sel)
    assert ActionKind.RESUME_NODE not in _kinds(sel)


def test_network_fault_isolates_only_when_seen_twice_within_five_minutes():
    policy = load_policy()
    nic = make_incident(category=Category.NETWORK, component=ComponentKind.NIC, gpu=None)
    once = select(policy, nic, _no_history)
    assert once is not None and once.rule.name == "network-once"
    assert ActionKind.ISOLATE_NODE not in _kinds(once)

    def twice(_key: str, within: float) -> HistoryView:
        assert within == 300
        return HistoryView(occurrences=2, done_kinds=frozenset())

    again = select(policy, nic, twice)
    assert again is not None and again.rule.name == "network-repeated"
    assert _kinds(again)[0] == ActionKind.ISOLATE_NODE
    flapping = make_incident(category=Category.NETWORK, component=ComponentKind.NIC, findings=2)
    assert select(policy, flapping, _no_history).rule.name == "network-repeated"


def test_hang_captures_diagnostics_and_isolates_the_culprit_only():
    sel = select(load_policy(), make_incident(category=Category.HANG, score=1.0), _no_history)
    assert sel is not None and _kinds(sel)[:2] == [
        ActionKind.CAPTURE_DIAGNOSTICS,
        ActionKind.ISOLATE_NODE,
    ]
    weak = make_incident(category=Category.HANG, score=0.3)
    assert ActionKind.ISOLATE_NODE not in _kinds(select(load_policy(), weak, _no_history))


def test_application_blame_never_isolates():
    for category in (Category.APPLICATION, Category.NUMERICAL, Category.GPU_OOM):
        incident = make_incident(
            category=category, blame=Blame.APPLICATION, component=ComponentKind.JOB, node=None
        )
        sel = select(load_policy(), incident, _no_history)
        assert sel is not None and _kinds(sel)[0] == ActionKind.NOTIFY_OWNER
        assert not {ActionKind.ISOLATE_NODE, ActionKind.RESTART_JOB} & set(_kinds(sel))
    numerical = make_incident(
        category=Category.NUMERICAL, blame=Blame.APPLICATION, component=ComponentKind.JOB, node=None
    )
    rungs = select(load_policy(), numerical, _no_history).rule.ladder
    assert rungs[1].kind == ActionKind.ROLLBACK_CHECKPOINT and rungs[1].optional


def test_low_confidence_hardware_matches_nothing():
    assert select(load_policy(), make_incident(score=0.2), _no_history) is None


BAD = """\
version: 1
rules:
  - name: ok
    match:
      categories: [gpu.hardware]
    ladder: [isolate_node]
  - name: broken
    match:
      categories: [gpu.hardware]
      min_scor: 0.5
    ladder:
      - isolate_node
      - {kind: explode_node}
"""


def test_bad_policy_names_line_and_field():
    with pytest.raises(PolicyError) as err:
        parse_policy(BAD, "bad.yaml")
    text = str(err.value)
    assert "bad.yaml:10: rules.1.match.min_scor" in text
    assert "bad.yaml:13: rules.1.ladder.1.kind" in text


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("version: 1\nrules: [\n", "not valid YAML"),
        ("version: 2\nrules: []\n", "version"),
        (
            "version: 1\nrules:\n  - {name: a, match: {categories: [hang]}, ladder: [x]}\n"
            "  - {name: a, match: {categories: [hang]}, ladder: [isolate_node]}\n",
            "rules.0.ladder.0.kind",
        ),
        (
            "version: 1\nrules:\n"
            "  - {name: a, match: {categories: [hang]}, ladder: [isolate_node]}\n"
            "  - {name: a, match: {categories: [hang]}, ladder: [isolate_node]}\n",
            "duplicate rule name",
        ),
    ],
)
def test_policy_errors_are_clear(text, needle):
    with pytest.raises(PolicyError, match=needle):
        parse_policy(text)


def test_a_repeated_leaf_switch_fault_isolates_the_switch_and_a_single_one_does_not():
    from actions.executors.slurm import Slurm, SlurmDrainSwitch, SlurmError
    from actions.policy import load_policy, select
    from actions.registry import ActionRequest
    from diagnosis.fabric import Fabric
    from diagnosis.model import Suspect

    leaf = "leaf-r000-rail2"
    top = Suspect(component=ComponentKind.SWITCH, score=0.9, switch=leaf, explanation="leaf")

    def incident(findings: int):
        base = make_incident(
            5,
            category=Category.NETWORK,
            component=ComponentKind.SWITCH,
            node=None,
            gpu=None,
            findings=findings,
        )
        return base.model_copy(update={"suspects": [top]})

    policy = load_policy()
    twice = select(policy, incident(2), _no_history)
    assert twice is not None and twice.rule.name == "switch-repeated"
    assert twice.target.switch == leaf and twice.rule.ladder[0].kind == ActionKind.ISOLATE_SWITCH
    once = select(policy, incident(1), _no_history)
    assert once is not None and once.rule.name == "network-once"
    fabric = Fabric.rail_optimized([f"node-{i:04d}" for i in range(6)], nodes_per_rack=4)
    request = ActionRequest(
        incident=incident(2),
        kind=ActionKind.ISOLATE_SWITCH,
        target=twice.target,
        step=0,
        rule=twice.rule.name,
    )
    plan = SlurmDrainSwitch(Slurm(None), fabric).plan(request)
    assert plan.params["nodes"] == ["node-0000", "node-0001", "node-0002", "node-0003"]
    with pytest.raises(SlurmError, match="TG_ACT_FABRIC"):
        SlurmDrainSwitch(Slurm(None), None).plan(request)
