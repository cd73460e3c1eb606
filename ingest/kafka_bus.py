"""The Kafka bus: kafka-python producers and consumer-group members behind the bus interface."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import NewTopic
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from ingest.bus import BusError, RebalanceCallback, Record, TopicPartition, Topics
from ingest.schema import EventBase, encode_event

log = logging.getLogger(__name__)


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
    ) -> None:
        self.bootstrap = bootstrap
        self.topics = topics or Topics()
        self.client_id = client_id
        self.compression = compression
        self.linger_ms = linger_ms
        self.batch_bytes = batch_bytes

    def ensure_topics(self, names: Iterable[str], partitions: int = 4) -> None:
        """Create the topics that do not exist yet (replication 1 on a single broker)."""
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id=self.client_id)
        except KafkaError as exc:
            raise BusError(f"Kafka at {self.bootstrap} unreachable: {exc}") from exc
        try:
            existing = set(admin.list_topics())
            new = [NewTopic(n, partitions, 1) for n in names if n not in existing]
            if new:
                admin.create_topics(new)
        except TopicAlreadyExistsError:
            log.debug("topics created concurrently")
        except KafkaError as exc:
            raise BusError(f"cannot create topics on {self.bootstrap}: {exc}") from exc
        finally:
            admin.close()

    def producer(self) -> KafkaBusProducer:
        """Return a batching, compressing producer (acks=all)."""
        try:
            inner = KafkaProducer(
                bootstrap_servers=self.bootstrap,
                client_id=self.client_id,
                acks="all",
                compression_type=self.compression,
                linger_ms=self.linger_ms,
                batch_size=self.batch_bytes,
                max_request_size=8 << 20,
                max_block_ms=10_000,
            )
        except KafkaError as exc:
            raise BusError(f"Kafka at {self.bootstrap} unreachable: {exc}") from exc
        return KafkaBusProducer(inner, self.topics)

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
        at once instead of waiting for the session timeout and a rebalance.
        """
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
                group_instance_id=instance_id,
                session_timeout_ms=int(session_timeout_s * 1000),
                heartbeat_interval_ms=max(1000, int(session_timeout_s * 1000) // 5),
            )
        except KafkaError as exc:
            raise BusError(f"Kafka at {self.bootstrap} unreachable: {exc}") from exc
        inner.subscribe(list(topics), listener=_Listener(on_assign, on_revoke))
        return KafkaBusConsumer(inner)


class _Listener(ConsumerRebalanceListener):
    def __init__(self, on_assign: RebalanceCallback | None, on_revoke: RebalanceCallback | None):
        self._on_assign = on_assign
        self._on_revoke = on_revoke

    def on_partitions_revoked(self, revoked: Iterable[KafkaTopicPartition]) -> None:
        if self._on_revoke:
            self._on_revoke({TopicPartition(tp.topic, tp.partition) for tp in revoked})

    def on_partitions_assigned(self, assigned: Iterable[KafkaTopicPartition]) -> None:
        if self._on_assign:
            self._on_assign({TopicPartition(tp.topic, tp.partition) for tp in assigned})


class KafkaBusProducer:
    """Producer that routes events to their family topic, keyed by node or job."""

    def __init__(self, inner: KafkaProducer, topics: Topics) -> None:
        self._inner = inner
        self._topics = topics
        self.sent = 0
        self.failed = 0
        self.last_error: str | None = None

    def send(self, event: EventBase) -> None:
        """Queue one event."""
        self.send_raw(self._topics.for_event(event), event.key.encode(), encode_event(event))

    def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        """Queue raw bytes; delivery failures are counted and surface in flush()."""
        try:
            future = self._inner.send(topic, key=key, value=value)
        except KafkaError as exc:
            raise BusError(f"cannot queue record for {topic}: {exc}") from exc
        future.add_errback(self._failed)
        self.sent += 1

    def _failed(self, exc: BaseException) -> None:
        self.failed += 1
        self.last_error = repr(exc)

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait for acknowledgements; raise BusError if any record failed since the last flush."""
        try:
            self._inner.flush(timeout=timeout_s)
        except KafkaError as exc:
            raise BusError(f"flush failed: {exc}") from exc
        if self.failed:
            failed, self.failed = self.failed, 0
            raise BusError(f"{failed} record(s) not delivered: {self.last_error}")

    def close(self) -> None:
        """Flush and close."""
        self._inner.close(timeout=30)


class KafkaBusConsumer:
    """A consumer-group member with explicit commits."""

    def __init__(self, inner: KafkaConsumer) -> None:
        self._inner = inner

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        """Fetch up to max_records records."""
        try:
            fetched = self._inner.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        except KafkaError as exc:
            raise BusError(f"poll failed: {exc}") from exc
        return [
            Record(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp)
            for records in fetched.values()
            for r in records
        ]

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit the next offsets to read."""
        payload = {
            KafkaTopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset, "", -1)
            for tp, offset in offsets.items()
        }
        try:
            self._inner.commit(payload)
        except KafkaError as exc:
            raise BusError(f"commit failed: {exc}") from exc

    def assignment(self) -> set[TopicPartition]:
        """Return the partitions owned now."""
        return {TopicPartition(tp.topic, tp.partition) for tp in self._inner.assignment()}

    def caught_up(self) -> set[TopicPartition]:
        """Return the owned partitions whose position reached the last fetched high watermark."""
        done = set()
        for tp in self._inner.assignment():
            high = self._inner.highwater(tp)
            if high is None:
                continue  # not fetched yet: unknown
            try:
                position = self._inner.position(tp, timeout_ms=0)
            except KafkaError:
                continue
            if position is not None and position >= high:
                done.add(TopicPartition(tp.topic, tp.partition))
        return done

    def pause(self) -> None:
        """Stop fetching while keeping the group membership."""
        self._inner.pause(*self._inner.assignment())

    def resume(self) -> None:
        """Fetch again."""
        self._inner.resume(*self._inner.paused())

    def close(self) -> None:
        """Leave the group without committing."""
        self._inner.close(autocommit=False)
