"""The Kafka bus: kafka-python producers, and consumer-group members (`ingest.kafka_consumer`).

The producer never sends a record the broker would refuse: its request size is the
broker's limit (`max.message.bytes` of each topic, read through the admin client), and a
larger record is refused alone at send time (RecordTooLarge), so it cannot fail a batch and,
with the idempotent producer, the records queued after it on its partition.

No client of this bus creates a topic: producers and consumers have auto-creation off, a
consumer subscribing to a missing topic and a producer's first send to one raise MissingTopics
(naming them and the admin command). Topics come from `ingest.topics` (`trainguard topics`).

Producers are idempotent with `acks=all` by default: kafka-python 3.0 implements KIP-98
idempotence (InitProducerId, sequence numbers) and it was run here against Kafka 4.4 with a
broker killed mid-stream (tests/integration/test_kafka_cluster.py): no record lost or doubled.
With `acks` 1 or 0 idempotence is off (Kafka requires acks=all for it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError
from kafka.record.default_records import DefaultRecordBatchBuilder

from ingest.bus import (
    BusError,
    DeliveryFailed,
    DeliveryFailure,
    MissingTopics,
    RebalanceCallback,
    RecordTooLarge,
    Topics,
)
from ingest.kafka_consumer import KafkaBusConsumer
from ingest.schema import EventBase, encode_event
from ingest.topics import TopicAdmin, TopicSpec

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 1_048_588
"""Kafka's default `message.max.bytes` (broker) and `max.message.bytes` (topic)."""

ACKS = {"all": "all", "1": 1, "0": 0}
"""The producer `acks` settings, as kafka-python takes them."""


@dataclass(frozen=True)
class MessageLimits:
    """The largest record batch the broker accepts, per topic (bytes, after compression)."""

    default: int
    topics: Mapping[str, int] = field(default_factory=dict)

    def for_topic(self, topic: str) -> int:
        """Return a topic's limit (the broker's for topics not read)."""
        return self.topics.get(topic, self.default)

    @property
    def largest(self) -> int:
        """Return the largest limit (the producer's request size)."""
        return max([self.default, *self.topics.values()])

    @property
    def smallest(self) -> int:
        """Return the smallest limit (a batch of any topic must fit it)."""
        return min([self.default, *self.topics.values()])


def record_size(key: bytes | None, value: bytes) -> int:
    """Return an upper bound of a record's size in a batch of its own, before compression."""
    return int(DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, []))


