"""Fail-slow localization: which rank's own work got slower when the job did.

A GPU that is a few percent slower than it was hides among healthy GPUs that were always a
little slower than their peers (the speed spread of a fleet), so arriving last proves
nothing. What changed does: the busy-time profile (`busy_profile`: each rank's own work
between collectives relative to its communicator peers') of records from before the job's
step time changed is compared with the profile of records after it. The rank(s) whose
relative busy time grew by at least `min_change`, and by far more than the ranks' spread of
changes (`spread` robust standard deviations) and at least half the largest change, are
blamed; several blamed ranks of one node
become that node (a host or shared-part fault).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from diagnosis.graph import CommGraph
from diagnosis.localize.straggler import busy_profile
from diagnosis.localize.suspects import Blamed, rank_suspects
from diagnosis.model import Suspect
from ingest.schema import CollectiveProgress

MIN_CHANGE = 0.02  # log-ratio growth of a rank's relative busy time worth blaming (~2%)
SPREAD = 8.0  # ... and beyond this many robust sds of every rank's change
LEAD_SHARE = 0.5  # ... and at least this share of the largest change (one cause at a time)
MAX_SUSPECTS = 5


def localize_change(
    graph: CommGraph,
    before: Iterable[CollectiveProgress],
    after: Iterable[CollectiveProgress],
    min_change: float = MIN_CHANGE,
    spread: float = SPREAD,
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
