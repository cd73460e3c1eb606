"""The fabric inventory and the per-job communication graph built from a topology."""

from __future__ import annotations

import pytest

from diagnosis.fabric import Fabric, FabricError, leaf_name
from diagnosis.graph import (
    build_comm_graph,
    comm_key,
    gpu_key,
    nic_key,
    node_key,
    rank_key,
    switch_key,
)
from ingest.schema import CommKind
from tests.localize_builders import run_twin, topology

# Two 4-GPU hosts with two NICs each; ranks deliberately not in node order.
PLACEMENT = {0: ("hx-a", 2), 1: ("hx-b", 0), 2: ("hx-a", 3), 3: ("hx-b", 1)}
COMMS = {
    "0xa1": (CommKind.TP, [0, 2]),
    "0xb2": (CommKind.TP, [1, 3]),
    "0xc3": (CommKind.DP, [0, 1]),
    "0xd4": (CommKind.DP, [2, 3]),
}
FABRIC = {
    "nodes": {
        "hx-a": {"rack": "R7", "leaves": ["sw-7a", "sw-7b"], "nics": ["ib0", "ib1"]},
        "hx-b": {"rack": "R7", "leaves": ["sw-7a", "sw-7b"]},
    }
}


def test_fabric_from_inventory_maps_gpus_to_rails_nics_and_leaves():
    fabric = Fabric.from_mapping(FABRIC)
    assert fabric.rail_of("hx-a", 3) == 1
    assert fabric.nic_of("hx-a", 2) == "ib0"
    assert fabric.nic_of("hx-b", 3) == "mlx5_1"
    assert fabric.leaf_of("hx-b", 2) == "sw-7a"
    assert fabric.rack_of("hx-a") == "R7"
    assert Fabric.from_json(fabric.model_dump_json()) == fabric


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodes": {"n1": {"rack": "r", "leaves": []}}}, "nodes.n1.leaves"),
        ({"nodes": {"n1": {"rack": "r", "leaves": ["a"], "nics": ["x", "y"]}}}, "NIC names"),
        ({"nodes": {"n1": {"rack": "r", "leaves": ["a"], "uplink": 3}}}, "uplink"),
    ],
)
def test_bad_inventory_names_the_key(data, message):
    with pytest.raises(FabricError, match=message):
        Fabric.from_mapping(data)


def test_fabric_json_errors_and_unknown_nodes_are_fabric_errors():
    with pytest.raises(FabricError, match="not valid JSON"):
        Fabric.from_json("{nodes")
    with pytest.raises(FabricError, match="JSON object"):
        Fabric.from_json("[]")
    with pytest.raises(FabricError, match="not in the fabric"):
        Fabric.from_mapping(FABRIC).leaf_of("hx-z", 0)


def test_rail_optimized_follows_the_cabling_order_and_leaf_names():
    fabric = Fabric.rail_optimized([f"node-{i:04d}" for i in range(10)], nodes_per_rack=4)
    assert fabric.rack_of("node-0003") == "rack-000"
    assert fabric.rack_of("node-0004") == "rack-001"
    assert fabric.leaf_of("node-0009", 6) == leaf_name(2, 6) == "leaf-r002-rail6"
    four = Fabric.rail_optimized(["a", "b"], nodes_per_rack=1, nics_per_node=4)
    assert four.nic_of("b", 6) == "mlx5_2"
    assert four.leaf_of("b", 6) == "leaf-r001-rail2"
    with pytest.raises(FabricError):
        Fabric.rail_optimized(["a"], nodes_per_rack=0)


def test_graph_links_ranks_comms_gpus_nodes_nics_and_leaves():
    graph = build_comm_graph(topology(PLACEMENT, COMMS), Fabric.from_mapping(FABRIC))
    g = graph.graph
    assert set(g[rank_key(2)]) == {comm_key("0xa1"), comm_key("0xd4"), gpu_key("hx-a", 3)}
    assert set(g[gpu_key("hx-a", 3)]) == {rank_key(2), node_key("hx-a"), nic_key("hx-a", "ib1")}
    assert set(g[switch_key("sw-7a")]) == {nic_key("hx-a", "ib0"), nic_key("hx-b", "mlx5_0")}
    assert {n[0] for n in g} == {"rank", "comm", "gpu", "node", "nic", "switch"}
    assert graph.comms_of(3) == ("0xb2", "0xd4")
    assert graph.members("0xc3") == (0, 1)
    assert graph.members("nope") == ()
    assert graph.comm_kind["0xd4"] is CommKind.DP
    assert graph.cross_node == {"0xc3", "0xd4"}
    assert graph.nodes_of("0xa1") == {"hx-a"}
    assert graph.rank_nic == {0: "ib0", 1: "mlx5_0", 2: "ib1", 3: "mlx5_1"}
    assert graph.rank_switch[3] == "sw-7b"
    assert graph.node_ranks == {"hx-a": (0, 2), "hx-b": (1, 3)}
    assert graph.describe(1) == "rank 1 (hx-b GPU 0)"
    assert graph.world == 4


def test_graph_without_fabric_or_with_a_partial_one_keeps_ranks_and_nodes():
    bare = build_comm_graph(topology(PLACEMENT, COMMS))
    assert not any(n[0] in ("nic", "switch") for n in bare.graph)
    assert bare.rank_nic == {}
    partial = Fabric.from_mapping({"nodes": {"hx-a": FABRIC["nodes"]["hx-a"]}})
    half = build_comm_graph(topology(PLACEMENT, COMMS), partial)
    assert set(half.rank_nic) == {0, 2}
    assert half.describe(99) == "rank 99 (placement unknown)"


def test_twin_topology_graph_has_every_communicator_and_placement():
    run = run_twin({"id": "j", "tp": 4, "pp": 2, "dp": 4}, nics=4)
    graph = run.graph
    assert graph.world == 32
    assert len(graph.comm_members) == 8 + 8 + 16  # tp groups, dp groups, pp pairs
    assert graph.comms_of(5) == ("tp-p0-d1", "dp-p0-t1", "pp-p0-d1-t1")
    assert graph.rank_node[13] == "node-0001" and graph.rank_gpu[13] == 5
    assert graph.rank_nic[13] == "mlx5_1"  # four NICs: GPU 5 uses rail 1
    assert graph.rank_switch[13] == "leaf-r000-rail1"
    assert "tp-p0-d1" not in graph.cross_node
