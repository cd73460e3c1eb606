"""Keys of diagnosis scale-out: which member owns a piece of evidence (docs/scale-out.md).

Job telemetry (steps, collectives, topologies) is keyed by job on the bus; node telemetry
(metrics, logs) is keyed by node. Diagnosis correlates a node's evidence with the job running
on it, so the route stage re-keys node evidence by that job: the job of the latest topology,
at or before the event's time, that places a rank on the node (what `DiagnosisEngine` maps the
node to when it reaches that event). A node that runs no job keeps its node as key, so its
node-level incidents come from exactly one member. The topics a member reads are
co-partitioned (same partition count, same hash), so one key's evidence meets in one member.

Route marks tell the members how far the route stage has got in each source partition, so a
member feeds job evidence no further than the node evidence that could still arrive for it.
Everything here is pure: no I/O, no clock.
"""

from __future__ import annotations

import bisect
import functools
import zlib
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from ingest.bus import TopicPartition
from ingest.schema import EventBase, GpuMetrics, HostMetrics, JobTopology, LogLine

PartitionOf = Callable[[bytes, int], int]
"""Return the partition (of a topic with that many partitions) a key is produced to."""

MARK_PREFIX = b"\x00tg-route-mark\x00"
"""Value prefix of a route mark (never the start of a JSON event)."""


def kafka_partition(key: bytes, partitions: int) -> int:
    """Return the partition Kafka's default partitioner gives a key (murmur2, as Java's)."""
    from kafka.partitioner.default import murmur2  # kafka-python: the server extra

    return (murmur2(key) & 0x7FFFFFFF) % partitions


def in_process_partition(key: bytes, partitions: int) -> int:
    """Return the partition the in-process bus gives a key (ingest.bus.partition_for)."""
    return zlib.crc32(key) % partitions


def partition_keys(partitions: int, partition_of: PartitionOf) -> list[bytes]:
    """Return one key per partition that the partitioner sends to it (marks are keyed so)."""
    keys: dict[int, bytes] = {}
    n = 0
    while len(keys) < partitions:
        key = f"~route-mark-{n}".encode()
        keys.setdefault(partition_of(key, partitions), key)
        n += 1
    return [keys[p] for p in range(partitions)]


@dataclass
class NodeJobs:
    """Which job runs on each node, over event time, from the topologies seen."""

    _times: dict[tuple[str, str], list[datetime]] = field(default_factory=dict)
    _jobs: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)

    def add(self, topology: JobTopology) -> None:
        """Learn a topology (a re-read one changes nothing)."""
        if topology.id in self._seen:
            return
        self._seen.add(topology.id)
        for node in sorted({p.node for p in topology.ranks}):
            where = (topology.cluster, node)
            times = self._times.setdefault(where, [])
            jobs = self._jobs.setdefault(where, [])
            i = bisect.bisect_right(times, topology.ts)
            times.insert(i, topology.ts)
            jobs.insert(i, topology.job_id)

    def job_at(self, cluster: str, node: str, ts: datetime) -> str | None:
        """Return the job of the latest topology at or before `ts` placing a rank on node."""
        times = self._times.get((cluster, node))
        if not times:
            return None
        i = bisect.bisect_right(times, ts)
        return self._jobs[(cluster, node)][i - 1] if i else None

    def __len__(self) -> int:
        return len(self._seen)


def route_key(event: EventBase, node_jobs: NodeJobs) -> str:
    """Return the key a member is chosen by for this event: its job where known, else its node.

    A log line naming its job goes to that job; other node evidence to the job running on
    the node at the event's time; evidence of a node with no job keeps the node.
    """
    if isinstance(event, LogLine) and event.job_id is not None:
        return event.job_id
    if isinstance(event, LogLine | GpuMetrics | HostMetrics):
        return node_jobs.job_at(event.cluster, event.node, event.ts) or event.node
    return event.key


