"""Fail-slow localization: which NIC, GPU or host changed when the job got slower.

A slow NIC stretches the transfers that cross it and changes no rank's own work, so it is
looked for first: each inter-node communicator's transfer time (the shortest member's
duration: the last to arrive waits for nothing but the transfer; a low quantile over many
collectives, `diagnosis.transfers`, so benign bursts do not count) before the job's step
time changed is compared with after. Communicators whose transfers grew by at least
`MIN_COMM_CHANGE` and far beyond the others' spread are slowed; the ranks all of whose
inter-node communicators slowed, and that are in the most of them, are handed to
`localize_network`, which names the NIC (or the node or leaf switch) they have in common.
The calm population the spread is measured on is the lower half of the changes, less any
that grew by `MIN_COMM_CHANGE`: a slow link may stretch most communicators (expert
all-to-alls span every replica). A pipeline pair counts with its pipeline's least-changed
pair (`pipeline_floors`): stages wait for each other, so a GPU slower at its work (a benign
throttle) stretches the other pairs of its pipeline but never its own, while a slow link
stretches every pair of its pipeline. Slowed pipeline pairs alone are not taken for a slow
link. With only one slowed communicator (data parallelism alone crossing nodes), or when
benign slowdowns elsewhere fit as well, the answer names every fit, or the first few links
of a ring no shared part explains, and says it is ambiguous: a ring's members all wait for
its slowest link. A later answer that names a link replaces one that does not
(`supersedes`): slowed transfers show only once many collectives after the change are seen.

When no transfer slowed, a GPU or host did: a GPU a few percent slower than it was hides
among healthy GPUs that were always a little slower than their peers (the speed spread of
a fleet), so arriving last proves nothing. What changed does: the busy-time profile
(`busy_profile`: each rank's own work between collectives relative to its communicator
peers') of records from before the change is compared with the profile after it. The
rank(s) whose relative busy time grew by at least `min_change`, and by far more than the
ranks' spread of changes (`spread` robust standard deviations) and at least half the
largest change, are blamed; several blamed ranks of one node become that node (a host or
shared-part fault).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from diagnosis.graph import CommGraph
from diagnosis.localize.network import localize_network
from diagnosis.localize.straggler import busy_profile
from diagnosis.localize.suspects import Blamed, rank_suspects
from diagnosis.model import ComponentKind, Suspect
from ingest.schema import CollectiveProgress, CommKind

MIN_CHANGE = 0.02  # log-ratio growth of a rank's relative busy time worth blaming (~2%)
SPREAD = 8.0  # ... and beyond this many robust sds of every rank's change
LEAD_SHARE = 0.5  # ... and at least this share of the largest change (one cause at a time)
MAX_SUSPECTS = 5
MIN_COMM_CHANGE = float(np.log(1.2))  # transfer-time growth of a communicator worth blaming
LINK_PARTS = frozenset({ComponentKind.NIC, ComponentKind.SWITCH})  # what slowed transfers name


def localize_change(
    graph: CommGraph,
    before: Iterable[CollectiveProgress],
    after: Iterable[CollectiveProgress],
    transfers: Mapping[str, float],
    min_change: float = MIN_CHANGE,
    spread: float = SPREAD,
) -> list[Suspect]:
    """Return the NIC, GPU or node suspects that slowed between `before` and `after`.

    Inter-node transfers that slowed name the network part they share; when none did, the
    rank(s) whose own work grew are blamed. `transfers` is each inter-node communicator's
    log-ratio of transfer time after to before (`diagnosis.transfers.TransferLog.change`: a
    longer history than the records).
    """
    before, after = list(before), list(after)
    # the bar comes from every communicator's own change (a pipeline's least pair is no
    # measure of a calm one's noise); pipeline pairs must clear it with their pipeline's floor
    slowed = slowed_comms(transfers, spread, judged=pipeline_floors(graph, transfers))
    if not any(graph.comm_kind.get(c) != CommKind.PP for c in slowed):
        # no collective slowed: pipeline pairs alone also wait for their stages, so a GPU
        # or host that slowed a pipeline replica stretches them with every link healthy
        return _busy_change(graph, before, after, min_change, spread)
    behind = _through_slowed(graph, slowed)
    found = localize_network(graph, failing_ranks=behind)
    if len(behind) == 1:
        return found
    if not found:  # no part is shared by enough of them (a ring across many leaves)
        found = _ring_links(graph, behind)
    note = (
        f" (ambiguous: the {len(behind)} ranks of {len(slowed)} slowed communicator(s) all "
        "wait for its slowest link, so timing alone cannot tell which of their NICs or "
        "leaves it is)"
    )
    return [s.model_copy(update={"explanation": s.explanation + note}) for s in found]


def slowed_comms(
    transfers: Mapping[str, float],
    spread: float = SPREAD,
    judged: Mapping[str, float] | None = None,
) -> set[str]:
    """Return the communicators whose transfer time grew by MIN_COMM_CHANGE and far beyond
    the others' (log-ratios after/before, one per inter-node communicator). The bar comes
    from `transfers`; `judged` (default: the same) holds the changes held against it."""
    bar = slowed_bar(transfers, spread)
    judged = transfers if judged is None else judged
    return set() if bar is None else {c for c, x in judged.items() if x >= bar}


def slowed_bar(transfers: Mapping[str, float], spread: float = SPREAD) -> float | None:
    """Return the log-ratio a communicator's transfer time must grow by to count as slowed:
    MIN_COMM_CHANGE, and `spread` robust sds beyond the calm ones; None with nothing to
    compare with."""
    if len(transfers) < 2:
        return None
    change = np.array(list(transfers.values()))
    # the unchanged population is the lower half, less any that grew by MIN_COMM_CHANGE: a
    # slow link may stretch more than half of the job's inter-node communicators (expert
    # all-to-alls span every replica), and those are no measure of what a calm one does
    calm = np.sort(change)[: max(2, len(change) // 2)]
    calm = calm[calm < MIN_COMM_CHANGE]
    center = float(np.median(calm)) if calm.size else 0.0
    mad = float(np.median(np.abs(calm - center))) * 1.4826 if calm.size >= 2 else 0.0
    return max(MIN_COMM_CHANGE, center + spread * mad)


def pipeline_floors(graph: CommGraph, transfers: Mapping[str, float]) -> dict[str, float]:
    """Return `transfers` with each pipeline pair's change replaced by the least change among
    the pairs of its pipeline (pairs joined through their shared ranks).

    A pair's transfer time is its shortest member's duration, which still holds the wait for
    the pipeline's slowest stage: stages hand each other their activations. The pairs of that
    stage wait for nothing, so a GPU or host that slows one stage stretches the other pairs of
    its pipeline and never its own: the pipeline's least-changed pair is what its links allow.
    A slow link stretches its own pairs and, through the waits, every other pair of its
    pipeline, so its least-changed pair grows too.
    """
    out = dict(transfers)
    for pipeline in _pipelines(graph):
        changes = [transfers[c] for c in pipeline if c in transfers]
        if changes:
            least = min(changes)
            out.update({c: least for c in pipeline if c in transfers})
    return out


def _pipelines(graph: CommGraph) -> list[list[str]]:
    """Return the job's pipelines: its pipeline pairs grouped by the ranks they share."""
    parent: dict[str, str] = {}

    def root(comm: str) -> str:
        while parent[comm] != comm:
            parent[comm] = parent[parent[comm]]
            comm = parent[comm]
        return comm

    pairs = [c for c, kind in graph.comm_kind.items() if kind == CommKind.PP]
    parent.update({c: c for c in pairs})
    for comm in pairs:
        for rank in graph.members(comm):
            for other in graph.comms_of(rank):
                if other in parent:
                    parent[root(other)] = root(comm)
    groups: dict[str, list[str]] = {}
    for comm in pairs:
        groups.setdefault(root(comm), []).append(comm)
    return list(groups.values())


