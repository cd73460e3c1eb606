"""The sink's outage probe: a store back is written at once, a busy one is not hammered."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from ingest.bus import InProcessBus, Record, TopicPartition
from ingest.schema import Event
from ingest.sink import DeadLetter, Sink, SinkSettings, WriterUnavailable
from tests.builders import make_log


class ProbedWriter:
    """Refuses writes until `up_at` (monotonic); `answers` says what the probe sees."""

    def __init__(self, up_at: float, answers: bool | None = None) -> None:
        self.up_at = up_at
        self.answers = answers
        self.writes: list[float] = []

    def write(self, events: Sequence[tuple[Record, Event]], dead: Sequence[DeadLetter]) -> int:
        self.writes.append(time.monotonic())
        if time.monotonic() < self.up_at:
            raise WriterUnavailable("down")
        return len(events)

    def reachable(self) -> bool:
        return self.answers if self.answers is not None else time.monotonic() >= self.up_at

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Nothing cached."""


def _sink(writer: ProbedWriter) -> Sink:
    bus = InProcessBus()
    bus.producer().send(make_log())
    settings = SinkSettings(
        batch_seconds=0.05, retry_initial_s=0.2, retry_max_s=30.0, probe_interval_s=0.05
    )
    return Sink(bus.consumer("g", bus.topics.telemetry()), writer, settings)


def test_a_store_back_mid_wait_is_written_at_once():
    writer = ProbedWriter(up_at=time.monotonic() + 2.0)  # the backoff then waits 1.6 s, 3.2 s
    sink = _sink(writer)
    assert sink.step() == 1
    resumed = writer.writes[-1] - writer.up_at
    assert 0 <= resumed < 0.5, resumed
    assert sink.stats.store_up and sink.stats.events_written == 1


def test_a_store_that_answers_but_refuses_writes_is_not_retried_at_probe_pace():
    writer = ProbedWriter(up_at=time.monotonic() + 1e9, answers=True)  # busy, for good
    sink = _sink(writer)
    stop = threading.Event()
    thread = threading.Thread(target=sink.step, args=(stop,))
    thread.start()
    time.sleep(3.0)
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    # Backoff 0.2, 0.4, 0.8, 1.6 s, every other wait cut short by the probe: a handful of
    # writes in 3 s, where retrying at the probe's pace would make about sixty.
    assert 3 <= len(writer.writes) <= 8, len(writer.writes)
