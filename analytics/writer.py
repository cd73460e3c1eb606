"""The sink's writer: columnar inserts into ClickHouse, exactly once per Kafka position and
once per event id across restarts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from analytics.columns import ColumnBatch, Row
from analytics.store import Store, StoreError, StoreRejected, StoreUnavailable
from analytics.tables import ALL_TABLES, TABLES_BY_NAME, TELEMETRY_TABLES, Table
from ingest.bus import Record, TopicPartition
from ingest.fast_decode import GpuScrape
from ingest.schema import Event
from ingest.sink import BatchRejected, DeadLetter, WriterUnavailable

log = logging.getLogger(__name__)

Mark = tuple[str, str, int]  # (table, topic, partition)


class ClickHouseWriter:
    """Writes batches table by table and skips rows already stored before a crash.

    Each row carries the (topic, partition, offset) it came from. Rows of one table in one
    batch go in one INSERT block, which ClickHouse applies atomically, and batches are written
    in offset order; so for every table and partition, everything up to the highest stored
    offset is stored. After a restart the watermark is read back and replayed rows are dropped.

    Two cases would make a watermark read too early: an INSERT of the previous owner that the
    server is still running (the owner was killed after sending it), and a write reported as
    failed that the server applied anyway. So reading waits for INSERTs already running to end,
    and every failed write re-reads the watermarks of its partitions before the retry.

    An event re-sent by its producer comes back at a new, higher offset. The sink drops the
    ids it wrote recently, but that memory starts empty after a restart (or a rebalance); so
    with the watermarks the writer also reads the event ids stored from each partition within
    `id_lookback` offsets of its watermark, and never inserts those ids again. Without it a
    re-sent duplicate stayed visible to queries without FINAL until a merge removed it.
    """

    def __init__(
        self,
        store: Store,
        settle_timeout_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        id_lookback: int = 20_000,
    ) -> None:
        self.store = store
        self.settle_timeout_s = settle_timeout_s
        self.id_lookback = id_lookback
        self._sleep = sleep
        self._marks: dict[Mark, int] = {}
        self._loaded: set[TopicPartition] = set()
        # per table: an event's rows go to several tables, and a crash can fall between them
        self._stored_ids: dict[tuple[str, TopicPartition], set[str]] = {}
        self.duplicates = 0  # rows skipped because their event id was stored before a restart
        self._types = {t.name: {c.name: c.type for c in t.columns} for t in ALL_TABLES}

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Drop watermarks of partitions now owned elsewhere (they are re-read on return)."""
        self._loaded -= partitions
        for tp in partitions:
            for table in TABLES_BY_NAME:
                self._stored_ids.pop((table, tp), None)
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self._marks = {k: v for k, v in self._marks.items() if (k[1], k[2]) not in gone}

    def reachable(self) -> bool:
        """Return whether the store answers a trivial query now (the sink's outage probe)."""
        try:
            self.store.query_df("SELECT 1")
        except StoreError as exc:
            log.debug("store probe: %s", exc)
            return False
        return True

    def write(
        self, events: Sequence[tuple[Record, Event | GpuScrape]], dead: Sequence[DeadLetter]
    ) -> int:
        """Insert the batch; return the rows written (replayed rows and re-sent ids excluded)."""
        first, last = _bounds([r for r, _ in events] + [d.record for d in dead])
        partitions = set(first)
        try:
            self._load(partitions - self._loaded)
            batch = ColumnBatch()
            for record, event in events:
                batch.add_event(event, (record.topic, record.partition, record.offset))
            for d in dead:
                r = d.record
                batch.add_dead_letter(
                    (r.topic, r.partition, r.offset), r.key, r.value, d.reason, d.received
                )
            written = 0
            for name in list(batch.rows):
                written += self._insert(TABLES_BY_NAME[name], batch, first)
                for tp, offset in last.items():
                    self._marks[(name, tp.topic, tp.partition)] = offset
        except StoreUnavailable as exc:
            self.forget(partitions)
            raise WriterUnavailable(str(exc)) from exc
        except StoreRejected as exc:
            self.forget(partitions)
            raise BatchRejected(str(exc)) from exc
        return written

    def _not_stored(self, table: Table, rows: list[Row]) -> list[Row]:
        """Drop rows whose event id this table stored from their partition before a restart."""
        names = table.column_names
        t, p, e = names.index("src_topic"), names.index("src_partition"), names.index("event_id")
        stored = self._stored_ids
        keep = [
            r
            for r in rows
            if str(r[e]) not in stored.get((table.name, TopicPartition(str(r[t]), int(r[p]))), ())  # type: ignore[call-overload]
        ]
        if len(keep) < len(rows):
            self.duplicates += len(rows) - len(keep)
            log.info(
                "skipping %d re-sent row(s) of %s stored before a restart",
                len(rows) - len(keep),
                table.name,
            )
        return keep

    def _insert(self, table: Table, batch: ColumnBatch, first: dict[TopicPartition, int]) -> int:
        rows: list[Row] | None = None
        if any(
            self._marks.get((table.name, tp.topic, tp.partition), -1) >= off
            for tp, off in first.items()
        ):
            rows = self._unstored(table, batch.rows[table.name])
        if any((table.name, tp) in self._stored_ids for tp in first):
            rows = self._not_stored(table, batch.rows[table.name] if rows is None else rows)
        cols = batch.columns(table, rows)
        if cols:
            self.store.insert(table.name, cols, self._types[table.name])
        return len(cols.get("src_offset", ()))

    def _unstored(self, table: Table, rows: list[Row]) -> list[Row]:
        names = table.column_names
        t, p, o = names.index("src_topic"), names.index("src_partition"), names.index("src_offset")
        marks = self._marks
        keep = [r for r in rows if int(r[o]) > marks.get((table.name, str(r[t]), int(r[p])), -1)]  # type: ignore[call-overload]
        if len(keep) < len(rows):
            log.info(
                "skipping %d row(s) of %s already stored before a restart",
                len(rows) - len(keep),
                table.name,
            )
        return keep

    def _load(self, partitions: set[TopicPartition]) -> None:
        if not partitions:
            return
        self._settle()
        topics = tuple(sorted({tp.topic for tp in partitions}))
        for table in TABLES_BY_NAME:
            frame = self.store.query_df(
                f"SELECT src_topic, src_partition, max(src_offset) AS mark "
                f"FROM `{self.store.database}`.`{table}` WHERE src_topic IN %(topics)s "
                f"GROUP BY src_topic, src_partition",
                {"topics": topics},
            )
            for topic, part, mark in frame.itertuples(index=False):
                name = str(topic)
                if TopicPartition(name, int(part)) in partitions:
                    self._marks[(table, name, int(part))] = int(mark)
        for t in TELEMETRY_TABLES:
            self._load_ids(t.name, partitions)
        self._loaded |= partitions

    def _load_ids(self, table: str, partitions: set[TopicPartition]) -> None:
        """Read the event ids stored from the partitions within id_lookback of the watermark."""
        since = {
            tp: mark - self.id_lookback
            for tp in partitions
            if (mark := self._marks.get((table, tp.topic, tp.partition))) is not None
        }
        if not since or self.id_lookback <= 0:
            return
        params: dict[str, object] = {}
        terms = []
        for i, (tp, offset) in enumerate(
            sorted(since.items(), key=lambda x: (x[0].topic, x[0].partition))
        ):
            # src_offset is unsigned: from offset 0 on, no bound at all
            params |= {f"t{i}": tp.topic, f"p{i}": tp.partition, f"o{i}": max(offset, 0)}
            bound = f" AND src_offset > %(o{i})s" if offset >= 0 else ""
            terms.append(f"(src_topic = %(t{i})s AND src_partition = %(p{i})s{bound})")
        frame = self.store.query_df(
            f"SELECT DISTINCT src_topic, src_partition, event_id "
            f"FROM `{self.store.database}`.`{table}` WHERE {' OR '.join(terms)}",
            params,
        )
        for tp in since:
            self._stored_ids[(table, tp)] = set()
        for topic, part, event_id in frame.itertuples(index=False):
            self._stored_ids[(table, TopicPartition(str(topic), int(part)))].add(str(event_id))

    def _settle(self) -> None:
        """Wait until the INSERTs running now (maybe a dead owner's last one) have ended."""
        running = self.store.running_inserts()
        if not running:
            return
        log.info("waiting for %d running INSERT(s) before reading watermarks", len(running))
        deadline = time.monotonic() + self.settle_timeout_s
        while running and time.monotonic() < deadline:
            self._sleep(0.05)
            running &= self.store.running_inserts()
        if running:
            log.warning(
                "%d INSERT(s) still running after %.0f s; reading watermarks anyway",
                len(running),
                self.settle_timeout_s,
            )


def _bounds(
    records: Sequence[Record],
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """Return each partition's first and last offset among the records."""
    low: dict[tuple[str, int], int] = {}  # plain tuples: hashed in C, ~1 us less a record
    high: dict[tuple[str, int], int] = {}
    for r in records:
        key, offset = (r.topic, r.partition), r.offset
        if offset < low.get(key, offset + 1):
            low[key] = offset
        if offset > high.get(key, -1):
            high[key] = offset
    first = {TopicPartition(t, p): offset for (t, p), offset in low.items()}
    return first, {TopicPartition(t, p): offset for (t, p), offset in high.items()}
