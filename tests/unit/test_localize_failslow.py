"""Fail-slow localization of links: what a slow NIC does to the transfers of each kind of
communicator, told apart from the waits a slower GPU puts into its pipeline."""

from __future__ import annotations

import math

from diagnosis.fabric import Fabric
from diagnosis.graph import CommGraph, build_comm_graph
from diagnosis.localize.failslow import (
    localize_change,
    pipeline_floors,
    slowed_comms,
    supersedes,
)
from diagnosis.model import ComponentKind, Suspect
from ingest.schema import CommKind
from tests.localize_builders import topology

PP, DP = 4, 4  # stage p of replica d is rank p * DP + d, on node n{2p + d // 2}, GPU d % 2
NODES = [f"n{i}" for i in range(2 * PP)]


def rank(p: int, d: int) -> int:
    return p * DP + d


def pipeline_job(fabric: bool = True) -> CommGraph:
    """Return a PP 4 x DP 4 job on 8 two-GPU nodes: every pair and every ring crosses nodes."""
    place = {rank(p, d): (NODES[2 * p + d // 2], d % 2) for p in range(PP) for d in range(DP)}
    comms: dict[str, tuple[CommKind, list[int]]] = {}
    for p in range(PP):
        comms[f"dp{p}"] = (CommKind.DP, [rank(p, d) for d in range(DP)])
    for d in range(DP):
        for p in range(PP - 1):
            comms[f"pp{p}-d{d}"] = (CommKind.PP, [rank(p, d), rank(p + 1, d)])
    cabling = Fabric.rail_optimized(NODES, nodes_per_rack=4, nics_per_node=2) if fabric else None
    return build_comm_graph(topology(place, comms), cabling)


def calm(graph: CommGraph) -> dict[str, float]:
    """Every inter-node communicator's transfer time unchanged, up to a little noise."""
    return {c: 0.01 * (i % 3) for i, c in enumerate(sorted(graph.cross_node))}


def test_a_pipeline_is_judged_by_its_least_changed_pair():
    graph = pipeline_job()
    waits = {**calm(graph), "pp1-d3": 0.7, "pp2-d3": 0.7, "pp0-d3": 0.0}  # stage 0 slower
    link = {**calm(graph), "pp0-d1": 0.5, "pp1-d1": 0.6, "pp2-d1": 0.4}  # a link of d1
    floors = pipeline_floors(graph, {**waits, **{k: v for k, v in link.items() if "d1" in k}})
    assert {floors[f"pp{p}-d3"] for p in range(PP - 1)} == {0.0}
    assert {floors[f"pp{p}-d1"] for p in range(PP - 1)} == {0.4}
    assert floors["dp2"] == waits["dp2"]  # other kinds are left as they are


def test_a_slow_nic_is_told_from_a_pipeline_waiting_for_a_slower_gpu():
    graph = pipeline_job()
    changes = calm(graph)
    changes["dp2"] = math.log(1.9)  # the ring of stage 2
    changes.update({f"pp{p}-d1": math.log(1.7) for p in range(PP - 1)})  # the link's pipeline
    # replica 3 waits for its stage 0 (a throttled GPU): its other pairs grow, not stage 0's
    changes.update({"pp1-d3": math.log(2.2), "pp2-d3": math.log(2.2), "pp0-d3": 0.0})
    suspects = localize_change(graph, [], [], changes)
    slow = rank(2, 1)
    assert suspects[0].component == ComponentKind.NIC
    assert (suspects[0].node, suspects[0].nic) == (graph.rank_node[slow], graph.rank_nic[slow])
    assert graph.rank_node[rank(2, 3)] not in {s.node for s in suspects}


def test_links_that_slowed_most_communicators_still_count():
    # an expert all-to-all spans every replica: a slow link stretches most of them
    changes = {f"ep{i}": math.log(2.0) + 0.001 * i for i in range(10)}
    changes.update({f"dp{i}": 0.01 * (i % 3) for i in range(5)})
    changes["dp-slow"] = math.log(2.0)
    assert slowed_comms(changes) == {"dp-slow", *(f"ep{i}" for i in range(10))}
    assert slowed_comms({c: 0.01 * (i % 3) for i, c in enumerate(changes)}) == set()


def test_a_ring_no_shared_part_explains_is_named_as_ambiguous():
    # data parallelism alone crosses nodes: TP 2 on each of 8 nodes, no cabling known
    place = {2 * n + g: (NODES[n], g) for n in range(len(NODES)) for g in range(2)}
    comms = {f"tp{n}": (CommKind.TP, [2 * n, 2 * n + 1]) for n in range(len(NODES))}
    comms.update({f"dp{g}": (CommKind.DP, list(range(g, len(place), 2))) for g in range(2)})
    graph = build_comm_graph(topology(place, comms))
    suspects = localize_change(graph, [], [], {"dp0": math.log(2.0), "dp1": 0.0})
    assert suspects and {s.node for s in suspects} <= set(NODES)
    assert all("ambiguous" in s.explanation for s in suspects)
    assert all(s.score <= 1 / len(NODES) for s in suspects)


def suspect(kind: ComponentKind, node: str = "n0") -> Suspect:
    return Suspect(component=kind, score=0.5, node=node, explanation="")


def test_a_later_answer_naming_a_link_replaces_one_naming_a_gpu():
    gpu, nic = [suspect(ComponentKind.GPU)], [suspect(ComponentKind.NIC, "n1")]
    assert supersedes(nic, gpu)
    assert not supersedes(gpu, nic)  # the link's slowed transfers do not go away
    assert supersedes(nic, nic * 2) and not supersedes(nic * 2, nic)  # else only narrower
    assert supersedes(gpu, []) and not supersedes([], gpu)
