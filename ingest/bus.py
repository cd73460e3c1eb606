"""The event bus interface, topic routing, and the in-process bus of the embedded mode.

Kafka (`ingest.kafka_bus`) and the in-process bus speak the same interface: a producer that
routes typed events to topics by family and keys them (node telemetry by node, job telemetry
by job id), and consumers in consumer groups that poll records and commit offsets explicitly.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from ingest.schema import EventBase, encode_event


class BusError(RuntimeError):
    """The bus could not accept or deliver records (broker unreachable, timeout)."""


class RecordTooLarge(BusError):
    """One record is larger than the broker accepts for its topic: refused, not queued.

    Only that record is refused; the records sent before and after it are delivered.
    """


class MissingTopics(BusError):
    """Topics a service needs do not exist: services never create topics themselves."""

    def __init__(self, topics: Sequence[str], bootstrap: str, hint: str) -> None:
        self.topics = list(topics)
        super().__init__(
            f"Kafka topic(s) missing on {bootstrap}: {', '.join(self.topics)}; "
            f"services never create topics, {hint}"
        )


@dataclass(frozen=True, slots=True)
class DeliveryFailure:
    """A record the producer queued but the broker never acknowledged."""

    topic: str
    key: bytes | None
    size: int
    error: str

    def __str__(self) -> str:
        return f"{self.topic} key={self.key!r} ({self.size} bytes): {self.error}"


class DeliveryFailed(BusError):
    """Records queued earlier were not delivered; `failures` lists each of them."""

    def __init__(self, failures: Sequence[DeliveryFailure]) -> None:
        self.failures = list(failures)
        shown = "; ".join(str(f) for f in self.failures[:3])
        more = f"; and {len(self.failures) - 3} more" if len(self.failures) > 3 else ""
        super().__init__(f"{len(self.failures)} record(s) not delivered: {shown}{more}")


class TopicFamily(StrEnum):
    """Event families; each has its own topic."""

    METRICS = "metrics"
    LOGS = "logs"
    TRAIN = "train"
    NCCL = "nccl"
    JOBS = "jobs"


TELEMETRY_FAMILIES: tuple[TopicFamily, ...] = tuple(TopicFamily)

KIND_FAMILY: dict[str, TopicFamily] = {
    "gpu_metrics": TopicFamily.METRICS,
    "host_metrics": TopicFamily.METRICS,
    "log": TopicFamily.LOGS,
    "train_step": TopicFamily.TRAIN,
    "collective": TopicFamily.NCCL,
    "job_topology": TopicFamily.JOBS,
}


@dataclass(frozen=True)
class Topics:
    """Topic names under a configurable prefix (`tg.metrics`, `tg.logs`, ...)."""

    prefix: str = "tg."

    def topic(self, family: TopicFamily) -> str:
        """Return the topic name of a family."""
        return f"{self.prefix}{family.value}"

    def for_event(self, event: EventBase) -> str:
        """Return the topic an event is published to."""
        return self.for_kind(event.kind)

    def for_kind(self, kind: str) -> str:
        """Return the topic events of a kind are published to."""
        return self.topic(KIND_FAMILY[kind])

    def telemetry(self) -> list[str]:
        """Return every telemetry topic (what the sink consumes)."""
        return [self.topic(f) for f in TELEMETRY_FAMILIES]

    @property
    def incidents(self) -> str:
        """Incident revisions from diagnosis (JSON `Incident`, keyed by incident id)."""
        return f"{self.prefix}incidents"

    @property
    def evidence(self) -> str:
        """Node evidence re-keyed by job for diagnosis members (docs/scale-out.md)."""
        return f"{self.prefix}diagnosis.evidence"

    @property
    def actions(self) -> str:
        """Action-engine events: plans, approvals, executions (keyed by action id)."""
        return f"{self.prefix}actions"


@dataclass(frozen=True, slots=True)
class TopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Record:
    """One record as a consumer sees it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int

    @property
    def tp(self) -> TopicPartition:
        """Return the record's topic partition."""
        return TopicPartition(self.topic, self.partition)


RebalanceCallback = Callable[[set[TopicPartition]], None]


