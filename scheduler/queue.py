"""The pending queue: one sorted bucket per (GPUs needed, loan eligibility), merged in order."""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Callable, Iterator
from typing import Literal

Entry = tuple[float, float, int]
"""(order key, tie key, job id): the policy's sort key of one queued job."""
Bucket = tuple[int, bool]
"""(GPUs the job needs to start, whether it may run on loaned servers at all)."""
Step = Literal["started", "next", "drop", "stop"]


class PendingQueue:
    """Pending jobs kept sorted within buckets of equal need, so a round can skip a bucket.

    A round walks the buckets merged in policy order and drops a whole bucket once one of
    its jobs failed to fit (the rest need as much and would fail too): its cost grows with
    the jobs started and the buckets, not with the queue's length. `fresh` holds the jobs
    queued since the last walk.
    """

    def __init__(self) -> None:
        self._buckets: dict[Bucket, list[Entry]] = {}
        self.fresh: list[tuple[Entry, Bucket]] = []
        self._size = 0

    def add(self, key: tuple[float, float], job_id: int, bucket: Bucket) -> None:
        """Queue a job under its order key in its bucket."""
        entry = (key[0], key[1], job_id)
        insort(self._buckets.setdefault(bucket, []), entry)
        self.fresh.append((entry, bucket))
        self._size += 1

    def walk(self, visit: Callable[[int, Bucket], Step], fresh_only: bool = False) -> None:
        """Offer queued jobs to `visit` in order; drop the ones it started.

        `visit` answers per job: started, next (try the bucket's next job), drop (skip the
        rest of this bucket) or stop (end the walk).
        """
        started: dict[Bucket, set[int]] = {}
        if fresh_only:
            for (_, _, jid), bucket in sorted(self.fresh):
                step = visit(jid, bucket)
                if step == "started":
                    started.setdefault(bucket, set()).add(jid)
                elif step == "stop":
                    break
        else:
            heads = [(b[0], bucket, 0) for bucket, b in self._buckets.items() if b]
            heapq.heapify(heads)
            while heads:
                (_, _, jid), bucket, i = heapq.heappop(heads)
                step = visit(jid, bucket)
                if step == "started":
                    started.setdefault(bucket, set()).add(jid)
                elif step == "stop":
                    break
                if step != "drop" and i + 1 < len(entries := self._buckets[bucket]):
                    heapq.heappush(heads, (entries[i + 1], bucket, i + 1))
        self._remove(started)
        self.fresh.clear()

    def _remove(self, started: dict[Bucket, set[int]]) -> None:
        """Drop the started jobs, given per bucket."""
        for bucket, ids in started.items():
            entries = self._buckets[bucket]
            entries[:] = [e for e in entries if e[2] not in ids]
            self._size -= len(ids)
        if started and self.fresh:
            gone = set().union(*started.values())
            self.fresh = [f for f in self.fresh if f[0][2] not in gone]

    def min_need(self) -> int | None:
        """Return the fewest GPUs any queued job needs, or None when the queue is empty."""
        return min((b[0] for b, e in self._buckets.items() if e), default=None)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[int]:
        entries = [e for b in self._buckets.values() for e in b]
        return (e[2] for e in sorted(entries))
