"""What each inter-node communicator's transfers took, step after step, for fail-slow.

A NIC (or link) that turns slow stretches the transfers that cross it and changes nothing
else, so localizing it needs many steps of transfer times from before and after the change:
more than the job's raw collective records that are kept (a few steps of a large job). This
log keeps, per communicator that crosses nodes, one number per collective: its transfer time,
the shortest member's duration (the last to arrive waits for nothing but the transfer), for
the latest `keep` collectives. Memory: `keep` floats per inter-node communicator.

`change` compares a low quantile of each communicator's transfer times before a change point
with the same quantile after it, skipping one step after it (the step in flight when the
part turned slow): a low quantile is what the link allows; a benign burst (a throttled
peer, a busy host) raises some collectives, never the floor.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta

import numpy as np

from diagnosis.graph import CommGraph
from ingest.schema import CollectiveProgress, CollectiveState

KEEP = 96  # collectives kept per communicator (about as many steps)
QUANTILE = 25  # the low quantile of transfer times compared
MIN_SAMPLES = 3  # collectives a window needs on both sides of the change


class TransferLog:
    """Per inter-node communicator: (time, transfer seconds) of its latest collectives."""

    def __init__(self, graph: CommGraph, keep: int = KEEP) -> None:
        self.graph = graph
        self.keep = keep
        self._by_comm: dict[str, OrderedDict[int, tuple[datetime, float]]] = {}
        self._before: tuple[datetime, dict[str, float]] | None = None  # floors before a change

    def observe(self, p: CollectiveProgress) -> None:
        """Take one completed record of the job (others are ignored)."""
        if p.state != CollectiveState.COMPLETED or p.duration_ms is None or p.duration_ms <= 0:
            return
        if p.comm not in self.graph.cross_node:
            return
        seqs = self._by_comm.setdefault(p.comm, OrderedDict())
        seconds = p.duration_ms / 1000
        known = seqs.get(p.seq)
        if known is None:
            seqs[p.seq] = (p.ts, seconds)
            while len(seqs) > self.keep:
                seqs.popitem(last=False)
        elif seconds < known[1]:
            seqs[p.seq] = (known[0], seconds)

    def change(self, at: datetime, skip: timedelta) -> dict[str, float]:
        """Return each communicator's log-ratio of transfer time after `at` + `skip` to before."""
        floors = self._floors_before(at)
        out: dict[str, float] = {}
        for comm, seqs in self._by_comm.items():
            after = [s for ts, s in seqs.values() if ts > at + skip]
            if comm in floors and len(after) >= MIN_SAMPLES:
                out[comm] = float(np.log(_floor(after) / floors[comm]))
        return out

    def _floors_before(self, at: datetime) -> dict[str, float]:
        """Each communicator's floor before `at`, kept from the first call for that change
        point: by a later call the collectives before it may have left the log."""
        if self._before is None or self._before[0] != at:
            floors = {}
            for comm, seqs in self._by_comm.items():
                before = [s for ts, s in seqs.values() if ts <= at]
                if len(before) >= MIN_SAMPLES:
                    floors[comm] = _floor(before)
            self._before = (at, floors)
        return self._before[1]


def _floor(values: list[float]) -> float:
    return float(np.percentile(values, QUANTILE, method="higher"))
