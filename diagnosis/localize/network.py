"""Network localization: the NIC, node, leaf switch or rack that failing ranks have in common.

Each candidate component is scored by how well the ranks and communicators that go through
it match the failing ones (Jaccard: failing through it over failing or through it), so a
NIC whose every rank fails beats its node, whose other rails are fine, and a leaf under
which several nodes fail together beats each of their NICs. Components are picked greedily
until the failures are explained.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from diagnosis.fabric import Fabric
from diagnosis.graph import CommGraph
from diagnosis.model import ComponentKind, Suspect

MIN_MATCH = 0.2
MAX_SUSPECTS = 5
_SPECIFICITY = {"nic": 0, "node": 1, "switch": 2, "rack": 3}


@dataclass(frozen=True)
class _Candidate:
    """One component and the job's ranks and communicators that go through it."""

    level: str  # nic, node, switch, rack
    name: str
    node: str | None
    nic: str | None
    switches: tuple[str, ...]
    ranks: frozenset[int]
    comms: frozenset[str]


def localize_network(
    graph: CommGraph,
    failing_ranks: Iterable[int] = (),
    failing_comms: Iterable[str] = (),
    fabric: Fabric | None = None,
) -> list[Suspect]:
    """Return the network components common to the failing ranks/communicators, best first.

    `fabric` defaults to the one the graph was built with; without any, only nodes are named.
    """
    ranks = frozenset(r for r in failing_ranks if r in graph.rank_node)
    comms = frozenset(c for c in failing_comms if c in graph.comm_members)
    if not ranks and not comms:
        return []
    nic, rail, leaf, rack = _links(graph, graph.fabric if fabric is None else fabric)
    candidates = _candidates(graph, ranks | _members(graph, comms), nic, leaf, rack)
    total = len(ranks) + len(comms)
    out: list[Suspect] = []
    left_r, left_c = set(ranks), set(comms)
    for _ in range(MAX_SUSPECTS):
        if not (left_r or left_c):
            break
        tied, match = _best(candidates, left_r, left_c, ranks - left_r, comms - left_c)
        if not tied or match < MIN_MATCH:
            break
        hit_r, hit_c = left_r & tied[0].ranks, left_c & tied[0].comms
        left_r -= hit_r
        left_c -= hit_c
        score = match * (len(hit_r) + len(hit_c)) / total / len(tied)
        for cand in tied[:MAX_SUSPECTS]:
            found = _suspects(graph, cand, score, hit_r, hit_c, ranks, comms, rail)
            out.extend(_ambiguous(s, len(tied)) for s in found)
    return out


def _ambiguous(suspect: Suspect, tied: int) -> Suspect:
    """Say so when several components explain the same failures equally well."""
    if tied == 1:
        return suspect
    note = f" (ambiguous: {tied} components fit these failures equally well)"
    return suspect.model_copy(update={"explanation": suspect.explanation + note})


def _links(
    graph: CommGraph, fabric: Fabric | None
) -> tuple[dict[int, str], dict[int, int], dict[int, str], dict[int, str]]:
    """Return rank -> NIC, rail, leaf and rack from the fabric (empty without one)."""
    if fabric is None:
        return {}, {}, {}, {}
    if fabric is graph.fabric:
        racks = {r: fabric.nodes[n].rack for r, n in graph.rank_node.items() if r in graph.rank_nic}
        return graph.rank_nic, graph.rank_rail, graph.rank_switch, racks
    nic, rail, leaf, rack = {}, {}, {}, {}
    for r, node in graph.rank_node.items():
        links = fabric.nodes.get(node)
        if links is not None:
            rail[r] = graph.rank_gpu[r] % len(links.leaves)
            nic[r], leaf[r], rack[r] = links.nic_name(rail[r]), links.leaves[rail[r]], links.rack
    return nic, rail, leaf, rack


def _members(graph: CommGraph, comms: frozenset[str]) -> set[int]:
    return {r for c in comms for r in graph.members(c)}


def _candidates(
    graph: CommGraph,
    touched: frozenset[int] | set[int],
    nic: dict[int, str],
    leaf: dict[int, str],
    rack: dict[int, str],
) -> list[_Candidate]:
    """Return every NIC, node, leaf and rack that a failing rank or communicator touches."""
    groups: dict[tuple[str, str], set[int]] = defaultdict(set)
    wanted = {(lvl, k) for r in touched for lvl, k in _keys(graph, r, nic, leaf, rack)}
    for r in graph.rank_node:
        for lvl, k in _keys(graph, r, nic, leaf, rack):
            if (lvl, k) in wanted:
                groups[(lvl, k)].add(r)
    out = []
    for (lvl, k), members in groups.items():
        comms = {c for r in members for c in graph.comms_of(r)}
        if lvl != "node":
            comms &= graph.cross_node  # an intra-node communicator never leaves the node
        any_rank = next(iter(members))
        switches = tuple(sorted({leaf[r] for r in members if r in leaf}))
        node = graph.rank_node[any_rank] if lvl in ("nic", "node") else None
        device = nic.get(any_rank) if lvl == "nic" else None
        out.append(_Candidate(lvl, k, node, device, switches, frozenset(members), frozenset(comms)))
    return out


