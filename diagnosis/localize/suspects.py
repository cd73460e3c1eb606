"""Helpers shared by the localizers: turning blamed ranks into GPU or node suspects."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from diagnosis.graph import CommGraph
from diagnosis.model import ComponentKind, Suspect


@dataclass(frozen=True)
class Blamed:
    """One rank a localizer blames, with its weight and the sentence that says why."""

    rank: int
    weight: float
    why: str


def rank_suspects(graph: CommGraph, blamed: list[Blamed], total: float) -> list[Suspect]:
    """Return GPU suspects for blamed ranks, merged into one node suspect where a node has several.

    Scores are each suspect's weight over `total`, so they sum to at most 1.
    """
    if total <= 0:
        return []
    by_node: dict[str | None, list[Blamed]] = defaultdict(list)
    for b in blamed:
        by_node[graph.rank_node.get(b.rank)].append(b)
    out: list[Suspect] = []
    for node, group in by_node.items():
        if node is not None and len(group) > 1:
            out.append(_node_suspect(graph, node, group, total))
        else:
            out.extend(_gpu_suspect(graph, b, total) for b in group)
    return sorted(out, key=lambda s: -s.score)


def _gpu_suspect(graph: CommGraph, b: Blamed, total: float) -> Suspect:
    return Suspect(
        component=ComponentKind.GPU,
        score=_share(b.weight, total),
        node=graph.rank_node.get(b.rank),
        gpu=graph.rank_gpu.get(b.rank),
        nic=graph.rank_nic.get(b.rank),
        switch=graph.rank_switch.get(b.rank),
        rank=b.rank,
        explanation=b.why,
    )


def _node_suspect(graph: CommGraph, node: str, group: list[Blamed], total: float) -> Suspect:
    group = sorted(group, key=lambda b: -b.weight)
    gpus = ", ".join(str(graph.rank_gpu[b.rank]) for b in group)
    lead = f"{len(group)} ranks on {node} (GPUs {gpus}) are blamed together, so suspect the node"
    return Suspect(
        component=ComponentKind.NODE,
        score=_share(sum(b.weight for b in group), total),
        node=node,
        explanation=f"{lead}. {group[0].why}",
    )


def _share(weight: float, total: float) -> float:
    return min(1.0, max(0.0, weight / total))