def _through_slowed(graph: CommGraph, slowed: set[str]) -> set[int]:
    """Return the ranks in the most slowed communicators, preferring those whose every
    inter-node communicator slowed (the ranks behind the slow part)."""
    counts: dict[int, tuple[bool, int]] = {}
    for comm in slowed:
        for r in graph.members(comm):
            if r in counts:
                continue
            crossing = [c for c in graph.comms_of(r) if c in graph.cross_node]
            hit = sum(c in slowed for c in crossing)
            counts[r] = (hit == len(crossing), hit)
    best = max(counts.values(), default=(False, 0))
    return {r for r, key in counts.items() if key == best}


def _ring_links(graph: CommGraph, behind: set[int]) -> list[Suspect]:
    """Return the links of the first MAX_SUSPECTS ranks behind slowed communicators, each
    scored as one of them: any of their NICs may be the slow one."""
    out = []
    for rank in sorted(behind)[:MAX_SUSPECTS]:
        nic = graph.rank_nic.get(rank)
        why = (
            f"{'NIC ' + nic if nic else 'the link'} of {graph.describe(rank)} carries 1 of the "
            f"{len(behind)} ranks behind the slowed transfers"
        )
        out.append(
            Suspect(
                component=ComponentKind.NIC if nic else ComponentKind.NODE,
                score=1 / len(behind),
                node=graph.rank_node.get(rank),
                nic=nic,
                switch=graph.rank_switch.get(rank),
                explanation=why,
            )
        )
    return out


