"""ClickHouse table of the scheduler's live state: one row per snapshot it publishes."""

from __future__ import annotations

from analytics.tables import Column, Table

SCHEDULER_SNAPSHOTS = Table(
    "scheduler_snapshots",
    (
        Column("ts", "DateTime"),
        Column("ts_us", "UInt32"),
        Column("source", "String"),
        Column("seq", "UInt64"),
        Column("loans", "Array(String)"),
        Column("standbys", "Array(String)"),
        Column("queued", "UInt32"),
        Column("state", "String"),
    ),
    order_by=("source", "ts", "ts_us", "seq"),
    partition_by="toYYYYMM(ts)",
    replacing=False,
)
"""`state` is the whole snapshot (pools, loans, standbys, queue, refusals) as JSON."""

SCHEDULER_TABLES: tuple[Table, ...] = (SCHEDULER_SNAPSHOTS,)
