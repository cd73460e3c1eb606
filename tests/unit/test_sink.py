"""The sink loop: batching, dead letters, duplicates, retries while the store is down."""

from __future__ import annotations

from collections.abc import Sequence

from ingest.bus import InProcessBus, Record, TopicPartition
from ingest.schema import Event, decode_event
from ingest.sink import DeadLetter, RecentIds, Sink, SinkSettings, WriterUnavailable
from tests.builders import make_gpu_metrics, make_log


class MemoryWriter:
    """A real in-memory writer: keeps what it is given; can be told to be unreachable."""

    def __init__(self, down_for: int = 0) -> None:
        self.events: list[Event] = []
        self.dead: list[DeadLetter] = []
        self.down_for = down_for
        self.attempts = 0
        self.forgotten: set[TopicPartition] = set()

    def write(self, events: Sequence[tuple[Record, Event]], dead: Sequence[DeadLetter]) -> int:
        self.attempts += 1
        if self.attempts <= self.down_for:
            raise WriterUnavailable("connection refused")
        self.events.extend(e for _, e in events)
        self.dead.extend(dead)
        return len(events)

    def forget(self, partitions: set[TopicPartition]) -> None:
        self.forgotten |= partitions


def _sink(bus: InProcessBus, writer: MemoryWriter, **settings: float) -> Sink:
    config = SinkSettings(batch_seconds=0.05, retry_initial_s=0.01, retry_max_s=0.02)
    for key, value in settings.items():
        setattr(config, key, value)
    return Sink(bus.consumer("sink", bus.topics.telemetry()), writer, config, sleep=lambda _s: None)


def test_batches_by_size_and_commits_after_write():
    bus = InProcessBus(partitions=1)
    producer = bus.producer()
    for i in range(25):
        producer.send(make_log(seq=i))
    writer = MemoryWriter()
    sink = _sink(bus, writer, batch_records=10, batch_seconds=5)
    assert sink.step() == 10
    assert bus.committed("sink") == {TopicPartition("tg.logs", 0): 10}
    sink.step()
    sink.step()
    assert len(writer.events) == 25
    assert bus.committed("sink") == {TopicPartition("tg.logs", 0): 25}


def test_garbage_becomes_dead_letters_and_sink_goes_on():
    bus = InProcessBus(partitions=1)
    producer = bus.producer()
    producer.send_raw("tg.metrics", b"n1", b"\x00\x01 not json")
    producer.send(make_gpu_metrics())
    producer.send_raw("tg.metrics", None, b'{"kind": "gpu_metrics"}')
    writer = MemoryWriter()
    _sink(bus, writer).step()
    assert [d.record.value for d in writer.dead] == [
        b"\x00\x01 not json",
        b'{"kind": "gpu_metrics"}',
    ]
    assert "Invalid JSON" in writer.dead[0].reason
    assert len(writer.events) == 1


def test_resent_event_is_written_once():
    bus = InProcessBus()
    producer = bus.producer()
    for _ in range(3):
        producer.send(make_gpu_metrics())
    writer = MemoryWriter()
    sink = _sink(bus, writer)
    sink.step()
    producer.send(make_gpu_metrics())
    sink.step()
    assert len(writer.events) == 1
    assert sink.stats.duplicates == 3


def test_store_down_retries_without_committing_then_resumes():
    bus = InProcessBus(partitions=1)
    producer = bus.producer()
    for i in range(5):
        producer.send(make_log(seq=i))
    writer = MemoryWriter(down_for=3)
    sink = _sink(bus, writer)
    flushed = sink.step()
    assert flushed == 5
    assert writer.attempts == 4
    assert sink.stats.write_retries == 3
    assert sink.stats.store_up
    assert len(writer.events) == 5
    assert bus.committed("sink") == {TopicPartition("tg.logs", 0): 5}


def test_stop_during_outage_commits_nothing():
    import threading

    bus = InProcessBus(partitions=1)
    bus.producer().send(make_log())
    writer = MemoryWriter(down_for=10**6)
    sink = _sink(bus, writer)
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    assert sink.step(stop) == 0
    assert writer.attempts > 1
    assert bus.committed("sink") == {}
    assert not sink.stats.store_up
    assert "connection refused" in sink.stats.last_error


def test_revoked_partitions_are_dropped_from_the_pending_batch():
    bus = InProcessBus(partitions=1)
    bus.producer().send(make_log())
    writer = MemoryWriter()
    sink = _sink(bus, writer)
    sink._pending = sink.consumer.poll(10, 0.1)
    sink.on_revoke({TopicPartition("tg.logs", 0)})
    assert sink._pending == []
    assert TopicPartition("tg.logs", 0) in writer.forgotten


def test_recent_ids_are_bounded():
    recent = RecentIds(capacity=4)
    recent.add_all([str(i) for i in range(10)])
    assert "9" in recent and "8" in recent
    assert "0" not in recent