def supersedes(new: Sequence[Suspect], known: Sequence[Suspect]) -> bool:
    """Whether a later localization of a fail-slow episode replaces the answer it has.

    One that names a link replaces one that does not: a slowed transfer shows only once a low
    quantile of the collectives since the change has moved (many steps), while busy times
    answer at once, so a GPU slower at its work for a while (a benign throttle) may have been
    named before the link could be. Otherwise only a narrower answer (fewer suspects)
    replaces the one it has.
    """
    if not new:
        return False
    if not known:
        return True
    link_new, link_known = names_link(new), names_link(known)
    if link_new != link_known:
        return link_new
    return len(new) < len(known)


def names_link(suspects: Iterable[Suspect]) -> bool:
    """Whether an answer names a network part (a NIC or a leaf switch)."""
    return any(s.component in LINK_PARTS for s in suspects)


def _busy_change(
    graph: CommGraph,
    before: list[CollectiveProgress],
    after: list[CollectiveProgress],
    min_change: float,
    spread: float,
) -> list[Suspect]:
    """Return the GPU (or node) suspects whose own work slowed between `before` and `after`."""
    old, new = busy_profile(graph, before), busy_profile(graph, after)
    ranks = sorted(old.keys() & new.keys())
    if len(ranks) < 2:
        return []
    change = np.array([new[r] - old[r] for r in ranks])
    mad = float(np.median(np.abs(change - np.median(change)))) * 1.4826
    bar = max(min_change, float(np.median(change)) + spread * mad, LEAD_SHARE * change.max())
    blamed = []
    for i in np.argsort(-change)[:MAX_SUSPECTS].tolist():
        if change[i] < bar:
            break
        rank = ranks[i]
        why = (
            f"{graph.describe(rank)} now takes {np.expm1(new[rank]):+.1%} vs its peers between "
            f"collectives, {np.expm1(old[rank]):+.1%} before the job slowed "
            f"(change {np.expm1(change[i]):+.1%}; the median rank changed "
            f"{np.expm1(np.median(change)):+.1%})"
        )
        blamed.append(Blamed(rank, float(change[i]), why))
    total = sum(b.weight for b in blamed)
    return rank_suspects(graph, blamed, total)[:MAX_SUSPECTS]
