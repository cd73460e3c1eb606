"""ClickHouse tables of the REST API: hashed bearer tokens and the audit of every write."""

from __future__ import annotations

from analytics.tables import Column, Table

API_TOKENS = Table(
    "api_tokens",
    (
        Column("token_hash", "String"),
        Column("name", "String"),
        Column("role", "String"),
        Column("created", "DateTime"),
        Column("revoked", "UInt8"),
        Column("version", "UInt32"),
    ),
    order_by=("token_hash",),
    partition_by="",
    version_column="version",
)

API_AUDIT = Table(
    "api_audit",
    (
        Column("ts", "DateTime"),
        Column("ts_us", "UInt32"),
        Column("actor", "String"),
        Column("role", "String", low_cardinality=True),
        Column("method", "String", low_cardinality=True),
        Column("path", "String"),
        Column("target", "String"),
        Column("outcome", "UInt16"),
        Column("detail", "String"),
    ),
    order_by=("ts", "ts_us", "actor"),
    partition_by="toYYYYMM(ts)",
    replacing=False,
)

API_TABLES: tuple[Table, ...] = (API_TOKENS, API_AUDIT)