class KafkaBus:
    """Producers and consumers against one Kafka cluster."""

    def __init__(
        self,
        bootstrap: str,
        topics: Topics | None = None,
        client_id: str = "trainguard",
        compression: str | None = "lz4",
        linger_ms: int = 20,
        batch_bytes: int = 1 << 20,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        acks: str = "all",
    ) -> None:
        """`max_message_bytes` is used only where the broker's limits cannot be read.

        `acks` is "all" (idempotent producers; the default), "1" or "0" (not idempotent).
        """
        if acks not in ACKS:
            raise ValueError(f"acks must be one of {sorted(ACKS)}, got {acks!r}")
        self.acks = acks
        self.bootstrap = bootstrap
        self.topics = topics or Topics()
        self.client_id = client_id
        self.compression = compression
        self.linger_ms = linger_ms
        self.batch_bytes = batch_bytes
        self.max_message_bytes = max_message_bytes
        self._limits: MessageLimits | None = None
        self._existing: set[str] = set()

    def ensure_topics(self, names: Iterable[str], partitions: int = 4) -> None:
        """Explicitly create the topics that do not exist yet, with replication factor 1 and
        the broker's default configs (tests, benchmarks); deployments use `trainguard topics`.
        """
        with TopicAdmin(self.bootstrap, self.client_id) as admin:
            admin.create([TopicSpec(n, partitions, 1) for n in names])

    def require_topics(self, names: Iterable[str]) -> None:
        """Raise MissingTopics unless every one of `names` exists (BusError if unreachable)."""
        names = list(names)
        if set(names) <= self._existing:
            return
        with TopicAdmin(self.bootstrap, self.client_id) as admin:
            admin.require(names)
        self._existing.update(names)

    def message_limits(self) -> MessageLimits:
        """Read the broker's `message.max.bytes` and this bus's topics' `max.message.bytes`.

        Read once per bus; where they cannot be read, `max_message_bytes` stands for them.
        """
        if self._limits is None:
            self._limits = self._read_limits()
        return self._limits

    def _read_limits(self) -> MessageLimits:
        fallback = MessageLimits(self.max_message_bytes)
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.client_id)
        except KafkaError as exc:
            log.warning("broker limits not readable (%s); using %d bytes", exc, fallback.default)
            return fallback
        try:
            brokers = [b["broker_id"] for b in admin.describe_cluster()["brokers"]]
            existing = set(admin.list_topics())
            self._existing.update(existing)
            names = [
                n
                for n in (*self.topics.telemetry(), self.topics.incidents, self.topics.actions)
                if n in existing
            ]
            resources = [
                *(
                    ConfigResource(ConfigResourceType.BROKER, str(b), ["message.max.bytes"])
                    for b in brokers
                ),
                *(
                    ConfigResource(ConfigResourceType.TOPIC, n, ["max.message.bytes"])
                    for n in names
                ),
            ]
            described = admin.describe_configs(resources, config_filter="all")
            broker_limits = [
                int(c["message.max.bytes"]["value"]) for c in described.get("broker", {}).values()
            ]
            topic_limits = {
                str(n): int(c["max.message.bytes"]["value"])
                for n, c in described.get("topic", {}).items()
            }
        except (KafkaError, KeyError, TypeError, ValueError) as exc:
            log.warning("broker limits not readable (%r); using %d bytes", exc, fallback.default)
            return fallback
        finally:
            admin.close()
        default = min(broker_limits) if broker_limits else fallback.default
        return MessageLimits(default, topic_limits)

    def producer(
        self, on_failure: Callable[[DeliveryFailure], None] | None = None
    ) -> KafkaBusProducer:
        """Return a batching, compressing, idempotent producer (acks=all).

        Requests and batches stay within the broker's limits (`message_limits`); see
        KafkaBusProducer for how refused and failed records are reported.
        """
        limits = self.message_limits()

        def make() -> KafkaProducer:
            try:
                return KafkaProducer(
                    bootstrap_servers=self.bootstrap,
                    client_id=self.client_id,
                    acks=ACKS[self.acks],
                    enable_idempotence=self.acks == "all",
                    allow_auto_create_topics=False,
                    compression_type=self.compression,
                    linger_ms=self.linger_ms,
                    # Batches are sized before compression: leave room for a batch that does
                    # not compress (lz4 adds up to ~0.4 %) so no batch exceeds the limit.
                    batch_size=min(self.batch_bytes, limits.smallest - limits.smallest // 64),
                    max_request_size=limits.largest,
                    max_block_ms=10_000,
                )
            except KafkaError as exc:
                raise BusError(f"Kafka at {self.bootstrap} unreachable: {exc}") from exc

        return KafkaBusProducer(
            make(), self.topics, limits, on_failure, reopen=make, require=self.require_topics
        )

    def consumer(
        self,
        group: str,
        topics: Iterable[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        instance_id: str | None = None,
        session_timeout_s: float = 15.0,
    ) -> KafkaBusConsumer:
        """Join `group` on `topics`; offsets are committed only by commit().

        With an `instance_id` (static membership) a restarted member takes its partitions back
        at once instead of waiting for the session timeout and a rebalance. Raises
        MissingTopics when one of `topics` does not exist.
        """
        topics = list(topics)
        self.require_topics(topics)
        try:
            inner = KafkaConsumer(
                bootstrap_servers=self.bootstrap,
                client_id=self.client_id,
                group_id=group,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                fetch_max_bytes=32 << 20,
                max_partition_fetch_bytes=8 << 20,
                max_poll_interval_ms=600_000,
                allow_auto_create_topics=False,
                group_instance_id=instance_id,
                session_timeout_ms=int(session_timeout_s * 1000),
                heartbeat_interval_ms=max(1000, int(session_timeout_s * 1000) // 5),
            )
        except KafkaError as exc:
            raise BusError(f"Kafka at {self.bootstrap} unreachable: {exc}") from exc
        try:
            # the topics' partitions in the client's metadata before it joins: a group leader
            # that joins without them assigns nothing until its next metadata refresh (minutes)
            for topic in topics:
                inner.partitions_for_topic(topic)
        except KafkaError as exc:
            inner.close()
            raise BusError(f"Kafka at {self.bootstrap}: no metadata for {topics}: {exc}") from exc
        return KafkaBusConsumer.subscribed(inner, topics, on_assign, on_revoke)


class KafkaBusProducer:
    """Producer that routes events to their family topic, keyed by node or job.

    Every failure is reported per record, promptly, whoever the caller is:
    - a record larger than its topic's limit is refused by send (RecordTooLarge), alone;
    - a queued record the broker never acknowledged is logged when its failure is known,
      handed to `on_failure` (on the producer's I/O thread), and raised as DeliveryFailed
      by the next send (before queuing that record), flush or close, once.

    kafka-python's idempotent producer treats a batch the broker refuses for good (a record
    too large for a topic whose limit was not read, an invalid record) as fatal: every later
    record fails too. When a failure is reported and the producer is in that state, it is
    replaced by a new one (`reopen`), so only the records queued before the report are lost.
    """

    _LOGGED = 10  # failures logged one by one; after that, every thousandth

    def __init__(
        self,
        inner: KafkaProducer,
        topics: Topics,
        limits: MessageLimits | None = None,
        on_failure: Callable[[DeliveryFailure], None] | None = None,
        reopen: Callable[[], KafkaProducer] | None = None,
        require: Callable[[list[str]], None] | None = None,
    ) -> None:
        self._inner = inner
        self._require = require
        self._checked: set[str] = set()
        self._missing: dict[str, tuple[float, MissingTopics]] = {}
        self._reopen = reopen
        self._topics = topics
        self.limits = limits or MessageLimits(DEFAULT_MAX_MESSAGE_BYTES)
        self._on_failure = on_failure
        self._lock = threading.Lock()
        self._unreported: list[DeliveryFailure] = []
        self.sent = 0
        self.failed = 0
        self.too_large = 0
        self.reopened = 0
        self.last_error: str | None = None

    def send(self, event: EventBase) -> None:
        """Queue one event."""
        self.send_raw(self._topics.for_event(event), event.key.encode(), encode_event(event))

    def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        """Queue raw bytes; raise (without queuing them) as the Producer protocol says.

        The first record for a topic checks that it exists: MissingTopics, not a wait for
        metadata that never comes (auto-creation is off).
        """
        self._raise_failures()
        if topic not in self._checked:
            self._check_topic(topic)
        size, limit = record_size(key, value), self.limits.for_topic(topic)
        if size > limit:
            self.too_large += 1
            self.last_error = f"record too large for {topic}"
            raise RecordTooLarge(
                f"record for {topic} key={key!r} is {size} bytes, over the broker's limit of "
                f"{limit} bytes (max.message.bytes): refused; the other records go on"
            )
        try:
            future = self._inner.send(topic, key=key, value=value)
        except KafkaError as exc:
            raise BusError(f"cannot queue record for {topic}: {exc}") from exc
        future.add_errback(self._failed, topic, key, size)
        self.sent += 1

    _RECHECK_S = 5.0  # a missing topic is looked up again at most this often

    def _check_topic(self, topic: str) -> None:
        known = self._missing.get(topic)
        if known is not None and time.monotonic() - known[0] < self._RECHECK_S:
            raise known[1]
        if self._require is not None:
            try:
                self._require([topic])
            except MissingTopics as exc:
                self._missing[topic] = (time.monotonic(), exc)
                raise
        self._missing.pop(topic, None)
        self._checked.add(topic)

    def _failed(self, topic: str, key: bytes | None, size: int, exc: BaseException) -> None:
        failure = DeliveryFailure(topic, key, size, repr(exc))
        with self._lock:
            self.failed += 1
            self.last_error = failure.error
            self._unreported.append(failure)
            failed = self.failed
        if failed <= self._LOGGED or failed % 1000 == 0:
            log.warning("record not delivered (%d so far): %s", failed, failure)
        if self._on_failure is not None:
            self._on_failure(failure)

    def _raise_failures(self) -> None:
        with self._lock:
            failures, self._unreported = self._unreported, []
        if failures:
            self._reopen_if_dead()
            raise DeliveryFailed(failures)

    def _reopen_if_dead(self) -> None:
        manager = getattr(self._inner, "_transaction_manager", None)
        if self._reopen is None or manager is None or not manager.has_fatal_error():
            return
        log.warning("the Kafka producer failed for good (%s); opening a new one", self.last_error)
        dead, self._inner = self._inner, self._reopen()
        dead.close(timeout=0)  # its queued records were failed (and reported) already
        self.reopened += 1

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait for acknowledgements; raise DeliveryFailed for records failed since the last
        report, BusError if they do not all complete in time."""
        try:
            self._inner.flush(timeout=timeout_s)
        except KafkaError as exc:
            raise BusError(f"flush failed: {exc}") from exc
        self._raise_failures()

    def close(self) -> None:
        """Flush, close, then raise like flush for what was not delivered."""
        try:
            self.flush()
        finally:
            self._inner.close(timeout=30)
