"""Fail-slow localization: which NIC, GPU or host changed when the job got slower.

A slow NIC stretches the transfers that cross it and changes no rank's own work, so it is
looked for first: each inter-node communicator's transfer time (the shortest member's
duration: the last to arrive waits for nothing but the transfer; a low quantile over many
collectives, `diagnosis.transfers`, so benign bursts do not count) before the job's step
time changed is compared with after. Communicators whose transfers grew by at least
`MIN_COMM_CHANGE` and far beyond the others' spread are slowed; the ranks all of whose
inter-node communicators slowed, and that are in the most of them, are handed to
`localize_network`, which names the NIC (or the node or leaf switch) they have in common.
With only one slowed communicator (data parallelism alone crossing nodes), or when benign
slowdowns elsewhere fit as well, the answer names every fit and says it is ambiguous: a
ring's members all wait for its slowest link. Slowed pipeline pairs alone are not taken
for a slow link: a point-to-point transfer's shortest side also waits for its pipeline's
other stages, so a slow GPU or host stretches the pairs of its replica.

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

from collections.abc import Iterable, Mapping

import numpy as np

from diagnosis.graph import CommGraph
from diagnosis.localize.network import localize_network
from diagnosis.localize.straggler import busy_profile
from diagnosis.localize.suspects import Blamed, rank_suspects
from diagnosis.model import Suspect
from ingest.schema import CollectiveProgress, CommKind

MIN_CHANGE = 0.02  # log-ratio growth of a rank's relative busy time worth blaming (~2%)
SPREAD = 8.0  # ... and beyond this many robust sds of every rank's change
LEAD_SHARE = 0.5  # ... and at least this share of the largest change (one cause at a time)
MAX_SUSPECTS = 5
MIN_COMM_CHANGE = float(np.log(1.2))  # transfer-time growth of a communicator worth blaming


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
    slowed = slowed_comms(transfers, spread)
    if not any(graph.comm_kind.get(c) != CommKind.PP for c in slowed):
        # no collective slowed: pipeline pairs alone also wait for their stages, so a GPU
        # or host that slowed a pipeline replica stretches them with every link healthy
        return _busy_change(graph, before, after, min_change, spread)
    behind = _through_slowed(graph, slowed)
    found = localize_network(graph, failing_ranks=behind)
    if len(behind) == 1:
        return found
    note = (
        f" (ambiguous: the {len(behind)} ranks of {len(slowed)} slowed communicator(s) all "
        "wait for its slowest link, so timing alone cannot tell which of their NICs or "
        "leaves it is)"
    )
    return [s.model_copy(update={"explanation": s.explanation + note}) for s in found]


def slowed_comms(transfers: Mapping[str, float], spread: float = SPREAD) -> set[str]:
    """Return the communicators whose transfer time grew by MIN_COMM_CHANGE and far beyond
    the others' (log-ratios after/before, one per inter-node communicator)."""
    comms = sorted(transfers)
    if len(comms) < 2:
        return set()
    change = np.array([transfers[c] for c in comms])
    # the unchanged population is the lower half: a slow link may stretch more than half of
    # the job's inter-node communicators (expert all-to-alls span every replica)
    calm = np.sort(change)[: max(2, len(change) // 2)]
    center = float(np.median(calm))
    mad = float(np.median(np.abs(calm - center))) * 1.4826
    bar = max(MIN_COMM_CHANGE, center + spread * mad)
    return {c for c, x in zip(comms, change.tolist(), strict=True) if x >= bar}


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
