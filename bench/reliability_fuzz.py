"""The fuzz rig: hostile and valid records on every telemetry topic while the sink and the
diagnosis worker run, and the audit of what became of each.

`FuzzRig` runs the real sink and the streaming diagnosis worker in threads on a Kafka bus of
its own topics and a ClickHouse database of its own, publishes batches of `bench.fuzz_wire`
inputs, waits until both have read them, and audits the store:

- every valid event is stored exactly once (its rows in its kind's table, by a plain count:
  a duplicate visible to any query counts);
- every hostile record is dead-lettered exactly once, with its raw bytes;
- neither loop died or stalled, and diagnosis digested every valid event (`poison == 0`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType

from analytics.store import Store
from analytics.writer import ClickHouseWriter
from bench.fuzz_wire import Input
from bench.reliability_faults import joined
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.kafka_bus import KafkaBus
from ingest.sink import Sink, SinkSettings

TABLE_OF_KIND = {
    "gpu_metrics": "gpu_metrics",
    "host_metrics": "host_metrics",
    "log": "logs",
    "train_step": "train_steps",
    "collective": "collectives",
    "job_topology": "job_topology",
}


class RigError(RuntimeError):
    """The rig could not run (no partitions, a loop died): not a finding about the data."""


@dataclass
class Audit:
    """What became of the records published so far."""

    published: int = 0
    valid: int = 0  # distinct valid event ids
    hostile: int = 0
    lost: int = 0  # valid events with fewer rows than they make
    duplicated: int = 0  # rows beyond those (visible to a plain query)
    not_dead_lettered: int = 0  # hostile records without their dead letter
    dead_lettered_twice: int = 0
    poison: int = 0  # valid events diagnosis failed on
    loops_dead: int = 0
    flaws: dict[str, int] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """Whether nothing went wrong."""
        wrong = (self.lost, self.duplicated, self.not_dead_lettered, self.dead_lettered_twice)
        return not any(wrong) and not self.poison and not self.loops_dead


class FuzzRig:
    """The sink and the diagnosis worker on a bus and a database of their own."""

    def __init__(self, bus: KafkaBus, store: Store) -> None:
        self.bus, self.store = bus, store
        self.sink = Sink(
            joined(bus, f"{bus.topics.prefix}fuzz-sink"),
            ClickHouseWriter(store),
            SinkSettings(batch_seconds=0.2),
        )
        self.worker = DiagnosisWorker(
            joined(bus, f"{bus.topics.prefix}fuzz-diagnose"),
            bus.producer(),
            store,
            bus.topics,
            settings=WorkerSettings(publish_interval_s=1.0, poll_timeout_s=0.2),
        )
        self.producer = bus.producer()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self.sink.run, args=(self._stop,), daemon=True),
            threading.Thread(target=self.worker.run, args=(self._stop,), daemon=True),
        ]
        self._expected: dict[str, tuple[str, int]] = {}  # event id -> (table, rows), first wins
        self._hostile: Counter[bytes] = Counter()
        self._flaws: Counter[str] = Counter()
        self._published = 0

    def __enter__(self) -> FuzzRig:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self.producer.close()
        self.sink.consumer.close()
        self.worker.consumer.close()
        self.worker.producer.close()

    def publish(self, batch: list[Input]) -> None:
        """Publish a batch to the topics of its records' families."""
        for item in batch:
            self.producer.send_raw(self.bus.topics.topic(item.family), item.key, item.value)
            if item.event_id is not None:
                table = TABLE_OF_KIND[item.kind or ""]
                self._expected.setdefault(item.event_id, (table, item.rows))
            else:
                self._hostile[item.value] += 1
                self._flaws[item.flaw or "?"] += 1
        self.producer.flush()
        self._published += len(batch)

    def settle(self, timeout_s: float = 120.0) -> None:
        """Wait until the sink and the worker have read everything published."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not all(t.is_alive() for t in self._threads):
                raise RigError("a loop died: see its log")
            if min(self.sink.stats.consumed, self.worker.stats.consumed) >= self._published:
                time.sleep(0.5)  # the sink's last batch is written before its offsets move
                return
            time.sleep(0.1)
        raise RigError(
            f"stalled: {self._published} published, sink read {self.sink.stats.consumed}, "
            f"diagnosis read {self.worker.stats.consumed}"
        )

    def audit(self) -> Audit:
        """Return what became of every record published so far (call after settle)."""
        found = self._stored_rows()
        audit = Audit(
            published=self._published,
            valid=len(self._expected),
            hostile=sum(self._hostile.values()),
            poison=self.worker.stats.poison,
            loops_dead=sum(not t.is_alive() for t in self._threads),
            flaws=dict(self._flaws),
        )
        for event_id, (_table, rows) in self._expected.items():
            have = found.get(event_id, 0)
            audit.lost += have < rows
            audit.duplicated += max(0, have - rows)
        letters = self._dead_letters()
        for raw, times in self._hostile.items():
            have = letters.get(raw, 0)
            audit.not_dead_lettered += max(0, times - have)
            audit.dead_lettered_twice += max(0, have - times)
        return audit

    def _stored_rows(self) -> dict[str, int]:
        db = self.store.database
        rows: dict[str, int] = {}
        for table in sorted(set(TABLE_OF_KIND.values())):
            frame = self.store.query_df(
                f"SELECT event_id, count() AS n FROM `{db}`.`{table}` GROUP BY event_id"
            )
            for event_id, n in frame.itertuples(index=False):
                rows[str(event_id)] = rows.get(str(event_id), 0) + int(n)
        return rows

    def _dead_letters(self) -> Counter[bytes]:
        frame = self.store.query_df(
            f"SELECT hex(raw) AS raw FROM `{self.store.database}`.dead_letter"
        )
        return Counter(bytes.fromhex(str(r)) for r in frame["raw"])