class PickyWriter(MemoryWriter):
    """Rejects any batch holding a log line containing 'poison' (like a type error)."""

    def write(self, events: Sequence[tuple[Record, Event]], dead: Sequence[DeadLetter]) -> int:
        from ingest.sink import BatchRejected

        self.attempts += 1
        if any("poison" in getattr(e, "line", "") for _, e in events):
            raise BatchRejected("value out of range for column rank")
        self.events.extend(e for _, e in events)
        self.dead.extend(dead)
        return len(events)


def test_rejected_data_is_bisected_into_one_dead_letter():
    bus = InProcessBus(partitions=1)
    producer = bus.producer()
    for i in range(64):
        producer.send(make_log(seq=i, line="poison" if i == 37 else f"line {i}"))
    writer = PickyWriter()
    sink = _sink(bus, writer)
    assert sink.step() == 64
    assert len(writer.events) == 63
    assert [d.record.offset for d in writer.dead] == [37]
    assert "rejected by the store: value out of range" in writer.dead[0].reason
    assert writer.attempts < 64  # bisection, not one insert per record
    assert bus.committed("sink") == {TopicPartition("tg.logs", 0): 64}
    assert sink.stats.dead_letters == 1 and sink.stats.events_written == 63


def test_each_batch_write_is_timed_once_with_its_retries_and_its_age_noted():
    bus = InProcessBus(partitions=1)
    producer = bus.producer()
    for i in range(5):
        producer.send(make_log(seq=i))
    times: list[float] = []
    sink = _sink(bus, MemoryWriter(down_for=2))
    sink.observe_write = times.append
    sink.step()
    assert len(times) == 1 and times[0] >= 0  # one batch, two failed attempts inside it
    assert sink.stats.batches == 1
    assert 0 <= sink.stats.record_age_s < 60  # the records were produced just now


class RebalancedWhileDown(MemoryWriter):
    """Refuses the first write; meanwhile the group takes the sink's partitions away."""

    def __init__(self) -> None:
        super().__init__(down_for=1)
        self.sink: Sink | None = None

    def write(self, events: Sequence[tuple[Record, Event]], dead: Sequence[DeadLetter]) -> int:
        if self.attempts == 0 and self.sink is not None:
            self.sink.on_revoke({r.tp for r, _ in events})  # as a poll during the retry would
        return super().write(events, dead)


def test_a_batch_whose_partitions_were_revoked_during_an_outage_flushes_cleanly():
    bus = InProcessBus(partitions=1)
    bus.producer().send(make_log())
    writer = RebalancedWhileDown()
    sink = _sink(bus, writer)
    writer.sink = sink
    sink._pending = sink.consumer.poll(10, 0.1)
    assert sink.flush() == 0  # nothing of its own left to commit: the next owner re-reads
    assert sink._pending == [] and sink.stats.record_age_s == 0.0
    assert bus.committed("sink") == {}  # the records stay for the partitions' next owner


class RevokesOneWhileDown(MemoryWriter):
    """Refuses the first write; meanwhile the group takes one of the sink's partitions away."""

    def __init__(self, taken: TopicPartition) -> None:
        super().__init__(down_for=1)
        self.taken = taken
        self.sink: Sink | None = None

    def write(self, events: Sequence[tuple[Record, Event]], dead: Sequence[DeadLetter]) -> int:
        if self.attempts == 0 and self.sink is not None:
            self.sink.on_revoke({self.taken})  # as a poll during the retry would
        return super().write(events, dead)


def test_records_of_a_partition_revoked_during_an_outage_are_written_when_it_comes_back():
    # The sink keeps partition 0, loses partition 1 while its write is retried, and later
    # gets partition 1 back with the same records (its next owner committed nothing).
    bus = InProcessBus(partitions=2)
    producer = bus.producer()
    for i in range(20):
        producer.send(make_log(seq=i, node=f"node-{i:02d}"))
    records = bus.consumer("peek", bus.topics.telemetry()).poll(100, 0.1)
    taken = TopicPartition("tg.logs", 1)
    assert {r.tp.partition for r in records} == {0, 1}
    writer = RevokesOneWhileDown(taken)
    sink = _sink(bus, writer)
    writer.sink = sink
    sink._pending = list(records)
    kept = [r for r in records if r.tp != taken]
    assert sink.flush() == len(kept)
    assert len(writer.events) == len(kept)
    assert sink.stats.events_written == len(kept)
    sink._pending = [r for r in records if r.tp == taken]  # redelivered after it came back
    assert sink.flush() == len(records) - len(kept)
    assert sorted(e.id for e in writer.events) == sorted(
        decode_event(r.value).id for r in records
    ), "records of the returned partition were dropped as duplicates"
    assert sink.stats.duplicates == 0
