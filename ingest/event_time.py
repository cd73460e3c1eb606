"""Event-time admission: which event times a receiver accepts, judged by its own clock.

An event's time comes from the machine that produced it, and machines are wrong: an RTC reset
to 1970 or 2000, a clock set years ahead, a producer that writes year 1. One such event must
not stop or mislead diagnosis for everyone, so every receiver (the sink and the diagnosis
worker) asks the same question of every decoded event, with the same settings:

- earlier than `max_age_s` before the receiving clock, or later than `max_lead_s` after it:
  refused (the sink dead-letters it with the reason; the worker skips and counts it);
- outside what the store can hold (ClickHouse `DateTime`: 1970-01-01 .. 2106-02-07): refused
  whatever the settings say.

`max_lead_s` is small (clocks in a cluster agree within seconds; minutes is a broken clock).
`max_age_s` is large (ten years): agents re-send buffered telemetry after a partition, a new
agent reads a node's old kernel log, and recordings and log corpora of past runs are replayed on
purpose; it refuses what only a reset clock (1970, 2000) produces. A bound of None turns that
side off (a simulation paced faster than real time runs ahead of the wall clock by design).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

STORABLE_FROM = datetime(1970, 1, 2, tzinfo=UTC)  # a day inside DateTime's range, any zone
STORABLE_UNTIL = datetime(2106, 2, 6, tzinfo=UTC)
DEFAULT_MAX_LEAD_S = 300.0
DEFAULT_MAX_AGE_S = 3650 * 86400.0


@dataclass(frozen=True)
class EventTimePolicy:
    """The event times a receiver accepts, relative to its own clock."""

    max_lead_s: float | None = DEFAULT_MAX_LEAD_S
    max_age_s: float | None = DEFAULT_MAX_AGE_S

    def refusal(self, ts: datetime, now: datetime) -> str | None:
        """Return why an event time is refused at receiving time `now`, or None to accept."""
        if not STORABLE_FROM <= ts <= STORABLE_UNTIL:
            return f"event time {ts.isoformat()} is outside the storable range 1970-2106"
        if self.max_lead_s is not None and ts - now > timedelta(seconds=self.max_lead_s):
            ahead = (ts - now).total_seconds()
            return (
                f"event time {ts.isoformat()} is {ahead:,.0f} s ahead of the receiving clock "
                f"(limit {self.max_lead_s:g} s)"
            )
        if self.max_age_s is not None and now - ts > timedelta(seconds=self.max_age_s):
            behind = (now - ts).total_seconds()
            return (
                f"event time {ts.isoformat()} is {behind:,.0f} s behind the receiving clock "
                f"(limit {self.max_age_s:g} s)"
            )
        return None

    def admitted(self, now: datetime) -> tuple[datetime, datetime]:
        """Return the earliest and latest event times accepted at `now` (both included).

        Exactly the times `refusal` accepts: a receiver compares each event with these
        bounds and asks `refusal` for the reason only for the times outside them.
        """
        earliest, latest = STORABLE_FROM, STORABLE_UNTIL
        if self.max_age_s is not None:
            earliest = max(earliest, _shifted(now, -self.max_age_s, earliest))
        if self.max_lead_s is not None:
            latest = min(latest, _shifted(now, self.max_lead_s, latest))
        return earliest, latest


def _shifted(now: datetime, seconds: float, beyond: datetime) -> datetime:
    """Return `now` moved by `seconds`, or `beyond` where that leaves the datetime range."""
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        return beyond


UNBOUNDED = EventTimePolicy(max_lead_s=None, max_age_s=None)
"""Only the storable range: for simulations that run ahead of the wall clock."""
