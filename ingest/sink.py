"""The sink loop: consume telemetry, decode, batch, write, then commit offsets.

Delivery is at-least-once from Kafka; the writer makes storage exactly-once (per-table offset
watermarks for crash replays, event ids for re-sent events). Undecodable records become dead
letters. While the store is down the sink pauses consumption, retries with backoff, and
commits nothing, so nothing accepted is ever lost; it asks a writer that can be probed
whether the store is back every `probe_interval_s`, and writes again as soon as it is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ingest.bus import BusError, Consumer, Record, TopicPartition
from ingest.event_time import EventTimePolicy
from ingest.schema import DEFAULT_CLUSTER, Event, SchemaError, decode_event

if TYPE_CHECKING:
    from ingest.fast_decode import FastDecoder, GpuScrape

log = logging.getLogger(__name__)


class WriterUnavailable(RuntimeError):
    """The writer's store is unreachable; the same batch may be retried later."""


class BatchRejected(ValueError):
    """The store refused some of the batch's data itself; retrying the same batch cannot help."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record that could not be decoded, and why."""

    record: Record
    reason: str
    received: datetime


class Writer(Protocol):
    """Stores decoded batches; implemented by analytics, wired in by trainguard."""

    def write(
        self, events: Sequence[tuple[Record, Event | GpuScrape]], dead: Sequence[DeadLetter]
    ) -> int:
        """Store a batch idempotently; return the rows written.

        Raise WriterUnavailable to be retried later, BatchRejected if the data itself is refused.
        """

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Drop cached state for partitions this process no longer owns."""


@runtime_checkable
class Probe(Protocol):
    """A writer that can tell cheaply whether its store answers (no data written)."""

    def reachable(self) -> bool:
        """Return whether the store answers now."""


def retry_delay(attempt: int, initial_s: float, max_s: float) -> float:
    """Return the wait before write retry `attempt` (0 first): doubling, capped at max_s."""
    return min(max_s, initial_s * 2.0 ** min(attempt, 60))


@dataclass
class SinkSettings:
    """Batching and retry knobs of the sink."""

    batch_records: int = 20_000
    batch_seconds: float = 1.0
    retry_initial_s: float = 0.5
    retry_max_s: float = 30.0
    probe_interval_s: float = 0.5  # while the store is down: how often to ask if it is back
    dedup_window: int = 500_000
    event_time: EventTimePolicy = field(default_factory=EventTimePolicy)  # what is dead-lettered
    cluster: str = DEFAULT_CLUSTER  # of events that name none (TG_CLUSTER)
    fast_decode: bool = True  # GPU scrapes through ingest.fast_decode (same values, ~5x faster)


@dataclass
class SinkStats:
    """Counters exposed in logs and /metrics."""

    consumed: int = 0
    events_written: int = 0
    rows_written: int = 0
    dead_letters: int = 0
    duplicates: int = 0
    batches: int = 0
    write_retries: int = 0
    commit_failures: int = 0
    dropped: int = 0
    store_up: bool = True
    last_error: str = ""
    last_commit_ts: float = field(default=0.0)
    record_age_s: float = 0.0  # commit time less the newest record's Kafka time, last batch


class RecentIds:
    """A bounded set of recently written event ids (two generations, O(1) per lookup)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = max(1, capacity // 2)
        self._current: set[str] = set()
        self._previous: set[str] = set()

    def __contains__(self, event_id: str) -> bool:
        return event_id in self._current or event_id in self._previous

    def add_all(self, ids: Sequence[str]) -> None:
        """Remember ids, forgetting the oldest generation when full."""
        for event_id in ids:
            self.add(event_id)

    def add(self, event_id: str) -> None:
        """Remember one id, forgetting the oldest generation when full."""
        if len(self._current) >= self._capacity:
            self._previous, self._current = self._current, set()
        self._current.add(event_id)


class Sink:
    """Consumes records from one consumer and stores them through a writer."""

    def __init__(
        self,
        consumer: Consumer,
        writer: Writer,
        settings: SinkSettings | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.consumer = consumer
        self.writer = writer
        self.settings = settings or SinkSettings()
        self.stats = SinkStats()
        self.observe_write: Callable[[float], None] | None = None
        """Called with each batch's write time in seconds, retries included (metrics)."""
        self._sleep = sleep
        self._pending: list[Record] = []
        self._rewind = False  # an assignment came: read from the committed offsets again
        self._recent = RecentIds(self.settings.dedup_window)
        self._fast: FastDecoder | None = None
        if self.settings.fast_decode:
            from ingest.fast_decode import FastDecoder  # msgspec: a server extra only

            self._fast = FastDecoder(self.settings.cluster)

    def on_revoke(self, partitions: set[TopicPartition]) -> None:
        """Forget uncommitted records of partitions another member now owns."""
        self._pending = [r for r in self._pending if r.tp not in partitions]
        self.writer.forget(partitions)

    def on_assign(self, partitions: set[TopicPartition]) -> None:
        """Read the assigned partitions again from the committed offsets (in the main loop).

        A rebalance revokes every partition first (`on_revoke` drops their pending records),
        but the client keeps the read position of partitions this member gets back: without a
        rewind, the records dropped from the batch would never be read again, and the next
        commit would pass them (lost).
        """
        self._rewind = True

    def run(self, stop: threading.Event) -> None:
        """Consume and store until stop is set; uncommitted work is simply redelivered."""
        while not stop.is_set():
            self.step(stop)
        log.info("sink stopping: %s", self.stats)

    def step(self, stop: threading.Event | None = None) -> int:
        """Fill one batch (by size or time) and flush it; return the records flushed."""
        deadline = time.monotonic() + self.settings.batch_seconds
        while len(self._pending) < self.settings.batch_records:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (stop is not None and stop.is_set()):
                break
            try:
                got = self.consumer.poll(
                    self.settings.batch_records - len(self._pending), min(remaining, 0.5)
                )
            except BusError as exc:
                self._note_error(f"bus: {exc}")
                self._sleep(1.0)
                continue
            if self._rewind:
                got = self._rewound()
            self.stats.consumed += len(got)
            self._pending.extend(got)
        return self.flush(stop) if self._pending else 0

    def _rewound(self) -> list[Record]:
        """Go back to the committed offsets after an assignment; return no records.

        What the poll that brought the assignment returned (and what is pending) is read again.
        """
        try:
            self.consumer.rewind(self.consumer.assignment())
        except BusError as exc:
            self._note_error(f"bus: {exc}")
            log.warning("rewind after an assignment failed (retried): %s", exc)
            return []
        self._rewind = False
        self._pending = []
        return []

    def flush(self, stop: threading.Event | None = None) -> int:
        """Decode and write the pending batch (retrying while the store is down), then commit."""
        events, dead, duplicates = self._decode(self._pending)
        started = time.perf_counter()
        outcome = self._write_splitting(events, dead, stop)
        if outcome is None:
            return 0  # stopped while the store was down: nothing committed, all redelivered
        if self.observe_write is not None:
            self.observe_write(time.perf_counter() - started)
        rows, written, letters = outcome
        self._store_up()
        # a rebalance while the write was retried may have taken partitions (on_revoke): their
        # records left _pending; what was written of them the next owner finds and skips. Only
        # the ids of partitions still owned were written: the others must not count as
        # recent, or their redelivery after the partitions come back is dropped as duplicates.
        flushed = len(self._pending)
        owned = {r.tp for r in self._pending}
        self._recent.add_all([e.id for r, e in events if r.tp in owned])
        self._commit(self._pending)
        newest_ms = max((r.timestamp_ms for r in self._pending), default=0)
        self.stats.record_age_s = max(0.0, time.time() - newest_ms / 1000) if newest_ms > 0 else 0.0
        self.stats.batches += 1
        self.stats.events_written += written
        self.stats.rows_written += rows
        self.stats.dead_letters += letters
        self.stats.duplicates += duplicates
        self._pending = []
        return flushed

    def _write_splitting(
        self,
        events: list[tuple[Record, Event | GpuScrape]],
        dead: list[DeadLetter],
        stop: threading.Event | None,
    ) -> tuple[int, int, int] | None:
        """Write; if the store rejects the data, bisect until the bad records are dead letters.

        Return (rows, events written, dead letters written), or None if stopped during an outage.
        """
        try:
            return self._write_retrying(events, dead, stop)
        except BatchRejected as exc:
            if len(events) + len(dead) > 1:
                return self._write_halves(events, dead, stop)
            if not events:
                log.error("dead letter of %s rejected too, dropped: %s", dead[0].record.tp, exc)
                self.stats.dropped += 1
                return (0, 0, 0)
            record = events[0][0]
            log.error("store rejected the event at %s offset %d: %s", record.tp, record.offset, exc)
            letter = DeadLetter(record, f"rejected by the store: {exc}", datetime.now(UTC))
            return self._write_splitting([], [letter], stop)

    def _write_halves(
        self,
        events: list[tuple[Record, Event | GpuScrape]],
        dead: list[DeadLetter],
        stop: threading.Event | None,
    ) -> tuple[int, int, int] | None:
        if len(events) > 1:
            mid = len(events) // 2
            halves = [(events[:mid], dead), (events[mid:], [])]
        elif events:
            halves = [(events, []), ([], dead)]
        else:
            mid = len(dead) // 2
            halves = [([], dead[:mid]), ([], dead[mid:])]
        total = (0, 0, 0)
        for part_events, part_dead in halves:
            outcome = self._write_splitting(part_events, part_dead, stop)
            if outcome is None:
                return None
            total = (total[0] + outcome[0], total[1] + outcome[1], total[2] + outcome[2])
        return total

    def _write_retrying(
        self,
        events: list[tuple[Record, Event | GpuScrape]],
        dead: list[DeadLetter],
        stop: threading.Event | None,
    ) -> tuple[int, int, int] | None:
        """Write, retrying with backoff while the store is unreachable; None if stopped.

        Return (rows, events written, dead letters written): those of partitions still owned.

        The backoff (`retry_delay`) paces retries while the store answers but refuses writes
        (busy); a store that did not answer is probed meanwhile, and the write is retried as
        soon as it answers again, so the sink resumes within about `probe_interval_s`.
        """
        attempt, probed_up = 0, False
        while True:
            try:
                return self.writer.write(events, dead), len(events), len(dead)
            except WriterUnavailable as exc:
                s = self.settings
                delay = retry_delay(attempt, s.retry_initial_s, s.retry_max_s)
                attempt += 1
                self._store_down(str(exc), delay)
                if stop is not None and stop.is_set():
                    return None
                # A write refused right after the probe said "up": the store answers but is
                # busy, so only a down-then-up change may cut the next wait short.
                probed_up = self._wait(delay, stop, assume_down=not probed_up)
                owned = {r.tp for r in self._pending}
                events = [(r, e) for r, e in events if r.tp in owned]
                dead = [d for d in dead if d.record.tp in owned]

    def _decode(
        self, records: Sequence[Record]
    ) -> tuple[list[tuple[Record, Event | GpuScrape]], list[DeadLetter], int]:
        events: list[tuple[Record, Event | GpuScrape]] = []
        dead: list[DeadLetter] = []
        batch_ids: set[str] = set()
        duplicates = 0
        now = datetime.now(UTC)
        fast = self._fast
        for record in records:
            event: Event | GpuScrape | None = None if fast is None else fast.decode(record.value)
            if event is None:
                try:
                    event = decode_event(record.value).in_cluster(self.settings.cluster)
                except SchemaError as exc:
                    dead.append(DeadLetter(record, str(exc), now))
                    continue
            refusal = self.settings.event_time.refusal(event.ts, now)
            if refusal is not None:
                dead.append(DeadLetter(record, refusal, now))
                continue
            if event.id in self._recent or event.id in batch_ids:
                duplicates += 1
                continue
            batch_ids.add(event.id)
            events.append((record, event))
        return events, dead, duplicates

    def _wait(
        self, delay: float, stop: threading.Event | None = None, assume_down: bool = True
    ) -> bool:
        """Back off while keeping the group membership alive (paused polls fetch nothing).

        With a probe-able writer, end the wait early once the store answers a probe after it
        was down (`assume_down`: it was when the wait began) and return True; end it when
        stop is set too.
        """
        self.consumer.pause()
        probe = self.writer if isinstance(self.writer, Probe) else None
        now = time.monotonic()
        end, next_probe, seen_down = now + delay, now + self.settings.probe_interval_s, assume_down
        while time.monotonic() < end and not (stop is not None and stop.is_set()):
            try:
                self.consumer.poll(1, min(0.2, max(0.0, end - time.monotonic())))
            except BusError as exc:
                self._note_error(f"bus: {exc}")
            if probe is not None and time.monotonic() >= next_probe:
                next_probe = time.monotonic() + self.settings.probe_interval_s
                if probe.reachable():
                    if seen_down:
                        log.info("store answers again: retrying the write now")
                        return True
                else:
                    seen_down = True
            self._sleep(0.05)
        return False

    def _store_down(self, error: str, delay: float) -> None:
        self.stats.write_retries += 1
        self._note_error(error)
        if self.stats.store_up:
            log.warning("store unavailable, pausing consumption and retrying: %s", error)
        else:
            log.info("store still unavailable, next retry in %.1f s", delay)
        self.stats.store_up = False

    def _store_up(self) -> None:
        if not self.stats.store_up:
            log.warning("store reachable again, resuming consumption")
            self.consumer.resume()
        self.stats.store_up = True

    def _commit(self, records: Sequence[Record]) -> None:
        upto: dict[tuple[str, int], int] = {}  # plain tuples: hashed in C, ~1 us less a record
        for r in records:
            key, after = (r.topic, r.partition), r.offset + 1
            if after > upto.get(key, 0):
                upto[key] = after
        offsets = {TopicPartition(t, p): offset for (t, p), offset in upto.items()}
        try:
            self.consumer.commit(offsets)
            self.stats.last_commit_ts = time.time()
        except BusError as exc:
            # Stored already; the next owner re-reads and the writer's watermarks skip it.
            self.stats.commit_failures += 1
            self._note_error(f"commit: {exc}")
            log.warning("offset commit failed (data is stored, replay is harmless): %s", exc)

    def _note_error(self, error: str) -> None:
        self.stats.last_error = error