def _keys(
    graph: CommGraph, r: int, nic: dict[int, str], leaf: dict[int, str], rack: dict[int, str]
) -> list[tuple[str, str]]:
    node = graph.rank_node[r]
    keys = [("node", node)]
    if r in nic:
        keys += [("nic", f"{node}/{nic[r]}"), ("switch", leaf[r]), ("rack", rack[r])]
    return keys


def _best(
    candidates: list[_Candidate],
    left_r: set[int],
    left_c: set[str],
    done_r: frozenset[int],
    done_c: frozenset[str],
) -> tuple[list[_Candidate], float]:
    """Return the candidates matching the unexplained failures best (the most specific level
    on ties; several when they explain the same failures equally), and their match."""
    best: list[_Candidate] = []
    best_key = (0.0, 0)
    for cand in candidates:
        hit = len(left_r & cand.ranks) + len(left_c & cand.comms)
        if not hit:
            continue
        union = len(left_r | (cand.ranks - done_r)) if left_r else 0
        union += len(left_c | (cand.comms - done_c)) if left_c else 0
        key = (round(hit / union, 9), -_SPECIFICITY[cand.level])
        if key > best_key:
            best, best_key = [cand], key
        elif key == best_key and _same_hits(cand, best[0], left_r, left_c):
            best.append(cand)
    return best, best_key[0]


def _same_hits(a: _Candidate, b: _Candidate, left_r: set[int], left_c: set[str]) -> bool:
    return left_r & a.ranks == left_r & b.ranks and left_c & a.comms == left_c & b.comms


def _suspects(
    graph: CommGraph,
    cand: _Candidate,
    score: float,
    hit_r: set[int],
    hit_c: set[str],
    ranks: frozenset[int],
    comms: frozenset[str],
    rail: dict[int, int],
) -> list[Suspect]:
    """Return the suspect(s) for one picked component: one per leaf switch for a rack."""
    evidence = _evidence(graph, cand, hit_r, hit_c, ranks, comms)
    if cand.level == "nic":
        where = f"rail {rail[next(iter(cand.ranks))]}, leaf {cand.switches[0]}"
        why = f"NIC {cand.nic} on {cand.node} ({where}) {evidence}"
        return [_suspect(ComponentKind.NIC, score, why, cand.node, cand.nic, cand.switches[0])]
    if cand.level == "node":
        return [_suspect(ComponentKind.NODE, score, f"{cand.node} {evidence}", cand.node)]
    if cand.level == "switch":
        nodes = len({graph.rank_node[r] for r in cand.ranks})
        why = f"leaf switch {cand.name} (serving {nodes} of the job's nodes) {evidence}"
        return [_suspect(ComponentKind.SWITCH, score, why, switch=cand.name)]
    n = len(cand.switches)
    why = f"every rail of {cand.name} fails together, so suspect its leaves or what they share"
    return [
        _suspect(
            ComponentKind.SWITCH,
            score / n,
            f"leaf switch {leaf} (1 of {n} leaves of {cand.name}): {why}; the rack {evidence}",
            switch=leaf,
        )
        for leaf in cand.switches
    ]


def _suspect(
    kind: ComponentKind,
    score: float,
    why: str,
    node: str | None = None,
    nic: str | None = None,
    switch: str | None = None,
) -> Suspect:
    return Suspect(
        component=kind,
        score=min(1.0, score),
        node=node,
        nic=nic,
        switch=switch,
        explanation=why,
    )


def _evidence(
    graph: CommGraph,
    cand: _Candidate,
    hit_r: set[int],
    hit_c: set[str],
    ranks: frozenset[int],
    comms: frozenset[str],
) -> str:
    """Say how many failures go through a component and how many of its users fail."""
    parts = []
    if ranks:
        sample = ", ".join(graph.describe(r) for r in sorted(hit_r)[:2])
        more = ", ..." if len(hit_r) > 2 else ""
        parts.append(
            f"carries {len(hit_r)} of {len(ranks)} failing ranks ({sample}{more});"
            f" {len(ranks & cand.ranks)} of the {len(cand.ranks)} ranks using it fail"
        )
    if comms:
        parts.append(
            f"carries {len(hit_c)} of {len(comms)} failing communicators;"
            f" {len(comms & cand.comms)} of the {len(cand.comms)} communicators through it fail"
        )
    return "; ".join(parts)