def source_name(tp: TopicPartition) -> str:
    """Return how a mark names a source partition."""
    return f"{tp.topic}:{tp.partition}"


def source_names(partitions: Mapping[str, int]) -> frozenset[str]:
    """Return the names of every partition of the source topics (topic -> partition count)."""
    return frozenset(f"{t}:{p}" for t, n in partitions.items() for p in range(n))


@dataclass(frozen=True)
class SourceMark:
    """How far the route stage has got in one source partition."""

    ts: datetime | None
    """Latest event time routed from it (None: nothing yet)."""
    idle: bool
    """Everything it held was routed (nothing waiting to be read)."""
    sent: datetime | None = None
    """The router's wall clock when it sent the mark (None: a mark from before it said)."""


MARK_STALE_S = 5.0
"""An idle claim is void once other routers' marks in the same partition are this much newer.

A router marks every 0.5 s while idle, so a source whose latest mark is 5 s behind the
partition's newest comes from a router that stopped (killed, cut off, stuck in a long batch):
its records keep arriving unrouted until another router takes the source over. Routers'
clocks must agree to well within this (NTP does: milliseconds).
"""


def encode_mark(marks: Mapping[str, SourceMark], sent: datetime) -> bytes:
    """Return the record value of a route mark sent at `sent` (the router's wall clock)."""
    body = {n: [m.ts.isoformat() if m.ts else None, m.idle] for n, m in sorted(marks.items())}
    return MARK_PREFIX + orjson.dumps({"v": 1, "sent": sent.isoformat(), "sources": body})


def decode_mark(value: bytes) -> dict[str, SourceMark] | None:
    """Return the marks of a route-mark record, or None for any other record."""
    if not value.startswith(MARK_PREFIX):
        return None
    body = orjson.loads(value[len(MARK_PREFIX) :])
    sent = datetime.fromisoformat(body["sent"]) if body.get("sent") else None
    return {
        name: SourceMark(datetime.fromisoformat(ts) if ts else None, bool(idle), sent)
        for name, (ts, idle) in body["sources"].items()
    }


