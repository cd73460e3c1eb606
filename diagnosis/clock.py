"""Diagnosis time as the sources agree on it, so that no single source can move it.

Every event comes from a source (its partitioning key: a node for node telemetry, a job for job
telemetry). A source with a wrong clock, or a producer that stamps events in the future, must
not move diagnosis time for every other job: that would make every job look stalled at once,
or push every time-based detector late. So the clock is the second-latest time among the sources
heard from recently (arrival within `idle_s` of wall time):

- one source ahead of the rest moves nothing; two must agree;
- a source that went silent (a hung job, a dead node) stops counting once it has been quiet
  for `idle_s`, so it cannot hold time back either;
- with a single source heard from, its own time is the clock (no one else to protect).

The admission policy (`ingest.event_time`) bounds how far ahead any event can be at all; this
bounds who can use that lead.
"""

from __future__ import annotations

from datetime import datetime


class SourceClock:
    """The latest event time per source and the time they agree on."""

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self._latest: dict[str, datetime] = {}
        self._arrived: dict[str, float] = {}

    def observe(self, source: str, ts: datetime, arrived: float) -> None:
        """Note an event of `source` at event time `ts`, received at monotonic time `arrived`."""
        current = self._latest.get(source)
        if current is None or ts > current:
            self._latest[source] = ts
        self._arrived[source] = arrived

    @property
    def empty(self) -> bool:
        """Whether no source has been heard from yet."""
        return not self._latest

    def now(self, at: float) -> datetime | None:
        """Return the agreed time at monotonic time `at` (None before any event)."""
        active = [ts for s, ts in self._latest.items() if at - self._arrived[s] <= self.idle_s]
        return _second_latest(active) or _second_latest(list(self._latest.values()))


def _second_latest(times: list[datetime]) -> datetime | None:
    if len(times) < 2:
        return times[0] if times else None
    first = second = min(times)
    for ts in times:
        if ts > first:
            first, second = ts, first
        elif ts > second:
            second = ts
    return second
