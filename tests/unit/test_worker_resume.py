"""Where a worker resumes after an assignment: the oldest event of every partition's first read.

The restore shows the detectors the store's view before the resume time (NIC ports as last
sampled before it). A partition fetched after the first poll may start earlier: resuming at
the first poll's oldest event restored a port as down when its fall lay in between, and the
NCCL error that followed opened the incident instead of the port going down.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import Record, TopicFamily, TopicPartition, Topics
from ingest.schema import EventBase, encode_event
from tests.builders import at, make_host, make_step

TOPICS = Topics()
TRAIN = TopicPartition(TOPICS.topic(TopicFamily.TRAIN), 1)
METRICS = TopicPartition(TOPICS.topic(TopicFamily.METRICS), 3)


class ScriptedConsumer:
    """Owns two partitions; each poll hands out the next scripted batch."""

    def __init__(self, polls: list[list[tuple[TopicPartition, EventBase]]]) -> None:
        self.polls = polls
        self.read_to_end: set[TopicPartition] = set()
        self._offset = 0

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        if not self.polls:
            return []
        batch = []
        for tp, event in self.polls.pop(0):
            self._offset += 1
            batch.append(
                Record(
                    tp.topic, tp.partition, self._offset, event.key.encode(), encode_event(event), 0
                )
            )
        return batch

    def assignment(self) -> set[TopicPartition]:
        return {TRAIN, METRICS}

    def caught_up(self, fresh: bool = False) -> set[TopicPartition]:
        return set(self.read_to_end)

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        pass

    def rewind(
        self,
        partitions: Iterable[TopicPartition],
        not_after: Mapping[TopicPartition, int] | None = None,
    ) -> dict[TopicPartition, int]:
        return {}

    def pause(self) -> None:
        pass

    def resume(self) -> None:
        pass

    def close(self) -> None:
        pass


class NullProducer:
    def send(self, event: EventBase) -> None:
        pass

    def send_raw(self, topic: str, key: bytes, value: bytes) -> None:
        pass

    def flush(self, timeout_s: float = 30.0) -> None:
        pass


class RecordingWorker(DiagnosisWorker):
    """The real worker; its restore only notes when it came and where it resumed."""

    resumed: list[datetime | None]

    def restore(self, resume: datetime | None = None) -> None:
        self.resumed.append(resume)
        self.stats_fed_at_restore = self.stats.fed
        self._restored = True


def _worker(consumer: ScriptedConsumer, clock: list[float]) -> RecordingWorker:
    worker = RecordingWorker(
        consumer,
        NullProducer(),
        store=None,  # type: ignore[arg-type]  # never read: restore is recorded only
        topics=TOPICS,
        settings=WorkerSettings(fast_decode=False, restore_timeout_s=30.0),
        monotonic=lambda: clock[0],
        wall=lambda: at(600),
    )
    worker.resumed = []
    return worker


def test_the_restore_waits_for_every_partition_with_records_and_resumes_at_the_oldest():
    late_step = make_step(step=240)
    early_scrape = make_host(node="n1", seconds=195)
    consumer = ScriptedConsumer([[(TRAIN, late_step)], [(METRICS, early_scrape)]])
    clock = [0.0]
    worker = _worker(consumer, clock)

    worker.step()  # the train partition delivered; the metrics partition not fetched yet
    assert worker.resumed == []
    assert worker.stats.fed == 0

    clock[0] = 1.0
    worker.step()
    assert worker.resumed == [at(195)]
    assert worker.stats_fed_at_restore == 0  # nothing was fed before the restore


def test_a_partition_read_to_its_end_is_not_waited_for():
    consumer = ScriptedConsumer([[(TRAIN, make_step(step=240))]])
    consumer.read_to_end = {METRICS}
    worker = _worker(consumer, [0.0])
    worker.step()
    assert worker.resumed == [at(240)]


def test_a_partition_that_never_delivers_is_waited_for_at_most_the_restore_timeout():
    consumer = ScriptedConsumer([[(TRAIN, make_step(step=240))]])
    clock = [0.0]
    worker = _worker(consumer, clock)
    worker.step()
    clock[0] = 29.0
    worker.step()
    assert worker.resumed == []
    clock[0] = 30.0
    worker.step()
    assert worker.resumed == [at(240)]


def test_an_idle_worker_restores_at_once_and_resumes_at_the_newest():
    consumer = ScriptedConsumer([])
    consumer.read_to_end = {TRAIN, METRICS}
    worker = _worker(consumer, [0.0])
    worker.step()
    assert worker.resumed == [None]
