"""Network localization: the NIC, node, leaf or rack that the failing ranks share."""

from __future__ import annotations

import pytest

from diagnosis.fabric import Fabric
from diagnosis.graph import build_comm_graph
from diagnosis.localize import localize_network
from diagnosis.model import ComponentKind
from ingest.schema import CommKind, HostMetrics, LogLine
from tests.localize_builders import run_twin, topology

# Six 8-GPU hosts with 4 NICs each (GPU i -> rail i % 4), racks of three. TP8 inside a host,
# pipeline stage 0 on c0-c2 and stage 1 on c3-c5, DP across a stage's hosts, PP pairs
# across stages.
HOSTS = [f"c{i}" for i in range(6)]
PLACE = {r: (HOSTS[r // 8], r % 8) for r in range(48)}
COMMS = {f"tp{n}": (CommKind.TP, list(range(8 * n, 8 * n + 8))) for n in range(6)}
COMMS |= {
    f"dp{s}-{g}": (CommKind.DP, [g + 8 * n for n in range(3 * s, 3 * s + 3)])
    for s in range(2)
    for g in range(8)
}
COMMS |= {
    f"pp{n}-{g}": (CommKind.PP, [8 * n + g, 8 * (n + 3) + g]) for n in range(3) for g in range(8)
}
FABRIC = Fabric.from_mapping(
    {
        "nodes": {
            h: {"rack": f"R{i // 3}", "leaves": [f"L{i // 3}-{rail}" for rail in range(4)]}
            for i, h in enumerate(HOSTS)
        }
    }
)
GRAPH = build_comm_graph(topology(PLACE, COMMS), FABRIC)


def ranks_on(host: str, rails: set[int] | None = None) -> list[int]:
    return [r for r, (h, g) in PLACE.items() if h == host and (rails is None or g % 4 in rails)]


def test_no_failures_no_suspect():
    assert localize_network(GRAPH) == []
    assert localize_network(GRAPH, [999], ["nope"]) == []


def test_every_rank_on_one_nic_failing_points_at_the_nic():
    (suspect,) = localize_network(GRAPH, ranks_on("c4", {1}))  # GPUs 1 and 5 share mlx5_1
    assert suspect.component is ComponentKind.NIC
    assert (suspect.node, suspect.nic, suspect.switch) == ("c4", "mlx5_1", "L1-1")
    assert suspect.score == 1.0
    assert suspect.explanation.startswith("NIC mlx5_1 on c4 (rail 1, leaf L1-1) carries 2 of 2")


def test_every_rail_of_one_node_failing_points_at_the_node():
    (suspect,) = localize_network(GRAPH, ranks_on("c2"))
    assert (suspect.component, suspect.node, suspect.score) == (ComponentKind.NODE, "c2", 1.0)


def test_one_rail_failing_on_several_nodes_of_a_leaf_points_at_the_leaf():
    failing = ranks_on("c3", {2}) + ranks_on("c4", {2}) + ranks_on("c5", {2})
    (suspect,) = localize_network(GRAPH, failing)
    assert (suspect.component, suspect.switch, suspect.score) == (ComponentKind.SWITCH, "L1-2", 1.0)
    assert "serving 3 of the job's nodes" in suspect.explanation


def test_partial_leaf_failure_still_prefers_the_leaf_over_its_nics():
    failing = ranks_on("c3", {2}) + ranks_on("c4", {2})  # 2 of the 3 nodes under L1-2
    top = localize_network(GRAPH, failing)[0]
    assert (top.component, top.switch) == (ComponentKind.SWITCH, "L1-2")
    assert 0.5 < top.score < 1.0


def test_a_whole_rack_failing_points_at_all_its_leaves():
    failing = ranks_on("c0") + ranks_on("c1") + ranks_on("c2")
    suspects = localize_network(GRAPH, failing)
    assert {s.switch for s in suspects} == {"L0-0", "L0-1", "L0-2", "L0-3"}
    assert all(s.component is ComponentKind.SWITCH for s in suspects)
    assert sum(s.score for s in suspects) == pytest.approx(1.0)
    assert "every rail of R0 fails together" in suspects[0].explanation


def test_failing_communicators_alone_locate_the_nic():
    comms = {c for r in (43, 47) for c in GRAPH.comms_of(r) if c in GRAPH.cross_node}  # c5 rail 3
    assert comms == {"dp1-3", "dp1-7", "pp2-3", "pp2-7"}
    (suspect,) = localize_network(GRAPH, failing_comms=comms)
    assert (suspect.component, suspect.node, suspect.nic) == (ComponentKind.NIC, "c5", "mlx5_3")
    assert "carries 4 of 4 failing communicators" in suspect.explanation


def test_one_failing_communicator_is_ambiguous_between_its_members_nics():
    suspects = localize_network(GRAPH, failing_comms=["dp0-1"])
    assert {(s.component, s.node) for s in suspects} == {
        (ComponentKind.NIC, h) for h in ("c0", "c1", "c2")
    }
    assert len({s.score for s in suspects}) == 1  # shared equally, each low
    assert sum(s.score for s in suspects) < 0.5
    assert "ambiguous: 3 components" in suspects[0].explanation


def test_intra_node_communicators_are_not_network_evidence():
    assert localize_network(GRAPH, failing_comms=["tp3"]) == []


def test_without_a_fabric_only_nodes_are_named_and_a_fabric_can_be_passed_in():
    bare = build_comm_graph(topology(PLACE, COMMS))
    (node,) = localize_network(bare, ranks_on("c1", {0}))
    assert (node.component, node.node) == (ComponentKind.NODE, "c1")
    (nic,) = localize_network(bare, ranks_on("c1", {0}), fabric=FABRIC)
    assert (nic.component, nic.nic) == (ComponentKind.NIC, "mlx5_0")


def test_unrelated_failures_are_explained_separately_with_smaller_scores():
    suspects = localize_network(GRAPH, ranks_on("c0", {3}) + ranks_on("c5"))
    assert {(s.component, s.node) for s in suspects} == {
        (ComponentKind.NODE, "c5"),
        (ComponentKind.NIC, "c0"),
    }
    assert sum(s.score for s in suspects) <= 1.0 + 1e-9


# ---------------------------------------------------------------------- twin scenarios


def ib_error_ranks(run) -> set[int]:
    """Return the ranks whose NCCL log shows an IB completion error (what the NIC took down)."""
    return {
        e.rank
        for e in run.events
        if isinstance(e, LogLine) and e.rank is not None and "NET/IB : Got completion" in e.line
    }


def nic_down_ranks(run) -> list[int]:
    """Return the ranks whose NIC the host agent reports not ACTIVE."""
    down = {
        (h.node, n.nic)
        for h in run.events
        if isinstance(h, HostMetrics)
        for n in h.nics
        if n.state != "ACTIVE"
    }
    g = run.graph
    return [r for r, nic in g.rank_nic.items() if (g.rank_node[r], nic) in down]


@pytest.mark.parametrize(
    ("job", "node", "nic", "nics"),
    [
        ({"id": "j", "tp": 8, "pp": 2, "dp": 4}, 3, 2, 8),
        ({"id": "j", "tp": 4, "pp": 2, "dp": 8}, 6, 1, 4),
        ({"id": "j", "tp": 8, "pp": 1, "dp": 4, "first_node": 4}, 5, 7, 8),
    ],
)
def test_twin_nic_down_is_localized_to_the_nic(job, node, nic, nics):
    run = run_twin(job, [{"kind": "nic_down", "node": node, "nic": nic, "at_s": 30}], nics=nics)
    truth = run.truth[0]["component"]
    for suspects in (
        localize_network(run.graph, ib_error_ranks(run)),
        localize_network(run.graph, nic_down_ranks(run)),
    ):
        top = suspects[0]
        assert top.component is ComponentKind.NIC
        assert (top.node, top.nic) == (truth["node"], truth["nic"])


@pytest.mark.parametrize(("rack", "rail", "per_rack"), [(1, 6, 4), (0, 3, 2), (2, 0, 2)])
def test_twin_switch_down_on_one_rail_is_localized_to_the_leaf(rack, rail, per_rack):
    fault = {"kind": "switch_down", "rack": rack, "rail": rail, "at_s": 30}
    run = run_twin({"id": "j", "tp": 8, "pp": 2, "dp": 4}, [fault], nodes_per_rack=per_rack)
    (suspect,) = localize_network(run.graph, nic_down_ranks(run))
    assert suspect.component is ComponentKind.SWITCH
    assert [suspect.switch] == run.truth[0]["component"]["switches"]


def test_twin_switch_down_on_every_rail_names_the_racks_leaves():
    run = run_twin(
        {"id": "j", "tp": 8, "pp": 2, "dp": 4}, [{"kind": "switch_down", "rack": 1, "at_s": 30}]
    )
    suspects = localize_network(run.graph, nic_down_ranks(run))
    assert sorted(str(s.switch) for s in suspects) == run.truth[0]["component"]["switches"]


def test_twin_nic_down_from_the_failing_ranks_communicators():
    run = run_twin(
        {"id": "j", "tp": 8, "pp": 2, "dp": 4},
        [{"kind": "nic_down", "node": 2, "nic": 4, "at_s": 30}],
    )
    g = run.graph
    comms = {c for r in ib_error_ranks(run) for c in g.comms_of(r) if c in g.cross_node}
    (suspect,) = localize_network(g, failing_comms=comms)
    assert (suspect.component, suspect.node, suspect.nic) == (
        ComponentKind.NIC,
        "node-0002",
        "mlx5_4",
    )


def test_twin_healthy_run_reports_no_failing_rank():
    run = run_twin({"id": "j", "tp": 8, "pp": 2, "dp": 4})
    assert ib_error_ranks(run) == set()
    assert localize_network(run.graph, nic_down_ranks(run)) == []
