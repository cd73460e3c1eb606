"""The route stage of diagnosis scale-out: node evidence re-keyed by the job it concerns.

Each member of `trainguard diagnose` (scale-out mode) runs one: a member of the route group
reading a share of the node-keyed topics (metrics, logs), with every job topology read in
full from the jobs topic. Each node record is forwarded unchanged to the evidence topic,
keyed by `route_key` (the job on the node at the event's time, else the node), so it reaches
the member that owns that job. After each batch, a route mark goes to every partition of the
evidence topic: for each source partition this member routes, the latest event time routed
and whether it is caught up; members feed job evidence no further than that.

Guarantees: a source offset is committed only after what it produced (records and the mark
after them) is acknowledged by the broker, so a crash re-routes, never loses; a record
routed twice is fed once (members skip event ids they have seen). Topologies are read to the
end before a batch is routed, so node evidence already on the bus when its job's topology was
is routed to the job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from diagnosis.routing import (
    NodeJobs,
    PartitionOf,
    SourceMark,
    encode_mark,
    partition_keys,
    route_key,
    source_name,
)
from ingest.bus import BusError, Consumer, Producer, Record, TopicPartition
from ingest.schema import DEFAULT_CLUSTER, Event, JobTopology, SchemaError, decode_event

_FIRST = datetime.min.replace(tzinfo=UTC)  # sorts undecodable records first

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouterSettings:
    """How the route stage batches and marks."""

    batch_records: int = 5000
    poll_timeout_s: float = 0.2
    mark_interval_s: float = 0.5  # marks while nothing is routed (an idle source says so)
    topology_wait_s: float = 30.0  # longest a batch waits for the jobs topic to be read
    cluster: str = DEFAULT_CLUSTER  # of events that name none (TG_CLUSTER)


@dataclass
class RouterStats:
    """Counters for logs and /metrics."""

    routed: int = 0
    to_job: int = 0
    undecodable: int = 0
    topologies: int = 0
    marks: int = 0
    bus_errors: int = 0
    errors: int = 0  # steps that failed unexpectedly (logged)


class EvidenceRouter:
    """Routes node evidence to the evidence topic, keyed by the job it concerns."""

    def __init__(
        self,
        consumer: Consumer,
        topologies: Consumer,
        producer: Producer,
        evidence_topic: str,
        partitions: int,
        partition_of: PartitionOf,
        settings: RouterSettings | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`topologies` reads the whole jobs topic (a group of its own, never committed);
        `wall` dates the marks (members tell a silent router's sources by it)."""
        self.consumer = consumer
        self.topologies = topologies
        self.producer = producer
        self.evidence_topic = evidence_topic
        self.settings = settings or RouterSettings()
        self.stats = RouterStats()
        self.node_jobs = NodeJobs()
        self._mark_keys = partition_keys(partitions, partition_of)
        self._monotonic = monotonic
        self._wall = wall
        self._reached: dict[TopicPartition, datetime] = {}
        self._done: dict[TopicPartition, int] = {}  # next offset to commit, once marked
        self._last_mark = -1e18

    def run(self, stop: threading.Event) -> None:
        """Route until stop is set."""
        while not stop.is_set():
            try:
                self.step()
            except Exception:  # noqa: BLE001 - the outermost loop: diagnosis waits on routing
                self.stats.errors += 1
                log.exception("route stage step failed; going on")
                time.sleep(1.0)
        self._mark_and_commit()
        log.info("route stage stopping: %s", self.stats)

    def step(self) -> int:
        """Route one batch: read topologies to the end, forward, mark, commit."""
        try:
            records = self.consumer.poll(self.settings.batch_records, self.settings.poll_timeout_s)
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("bus: %s", exc)
            return 0
        if records and not self._read_topologies():
            log.warning("jobs topic not read to its end; routing with %d jobs", len(self.node_jobs))
        decoded = [(record, self._decode(record)) for record in records]
        # forward in event-time order: a poll returns its records source by source, and a
        # node's log line must not reach the evidence partition before the same node's
        # earlier host scrape (members feed what they read; a port-down scrape read after the
        # NCCL error it caused no longer opens the incident)
        decoded.sort(key=lambda pair: _FIRST if pair[1] is None else pair[1].ts)
        for record, event in decoded:
            self._route(record, event)
        if records or self._monotonic() - self._last_mark >= self.settings.mark_interval_s:
            self._mark_and_commit()
        return len(records)

    def on_revoke(self, partitions: set[TopicPartition]) -> None:
        """Forget partitions given up; their next owner re-routes what was not committed.

        Called by the client inside a poll, where nothing may block on the bus.
        """
        for tp in partitions:
            self._reached.pop(tp, None)
            self._done.pop(tp, None)

    def _read_topologies(self) -> bool:
        """Read the jobs topic until caught up; return whether it was."""
        deadline = self._monotonic() + self.settings.topology_wait_s
        while True:
            try:
                for record in self.topologies.poll(10_000, 0.05):
                    self._topology(record)
                owned = self.topologies.assignment()
                if owned and owned <= self.topologies.caught_up():
                    return True
            except BusError as exc:
                self.stats.bus_errors += 1
                log.warning("jobs topic: %s", exc)
            if self._monotonic() >= deadline:
                return False

    def _topology(self, record: Record) -> None:
        event = self._decode(record)
        if isinstance(event, JobTopology):
            self.node_jobs.add(event)
            self.stats.topologies += 1

    def _decode(self, record: Record) -> Event | None:
        try:
            return decode_event(record.value).in_cluster(self.settings.cluster)
        except SchemaError:
            return None

    def _route(self, record: Record, event: Event | None) -> None:
        self._done[record.tp] = max(self._done.get(record.tp, 0), record.offset + 1)
        if event is None:
            self.stats.undecodable += 1  # the sink dead-letters it; diagnosis skips it anyway
            return
        key = route_key(event, self.node_jobs)
        self.stats.to_job += key != event.key
        self.producer.send_raw(self.evidence_topic, key.encode(), record.value)
        self.stats.routed += 1
        reached = self._reached.get(record.tp)
        if reached is None or event.ts > reached:
            self._reached[record.tp] = event.ts

    def _mark_and_commit(self) -> None:
        """Send a mark to every evidence partition, then commit the sources routed."""
        owned = self.consumer.assignment()
        # "idle" claims a source has nothing left to route: judged against ends looked up now,
        # after every record forwarded so far was fetched (a source whose broker was last
        # fetched before it appended a record older than those forwarded is not idle)
        caught_up = self.consumer.caught_up(fresh=True)
        marks = {
            source_name(tp): SourceMark(self._reached.get(tp), tp in caught_up) for tp in owned
        }
        try:
            if marks:
                value = encode_mark(marks, self._wall())
                for key in self._mark_keys:
                    self.producer.send_raw(self.evidence_topic, key, value)
            self.producer.flush()
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("routed records not acknowledged (re-routed after a restart): %s", exc)
            return
        self.stats.marks += bool(marks)
        self._last_mark = self._monotonic()
        done = {tp: offset for tp, offset in self._done.items() if tp in owned}
        if not done:
            return
        try:
            self.consumer.commit(done)
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("route offsets not committed (re-routed after a restart): %s", exc)
