"""ClickHouse table of maintenance windows (silences) the action engine honours.

Append-only with a `seq` version like the other action tables: an edit or a deletion is a
new row, readers take the row with the highest `seq` (argMax), so no merge is awaited.
Portable to ClickHouse 18.16 (DateTime, no JSON).
"""

from __future__ import annotations

from analytics.tables import Column, Table

MAINTENANCE_WINDOWS = Table(
    "maintenance_windows",
    (
        Column("id", "String"),
        Column("seq", "UInt64"),
        Column("at", "DateTime"),
        Column("at_us", "UInt32"),
        Column("starts_at", "DateTime"),
        Column("ends_at", "DateTime"),
        Column("node", "String"),
        Column("job", "String"),
        Column("cluster", "String"),
        Column("category", "String"),
        Column("author", "String"),
        Column("reason", "String"),
        Column("deleted_by", "String"),
        Column("deleted", "UInt8"),
    ),
    order_by=("id", "seq"),
    partition_by="",
    time_column="at",
    replacing=False,
)
"""Matchers are glob patterns (`fnmatch`); an empty matcher matches everything."""

SILENCE_TABLES: tuple[Table, ...] = (MAINTENANCE_WINDOWS,)
