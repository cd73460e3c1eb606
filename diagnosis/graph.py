"""A job's communication graph: ranks, communicators, GPUs, nodes, NICs and leaf switches.

Built once per job snapshot (a `JobTopology`, optionally with the `Fabric` inventory) with
bulk operations; the lookups localization needs on every call (rank -> communicators,
communicator -> members, rank -> GPU, NIC and leaf) are precomputed next to the networkx
graph. Graph nodes are tuples whose first element is the kind:
("rank", 13), ("comm", "tp-p0-d1"), ("gpu", "node-0001", 5), ("node", "node-0001"),
("nic", "node-0001", "mlx5_5"), ("switch", "leaf-r000-rail5").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx

from diagnosis.fabric import Fabric
from ingest.schema import CommKind, JobTopology


def rank_key(rank: int) -> tuple[str, int]:
    """Return the graph node of a rank."""
    return ("rank", rank)


def comm_key(comm: str) -> tuple[str, str]:
    """Return the graph node of a communicator."""
    return ("comm", comm)


def gpu_key(node: str, gpu: int) -> tuple[str, str, int]:
    """Return the graph node of a GPU."""
    return ("gpu", node, gpu)


def node_key(node: str) -> tuple[str, str]:
    """Return the graph node of a host."""
    return ("node", node)


def nic_key(node: str, nic: str) -> tuple[str, str, str]:
    """Return the graph node of a NIC."""
    return ("nic", node, nic)


def switch_key(switch: str) -> tuple[str, str]:
    """Return the graph node of a leaf switch."""
    return ("switch", switch)


@dataclass(frozen=True)
class CommGraph:
    """One job's communication graph and the lookups localization uses."""

    job_id: str
    graph: nx.Graph
    comm_members: dict[str, tuple[int, ...]]
    comm_kind: dict[str, CommKind]
    rank_comms: dict[int, tuple[str, ...]]
    rank_node: dict[int, str]
    rank_gpu: dict[int, int]
    fabric: Fabric | None = None
    rank_nic: dict[int, str] = field(default_factory=dict)
    rank_rail: dict[int, int] = field(default_factory=dict)
    rank_switch: dict[int, str] = field(default_factory=dict)
    node_ranks: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cross_node: frozenset[str] = frozenset()
    comm_index: dict[str, int] = field(default_factory=dict)

    @property
    def world(self) -> int:
        """Return the number of placed ranks."""
        return len(self.rank_node)

    def describe(self, rank: int) -> str:
        """Return "rank 13 (node-0001 GPU 5)" for explanations."""
        node = self.rank_node.get(rank)
        if node is None:
            return f"rank {rank} (placement unknown)"
        return f"rank {rank} ({node} GPU {self.rank_gpu[rank]})"

    def comms_of(self, rank: int) -> tuple[str, ...]:
        """Return the communicators a rank belongs to."""
        return self.rank_comms.get(rank, ())

    def members(self, comm: str) -> tuple[int, ...]:
        """Return a communicator's member ranks (empty if unknown)."""
        return self.comm_members.get(comm, ())

    def nodes_of(self, comm: str) -> set[str]:
        """Return the hosts a communicator spans."""
        return {self.rank_node[r] for r in self.members(comm) if r in self.rank_node}


def build_comm_graph(topology: JobTopology, fabric: Fabric | None = None) -> CommGraph:
    """Build a job's communication graph once from its topology (and the fabric, if known)."""
    members = {c.comm: tuple(c.ranks) for c in topology.communicators}
    kinds = {c.comm: c.kind for c in topology.communicators}
    rank_node = {p.rank: p.node for p in topology.ranks}
    rank_gpu = {p.rank: p.gpu for p in topology.ranks}
    rank_comms: dict[int, list[str]] = defaultdict(list)
    for comm, ranks in members.items():
        for r in ranks:
            rank_comms[r].append(comm)
    node_ranks: dict[str, list[int]] = defaultdict(list)
    for r, node in rank_node.items():
        node_ranks[node].append(r)

    g = nx.Graph()
    g.add_nodes_from(rank_key(r) for r in range(topology.world_size))
    g.add_nodes_from(comm_key(c) for c in members)
    g.add_edges_from((rank_key(r), comm_key(c)) for c, ranks in members.items() for r in ranks)
    g.add_edges_from((rank_key(r), gpu_key(rank_node[r], rank_gpu[r])) for r in rank_node)
    g.add_edges_from(
        (gpu_key(rank_node[r], rank_gpu[r]), node_key(rank_node[r])) for r in rank_node
    )

    nic: dict[int, str] = {}
    rail: dict[int, int] = {}
    switch: dict[int, str] = {}
    if fabric is not None:
        nic, rail, switch = _wire_fabric(g, fabric, rank_node, rank_gpu)
    cross = frozenset(
        c for c, ranks in members.items() if len({rank_node.get(r) for r in ranks}) > 1
    )
    return CommGraph(
        job_id=topology.job_id,
        graph=g,
        comm_members=members,
        comm_kind=kinds,
        rank_comms={r: tuple(cs) for r, cs in rank_comms.items()},
        rank_node=rank_node,
        rank_gpu=rank_gpu,
        fabric=fabric,
        rank_nic=nic,
        rank_rail=rail,
        rank_switch=switch,
        node_ranks={n: tuple(rs) for n, rs in node_ranks.items()},
        cross_node=cross,
        comm_index={c: i for i, c in enumerate(members)},
    )


def _wire_fabric(
    g: nx.Graph, fabric: Fabric, rank_node: dict[int, str], rank_gpu: dict[int, int]
) -> tuple[dict[int, str], dict[int, int], dict[int, str]]:
    """Add GPU -> NIC -> leaf edges for every placed rank the inventory knows."""
    nic: dict[int, str] = {}
    rail: dict[int, int] = {}
    switch: dict[int, str] = {}
    for r, node in rank_node.items():
        links = fabric.nodes.get(node)
        if links is None:
            continue  # a partial inventory: this node stays without NIC and switch
        index = rank_gpu[r] % len(links.leaves)
        nic[r] = links.nic_name(index)
        rail[r] = index
        switch[r] = links.leaves[index]
    g.add_edges_from(
        (gpu_key(rank_node[r], rank_gpu[r]), nic_key(rank_node[r], nic[r])) for r in nic
    )
    g.add_edges_from((nic_key(rank_node[r], nic[r]), node_key(rank_node[r])) for r in nic)
    g.add_edges_from((nic_key(rank_node[r], nic[r]), switch_key(switch[r])) for r in nic)
    return nic, rail, switch


def neighbourhood(graph: CommGraph, rank: int, max_members: int = 64) -> dict[str, object]:
    """Return a rank's parallel groups: each communicator's kind, members and nodes (capped)."""
    comms = []
    for comm in graph.comms_of(rank):
        members = graph.members(comm)
        comms.append(
            {
                "comm": comm,
                "kind": graph.comm_kind[comm].value,
                "size": len(members),
                "members": [
                    {"rank": r, "node": graph.rank_node.get(r), "gpu": graph.rank_gpu.get(r)}
                    for r in members[:max_members]
                ],
                "nodes": sorted(graph.nodes_of(comm)),
            }
        )
    return {
        "rank": rank,
        "node": graph.rank_node.get(rank),
        "gpu": graph.rank_gpu.get(rank),
        "communicators": comms,
    }