class Producer(Protocol):
    """Publishes events (and raw bytes, for tools and tests).

    Any BusError from send or send_raw means that record was not queued: RecordTooLarge
    for a record the broker would refuse (only that one; the others go on), DeliveryFailed
    when records queued earlier have failed since the last report (each is in `failures`;
    the caller may send this record again), a plain BusError when the bus is unreachable.
    """

    def send(self, event: EventBase) -> None:
        """Queue one event on its family's topic, keyed by `event.key`."""

    def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        """Queue raw bytes on a topic."""

    def flush(self, timeout_s: float = 30.0) -> None:
        """Block until everything queued is acknowledged; raise DeliveryFailed for the
        records not delivered since the last report, BusError on a timeout."""

    def close(self) -> None:
        """Flush and release resources; raise like flush (after releasing them)."""


class Consumer(Protocol):
    """One member of a consumer group."""

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        """Return up to max_records new records, waiting at most timeout_s for the first."""

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit, per partition, the offset of the next record to read."""

    def assignment(self) -> set[TopicPartition]:
        """Return the partitions this member owns now."""

    def caught_up(self, fresh: bool = False) -> set[TopicPartition]:
        """Return the owned partitions known to have nothing more to read right now.

        `fresh`: judged against each partition's end as it is now (a round trip where the end
        is remote), not as the last read saw it."""

    def rewind(
        self,
        partitions: Iterable[TopicPartition],
        not_after: Mapping[TopicPartition, int] | None = None,
    ) -> dict[TopicPartition, int]:
        """Read these owned partitions again from the group's committed offsets (the start
        where none), e.g. after a rebalance that kept them, or from `not_after[tp]` where that
        is earlier (never before the partition's start); return the offset each partition now
        reads from. Raise BusError if unreachable."""

    def pause(self) -> None:
        """Stop fetching (poll keeps the membership alive and returns nothing)."""

    def resume(self) -> None:
        """Fetch again after pause()."""

    def close(self) -> None:
        """Leave the group."""


class Bus(Protocol):
    """Makes producers and consumers for one deployment."""

    topics: Topics

    def producer(self) -> Producer:
        """Return a new producer."""

    def consumer(
        self,
        group: str,
        topics: Iterable[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
    ) -> Consumer:
        """Return a new member of `group` subscribed to `topics`."""


def partition_for(key: bytes | None, partitions: int, counter: int) -> int:
    """Pick a partition: a stable hash of the key, or round robin for keyless records."""
    if key is None:
        return counter % partitions
    return zlib.crc32(key) % partitions


# --------------------------------------------------------------------------- in-process bus


@dataclass
class _Group:
    members: list[_InProcessConsumer] = field(default_factory=list)
    committed: dict[TopicPartition, int] = field(default_factory=dict)


class InProcessBus:
    """A thread-safe, in-memory, partitioned log with consumer groups (embedded mode, tests)."""

    def __init__(self, topics: Topics | None = None, partitions: int = 4) -> None:
        self.topics = topics or Topics()
        self.partitions = partitions
        self._logs: dict[str, list[list[Record]]] = {}
        self._groups: dict[str, _Group] = {}
        self._cond = threading.Condition()
        self._counter = 0

    def producer(self) -> InProcessProducer:
        """Return a producer appending to this bus."""
        return InProcessProducer(self)

    def consumer(
        self,
        group: str,
        topics: Iterable[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
    ) -> _InProcessConsumer:
        """Join `group` and get a share of the topics' partitions."""
        member = _InProcessConsumer(self, group, list(topics), on_assign, on_revoke)
        with self._cond:
            for topic in member.topics:
                self._log(topic)
            self._groups.setdefault(group, _Group()).members.append(member)
            self._rebalance(group)
        return member

    def append(self, topic: str, key: bytes | None, value: bytes) -> Record:
        """Append one record and wake waiting consumers."""
        with self._cond:
            log = self._log(topic)
            self._counter += 1
            index = partition_for(key, len(log), self._counter)
            record = Record(topic, index, len(log[index]), key, value, int(time.time() * 1000))
            log[index].append(record)
            self._cond.notify_all()
            return record

    def end_offsets(self, topic: str) -> dict[TopicPartition, int]:
        """Return the next offset of every partition of a topic."""
        with self._cond:
            return {TopicPartition(topic, i): len(p) for i, p in enumerate(self._log(topic))}

    def committed(self, group: str) -> dict[TopicPartition, int]:
        """Return a copy of a group's committed offsets."""
        with self._cond:
            return dict(self._groups.get(group, _Group()).committed)

    def _log(self, topic: str) -> list[list[Record]]:
        return self._logs.setdefault(topic, [[] for _ in range(self.partitions)])

    def _rebalance(self, group_name: str) -> None:
        group = self._groups[group_name]
        for member in group.members:
            if member.owned and member.on_revoke:
                member.on_revoke(set(member.owned))
            member.owned = set()
        every = sorted(
            {
                TopicPartition(t, i)
                for m in group.members
                for t in m.topics
                for i in range(self.partitions)
            },
            key=lambda tp: (tp.topic, tp.partition),
        )
        for i, tp in enumerate(every):
            takers = [m for m in group.members if tp.topic in m.topics]
            takers[i % len(takers)].owned.add(tp)
        for member in group.members:
            member.positions = {tp: group.committed.get(tp, 0) for tp in member.owned}
            if member.on_assign:
                member.on_assign(set(member.owned))

    def _leave(self, member: _InProcessConsumer) -> None:
        with self._cond:
            group = self._groups[member.group]
            group.members.remove(member)
            if member.on_revoke and member.owned:
                member.on_revoke(set(member.owned))
            member.owned = set()
            if group.members:
                self._rebalance(member.group)


class InProcessProducer:
    """Producer of the in-process bus."""

    def __init__(self, bus: InProcessBus) -> None:
        self._bus = bus
        self.sent = 0

    def send(self, event: EventBase) -> None:
        """Append an event to its topic."""
        self.send_raw(self._bus.topics.for_event(event), event.key.encode(), encode_event(event))

    def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        """Append raw bytes to a topic."""
        self._bus.append(topic, key, value)
        self.sent += 1

    def flush(self, timeout_s: float = 30.0) -> None:
        """Nothing to flush: appends are synchronous."""

    def close(self) -> None:
        """Nothing to release."""


class _InProcessConsumer:
    def __init__(
        self,
        bus: InProcessBus,
        group: str,
        topics: list[str],
        on_assign: RebalanceCallback | None,
        on_revoke: RebalanceCallback | None,
    ) -> None:
        self._bus = bus
        self.group = group
        self.topics = topics
        self.on_assign = on_assign
        self.on_revoke = on_revoke
        self.owned: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int] = {}
        self._paused = False
        self._closed = False

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        deadline = time.monotonic() + timeout_s
        with self._bus._cond:
            while True:
                batch = [] if self._paused or self._closed else self._take(max_records)
                remaining = deadline - time.monotonic()
                if batch or remaining <= 0:
                    return batch
                self._bus._cond.wait(remaining)

    def _take(self, max_records: int) -> list[Record]:
        batch: list[Record] = []
        for tp in sorted(self.owned, key=lambda t: (t.topic, t.partition)):
            part = self._bus._logs[tp.topic][tp.partition]
            start = self.positions[tp]
            chunk = part[start : start + max_records - len(batch)]
            self.positions[tp] = start + len(chunk)
            batch.extend(chunk)
            if len(batch) >= max_records:
                break
        return batch

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        with self._bus._cond:
            committed = self._bus._groups[self.group].committed
            for tp, offset in offsets.items():
                if tp in self.owned:
                    committed[tp] = max(offset, committed.get(tp, 0))

    def assignment(self) -> set[TopicPartition]:
        return set(self.owned)

    def caught_up(self, fresh: bool = False) -> set[TopicPartition]:
        with self._bus._cond:  # the end is always as it is now
            logs = self._bus._logs
            return {
                tp for tp in self.owned if self.positions[tp] >= len(logs[tp.topic][tp.partition])
            }

    def rewind(
        self,
        partitions: Iterable[TopicPartition],
        not_after: Mapping[TopicPartition, int] | None = None,
    ) -> dict[TopicPartition, int]:
        bound = not_after or {}
        with self._bus._cond:
            committed = self._bus._groups[self.group].committed
            for tp in partitions:
                if tp in self.owned:
                    self.positions[tp] = max(0, min(committed.get(tp, 0), bound.get(tp, 1 << 62)))
            return {tp: self.positions[tp] for tp in partitions if tp in self.owned}

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._bus._leave(self)