class RouteProgress:
    """What a member knows of the route stage's progress into each partition it reads."""

    def __init__(self, sources: Iterable[str], stale_s: float = MARK_STALE_S) -> None:
        self.sources = frozenset(sources)
        self.stale_s = stale_s
        self.counts: dict[str, int] = {}
        """Partitions of each source topic."""
        for name in self.sources:
            topic, _, partition = name.rpartition(":")
            self.counts[topic] = max(self.counts.get(topic, 0), int(partition) + 1)
        self._marks: dict[TopicPartition, dict[str, SourceMark]] = {}
        self._newest: dict[TopicPartition, datetime] = {}  # latest `sent` read per partition
        # per partition: each source's fellow sources in its latest mark (one router's)
        self._fellows: dict[TopicPartition, dict[str, frozenset[str]]] = {}
        # per partition: sources whose router's records were read after its latest mark
        self._unmarked: dict[TopicPartition, set[str]] = {}

    def observe(self, tp: TopicPartition, marks: Mapping[str, SourceMark]) -> None:
        """Take a mark read from partition `tp` (the latest mark of a source wins)."""
        self._marks.setdefault(tp, {}).update(marks)
        for mark in marks.values():
            if mark.sent is not None and (tp not in self._newest or mark.sent > self._newest[tp]):
                self._newest[tp] = mark.sent
        fellows = frozenset(marks)
        self._fellows.setdefault(tp, {}).update(dict.fromkeys(fellows, fellows))
        self._unmarked.get(tp, set()).difference_update(fellows)

    def routed(self, tp: TopicPartition, source: str) -> None:
        """Note a record of `source` read in partition `tp`.

        Its router marked every source it routes before this batch and marks them again after
        it. Until that next mark, none of its idle claims count: a source it called idle may
        have records appended after the claim and older than this record, routed in this
        batch after it or in the next.
        """
        self._unmarked.setdefault(tp, set()).update(
            self._fellows.get(tp, {}).get(source, frozenset((source,)))
        )

    def forget(self) -> None:
        """Drop everything (a new assignment re-reads marks from the committed offsets)."""
        self._marks.clear()
        self._newest.clear()
        self._fellows.clear()
        self._unmarked.clear()

    def hold(
        self,
        routed: Iterable[TopicPartition],
        now: datetime | None = None,
        read_to_end: Set[TopicPartition] = frozenset(),
    ) -> tuple[bool, datetime | None]:
        """Return (known, time) for the routed partitions this member reads.

        known False: some source has not said how far it got (or has records to route and
        has routed none yet): nothing may be fed. Otherwise `time` is the earliest point a
        source with records still to route has reached (None: every source is idle).
        An idle claim counts only in a partition read to its end (`read_to_end`), and only
        while its router still speaks: not `stale_s` older than the partition's newest mark
        or than `now` (the member's wall clock). Elsewhere it holds at its time like a busy
        mark, and so does the claim of a source whose router's records were read after its
        latest mark (`routed`). In a partition with records still to read (a backlog read
        again after a takeover) every mark read so far may be old: the routers' later
        batches, with records dated before the other sources' marks, are among what is still
        to read. And a router may be dead, with records arriving that no one routes until the
        source is taken over.
        """
        earliest: datetime | None = None
        for tp in routed:
            marks = self._marks.get(tp, {})
            clock = now if tp in read_to_end else None  # None: idle claims do not count
            newest = self._newest.get(tp)
            if clock is not None:
                newest = clock if newest is None else max(newest, clock)
            unmarked = self._unmarked.get(tp, set())
            for source in self.sources:
                mark = marks.get(source)
                if mark is None:
                    return False, None
                idle = (
                    mark.idle
                    and clock is not None
                    and source not in unmarked
                    and not self._stale(mark, newest)
                )
                if idle:
                    continue
                if mark.ts is None:
                    return False, None
                earliest = mark.ts if earliest is None else min(earliest, mark.ts)
        return True, earliest

    def _stale(self, mark: SourceMark, newest: datetime | None) -> bool:
        if mark.sent is None or newest is None:
            return False
        return (newest - mark.sent).total_seconds() > self.stale_s


def owner_key(job: str | None, node: str | None) -> str:
    """Return the route key of an incident: its job, else its node."""
    return job or node or "?"


@dataclass(frozen=True)
class Membership:
    """What a scale-out member reads: co-partitioned job topics and the evidence topic."""

    evidence_topic: str
    jobs_topic: str
    partitions: int
    partition_of: PartitionOf
    progress: RouteProgress

    def owned(self, assignment: Iterable[TopicPartition]) -> set[int]:
        """Return the partition numbers (the same in every co-partitioned topic) owned."""
        return {tp.partition for tp in assignment if tp.topic == self.jobs_topic}

    def owns(self, key: str, owned: set[int]) -> bool:
        """Return whether the member owning partitions `owned` owns this route key."""
        return self.partition_of(key.encode(), self.partitions) in owned

    def routed(self, assignment: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Return the evidence partitions among `assignment`."""
        return [tp for tp in assignment if tp.topic == self.evidence_topic]

    def source_of(self, topic: str, key: str) -> str | None:
        """Return the source partition an event of `topic` with `key` was read from by the
        route stage (None: not a routed topic)."""
        count = self.progress.counts.get(topic)
        if count is None:
            return None
        return source_name(TopicPartition(topic, _partition(self.partition_of, key, count)))


@functools.lru_cache(maxsize=1 << 16)
def _partition(partition_of: PartitionOf, key: str, count: int) -> int:
    """The partition of a node key, remembered: a member names the source of every evidence
    record it reads, and the same few thousand node keys need no murmur2 (pure Python) each."""
    return partition_of(key.encode(), count)
