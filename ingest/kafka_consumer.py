"""A Kafka consumer-group member behind the bus interface (kafka-python).

Offsets are committed only by `commit` (auto-commit off). Rebalance callbacks run on the
client's own thread and must not block on the bus. `caught_up` says which owned partitions
were read to their end; an end no fetch has reported (an empty partition, one sought back to
where it was: an incremental fetch session reports only changes) is asked of the broker, at
most every few seconds. Its client keeps a group join that completed between two polls
(`ingest.kafka_join`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from ingest.bus import BusError, RebalanceCallback, Record, TopicPartition
from ingest.kafka_join import keep_completed_joins

log = logging.getLogger(__name__)


class _Listener(ConsumerRebalanceListener):
    def __init__(
        self,
        on_assign: RebalanceCallback | None,
        on_revoke: RebalanceCallback | None,
        forget_ends: Callable[[Iterable[KafkaTopicPartition]], None],
    ):
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._forget_ends = forget_ends

    def on_partitions_revoked(self, revoked: Iterable[KafkaTopicPartition]) -> None:
        revoked = list(revoked)
        self._forget_ends(revoked)
        if self._on_revoke:
            self._on_revoke({TopicPartition(tp.topic, tp.partition) for tp in revoked})

    def on_partitions_assigned(self, assigned: Iterable[KafkaTopicPartition]) -> None:
        assigned = list(assigned)
        self._forget_ends(assigned)
        if self._on_assign:
            self._on_assign({TopicPartition(tp.topic, tp.partition) for tp in assigned})


class KafkaBusConsumer:
    """A consumer-group member with explicit commits."""

    @classmethod
    def subscribed(
        cls,
        inner: KafkaConsumer,
        topics: list[str],
        on_assign: RebalanceCallback | None,
        on_revoke: RebalanceCallback | None,
    ) -> KafkaBusConsumer:
        """Subscribe `inner` to `topics` with the rebalance callbacks; return it wrapped."""
        consumer = cls(inner)
        inner.subscribe(topics, listener=_Listener(on_assign, on_revoke, consumer._forget_ends))
        return consumer

    def __init__(self, inner: KafkaConsumer) -> None:
        self._inner = inner
        keep_completed_joins(getattr(inner, "_coordinator", None))
        # ends looked up where no fetch told, with when: (end offset, monotonic time)
        self._ends: dict[KafkaTopicPartition, tuple[int, float]] = {}
        self._next_lookup = 0.0

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

    def caught_up(self, fresh: bool = False) -> set[TopicPartition]:
        """Return the owned partitions whose position reached the last fetched high watermark.

        Where no fetch has reported an end, an end looked up at most `_END_VALID_S` ago, since
        the partition was assigned and last sought, stands in for it; else it is not caught up.
        `fresh`: those partitions are kept only if their end, looked up now (one request per
        leader), is still their position. A fetch answered by one broker says nothing of the
        records another broker appended since, so "nothing more to read" claimed from the last
        fetch alone may be false by the time it is acted on; a failed lookup keeps none.
        """
        done = self._at_fetched_end()
        if not fresh or not done:
            return done
        asked = [KafkaTopicPartition(tp.topic, tp.partition) for tp in done]
        try:
            ends = self._inner.end_offsets(asked, timeout_ms=self._FRESH_TIMEOUT_MS)
            positions = {tp: self._inner.position(tp, timeout_ms=0) for tp in asked}
        except KafkaError as exc:
            log.debug("end offsets not available, nothing claimed read to its end: %s", exc)
            return set()
        return {
            TopicPartition(tp.topic, tp.partition)
            for tp in asked
            if positions[tp] is not None and positions[tp] >= ends.get(tp, 1 << 62)
        }

    _FRESH_TIMEOUT_MS = 2_000  # a fresh end not known by then: not read to its end

    def _at_fetched_end(self) -> set[TopicPartition]:
        done = set()
        owned = self._inner.assignment()
        self._look_up_ends([tp for tp in owned if self._inner.highwater(tp) is None])
        now = time.monotonic()
        for tp in owned:
            high = self._inner.highwater(tp)
            if high is None:
                end, at = self._ends.get(tp, (None, 0.0))
                high = end if now - at <= self._END_VALID_S else None
            if high is None:
                continue  # not fetched yet, or its end not known lately: unknown
            try:
                position = self._inner.position(tp, timeout_ms=0)
            except KafkaError:
                continue
            if position is not None and position >= high:
                done.add(TopicPartition(tp.topic, tp.partition))
        return done

    _LOOKUP_S = 5.0  # least time between two end-offset lookups
    _END_VALID_S = 2 * _LOOKUP_S  # a looked-up end older than this says nothing

    def _forget_ends(self, partitions: Iterable[KafkaTopicPartition]) -> None:
        """Drop looked-up ends (a partition assigned again or sought: its end may have moved).

        Without this a member that got a partition back trusted the end it looked up while it
        last owned it, and called a partition with records to read caught up.
        """
        for tp in partitions:
            self._ends.pop(tp, None)

    def _look_up_ends(self, unknown: list[KafkaTopicPartition]) -> None:
        """Ask the broker for the end of partitions no fetch has reported one for.

        An incremental fetch session reports a partition only when it changes, so an empty
        partition (or one sought back to where it was) may never get a high watermark.
        """
        now = time.monotonic()
        if not unknown or now < self._next_lookup:
            return
        self._next_lookup = now + self._LOOKUP_S
        try:
            ends = self._inner.end_offsets(unknown)
            self._ends.update({tp: (end, now) for tp, end in ends.items()})
        except KafkaError as exc:
            log.debug("end offsets not available: %s", exc)

    def rewind(
        self,
        partitions: Iterable[TopicPartition],
        not_after: Mapping[TopicPartition, int] | None = None,
    ) -> dict[TopicPartition, int]:
        """Seek each partition to the group's committed offset (the beginning where none), or
        to `not_after[tp]` where that is earlier but not before the partition's beginning;
        return where each partition now reads from.

        A partition already there is left alone: a seek clears what the client knows of the
        partition's end, and an incremental fetch session never reports an unchanged
        partition again, so it would never count as caught up.
        """
        bound = not_after or {}
        positions: dict[TopicPartition, int] = {}
        for tp in partitions:
            ktp = KafkaTopicPartition(tp.topic, tp.partition)
            try:
                target = self._inner.committed(ktp)
                if target is None or (tp in bound and bound[tp] < target):
                    start = self._inner.beginning_offsets([ktp])[ktp]
                    committed = target
                    target = max(
                        start, min(bound.get(tp, start), start if target is None else target)
                    )
                    if committed is not None and target < committed:
                        log.info(
                            "%s: reading again from offset %d, %d record(s) before the "
                            "committed offset",
                            tp,
                            target,
                            committed - target,
                        )
                if self._inner.position(ktp) != target:
                    self._inner.seek(ktp, target)
                    self._forget_ends([ktp])
            except KafkaError as exc:
                raise BusError(f"cannot rewind {tp}: {exc}") from exc
            positions[tp] = target
        return positions

    def pause(self) -> None:
        """Stop fetching while keeping the group membership."""
        self._inner.pause(*self._inner.assignment())

    def resume(self) -> None:
        """Fetch again."""
        self._inner.resume(*self._inner.paused())

    def close(self) -> None:
        """Leave the group without committing."""
        self._inner.close(autocommit=False)
