"""Where each partition's input stands, and up to which event time feeding is safe.

Records of different partitions arrive interleaved and, while catching up on a backlog, far
apart in event time; an event is fed only once every partition with records still to read has
reached its time. Idleness is counted in *flowing* time: monotonic time less the pauses of all
input (a broker outage, a quiet cluster), so a pause in all input is not a partition's silence.
After such a pause, what the consumer knew of each partition's end predates it: a partition is
unconfirmed until it delivers again, or until the lateness allowance of real time has passed
since input resumed (the consumer has polled, and so fetched every partition, since). In
flowing time that second condition never comes if the input stops for good right after a
burst: a partition with nothing to deliver would hold every buffered event back for ever.
"""

from __future__ import annotations

from collections.abc import Set
from datetime import datetime

from ingest.bus import TopicPartition


class InputProgress:
    """The latest event time and arrival of each partition, and the pauses of all input."""

    def __init__(self, lateness_s: float, idle_partition_s: float, now: float) -> None:
        self.lateness_s, self.idle_partition_s = lateness_s, idle_partition_s
        self.last_record = now  # monotonic time the last records arrived
        self._reached: dict[TopicPartition, datetime] = {}  # latest event time read
        self._heard: dict[TopicPartition, float] = {}  # flowing time of the last record
        self._paused_s = 0.0  # input pauses longer than the lateness allowance, summed
        self._unconfirmed: set[TopicPartition] = set()  # silent since the last pause
        self._resumed = 0.0  # flowing time when input resumed after the last pause
        self._resumed_at = 0.0  # monotonic time of the same

    def arrived(self, now: float, assignment: Set[TopicPartition]) -> float:
        """Note that a poll brought records at `now`; return the flowing time they count at."""
        paused = now - self.last_record - self.lateness_s
        self.last_record = now
        if paused > 0:
            self._paused_s += paused
            self._unconfirmed = set(assignment)
            self._resumed = self.flow(now)
            self._resumed_at = now
        return self.flow(now)

    def heard_from(self) -> Set[TopicPartition]:
        """Return the partitions some record has come from."""
        return self._heard.keys()

    def heard(self, tp: TopicPartition, flow: float) -> None:
        """Note a record of `tp` (decodable or not) read at flowing time `flow`."""
        self._heard[tp] = flow
        self._unconfirmed.discard(tp)

    def reached(self, tp: TopicPartition, ts: datetime) -> None:
        """Note an event of `tp` at event time `ts`."""
        last = self._reached.get(tp)
        if last is None or ts > last:
            self._reached[tp] = ts

    def flow(self, now: float) -> float:
        """Return monotonic time less the pauses of all input (what partition idleness counts)."""
        pausing = max(0.0, now - self.last_record - self.lateness_s)
        return now - self._paused_s - pausing

    def holding(
        self, now: float, owned: Set[TopicPartition], caught_up: Set[TopicPartition]
    ) -> list[datetime] | None:
        """Return the event times partitions hold feeding back at (None: hold everything).

        A partition still holding unread records holds it back at the time it has reached; one
        with records to read that has delivered nothing yet holds everything back; one silent
        for `idle_partition_s` of flowing time while others delivered is not waited for.
        """
        if self._unconfirmed and now - self._resumed_at >= self.lateness_s:
            self._unconfirmed.clear()  # fetched every partition since input resumed
        flow = self.flow(now)
        held: list[datetime] = []
        behind = owned - caught_up
        for tp in behind | (owned & self._unconfirmed):
            if tp not in behind:  # caught up by what was known before the last pause
                heard = max(self._heard.get(tp, self._resumed), self._resumed)
                if flow - heard >= self.idle_partition_s:
                    continue  # silent since, while others delivered: nothing was waiting
                if tp not in self._reached:
                    return None  # it may deliver any time now
            elif tp not in self._reached:
                if tp in self._heard:
                    continue  # delivered only undecodable records
                return None  # records to read, none seen yet: their time is unknown
            if flow - self._heard.get(tp, self._resumed) < self.idle_partition_s:
                held.append(self._reached[tp])
        return held
