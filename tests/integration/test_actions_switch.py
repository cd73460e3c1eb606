"""A bad leaf switch seen twice: every node cabled to it is drained in the real Slurm, human
drains are kept, and the breaker counts every node of the plan."""

from __future__ import annotations

import pytest

from actions.executors.slurm import SlurmDrainSwitch
from actions.model import ActionKind, State
from diagnosis.fabric import Fabric, NodeLinks
from diagnosis.model import Category, ComponentKind, Suspect
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import cleanup_nodes, engine, slurm_registry

pytestmark = pytest.mark.integration
LEAF = "leaf-r007-rail3"


def _fabric(behind: list[str], elsewhere: list[str]) -> Fabric:
    def links(leaf: str) -> NodeLinks:
        return NodeLinks(
            rack="rack-007", leaves=[f"leaf-r007-rail{r}" if r != 3 else leaf for r in range(8)]
        )

    nodes = {n: links(LEAF) for n in behind}
    nodes |= {n: links("leaf-r008-rail3") for n in elsewhere}
    return Fabric(nodes=nodes)


def _switch_incident(n: int):
    base = make_incident(
        n,
        category=Category.NETWORK,
        component=ComponentKind.SWITCH,
        node=None,
        gpu=None,
        job="no-such-job",
        findings=2,
    )
    top = Suspect(
        component=ComponentKind.SWITCH,
        score=0.9,
        switch=LEAF,
        explanation=f"leaf switch {LEAF} (serving 4 of the job's nodes)",
    )
    return base.model_copy(update={"suspects": [top]})


def test_a_repeated_switch_fault_drains_every_node_behind_the_leaf(server_store, slurm):
    behind = ["node-0051", "node-0052", "node-0053", "node-0054"]
    other = ["node-0055"]
    cleanup_nodes(slurm, behind + other)
    slurm.drain("node-0053", "human: reseating cables")
    registry = slurm_registry(slurm)
    registry.register(SlurmDrainSwitch(slurm, _fabric(behind, other)))
    try:
        got = engine(server_store, slurm, registry=registry).handle(_switch_incident(61))
        states = {a.plan.kind: a.state for a in got}
        assert states[ActionKind.ISOLATE_SWITCH] == State.DONE
        for node in ("node-0051", "node-0052", "node-0054"):
            state = slurm.node(node)
            assert state.ours and LEAF not in state.reason  # reason names the incident
        assert slurm.node("node-0053").reason == "human: reseating cables"
        assert not slurm.node("node-0055").drained
        (isolate,) = [a for a in got if a.plan.kind == ActionKind.ISOLATE_SWITCH]
        assert isolate.result is not None and isolate.result.outputs["preserved"] == ["node-0053"]
    finally:
        cleanup_nodes(slurm, behind + other)


def test_the_breaker_counts_every_node_a_switch_isolation_would_take(server_store, slurm):
    behind = ["node-0061", "node-0062", "node-0063", "node-0064"]
    cleanup_nodes(slurm, behind)
    registry = slurm_registry(slurm)
    registry.register(SlurmDrainSwitch(slurm, _fabric(behind, [])))
    try:
        # 60 nodes at 5%: at most 3 isolated per window, and the leaf has 4
        got = engine(server_store, slurm, fleet=60, registry=registry).handle(_switch_incident(62))
        states = {a.plan.kind: a.state for a in got}
        assert states[ActionKind.ISOLATE_SWITCH] == State.BLOCKED
        assert not any(slurm.node(n).drained for n in behind)
    finally:
        cleanup_nodes(slurm, behind)
