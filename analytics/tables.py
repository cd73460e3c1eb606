"""ClickHouse table definitions for every event family, rendered per server capability.

One definition renders to DDL for ClickHouse 18.16 (Debian's server: plain String, no TTL,
no codecs) and for current engines (chdb: LowCardinality, codecs, TTL), picked by version.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest.schema import GPU_METRIC_FIELDS, GpuSample


@dataclass(frozen=True)
class Features:
    """What the connected ClickHouse supports beyond 18.16."""

    low_cardinality: bool = False
    codecs: bool = False
    ttl: bool = False

    @classmethod
    def for_version(cls, version: tuple[int, ...]) -> Features:
        """Return the features of a server version (LowCardinality, codecs, TTL from 20.3)."""
        modern = version >= (20, 3)
        return cls(low_cardinality=modern, codecs=modern, ttl=modern)


@dataclass(frozen=True)
class Column:
    """One column: name, base type, and how newer servers may store it."""

    name: str
    type: str
    low_cardinality: bool = False
    codec: str | None = None

    def render(self, features: Features) -> str:
        """Return the column's DDL."""
        kind = self.type
        if self.low_cardinality and features.low_cardinality:
            kind = f"LowCardinality({kind})"
        codec = f" CODEC({self.codec})" if self.codec and features.codecs else ""
        return f"`{self.name}` {kind}{codec}"


@dataclass(frozen=True)
class Table:
    """One MergeTree table: partitioned by day, deduplicated on its sort key."""

    name: str
    columns: tuple[Column, ...]
    order_by: tuple[str, ...]
    partition_by: str = "toYYYYMMDD(ts)"
    time_column: str = "ts"
    replacing: bool = True
    version_column: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def column_names(self) -> list[str]:
        """Return column names in table order."""
        return [c.name for c in self.columns]

    def ddl(self, database: str, features: Features, retention_days: int | None = None) -> str:
        """Return CREATE TABLE IF NOT EXISTS for this table."""
        version = f"`{self.version_column}`" if self.version_column else ""
        engine = f"ReplacingMergeTree({version})" if self.replacing else "MergeTree()"
        cols = ",\n  ".join(c.render(features) for c in self.columns)
        ttl = ""
        if retention_days and features.ttl and self.partition_by:
            ttl = f"\nTTL {self.time_column} + INTERVAL {int(retention_days)} DAY DELETE"
        partition = f"\nPARTITION BY {self.partition_by}" if self.partition_by else ""
        return (
            f"CREATE TABLE IF NOT EXISTS `{database}`.`{self.name}` (\n  {cols}\n)\n"
            f"ENGINE = {engine}{partition}\nORDER BY ({', '.join(self.order_by)}){ttl}"
        )


def _time() -> tuple[Column, ...]:
    return (Column("ts", "DateTime", codec="DoubleDelta, LZ4"), Column("ts_us", "UInt32"))


def _lineage() -> tuple[Column, ...]:
    """Event id and the Kafka position the row came from (crash-replay watermarks)."""
    return (
        Column("event_id", "String"),
        Column("src_topic", "String", low_cardinality=True),
        Column("src_partition", "UInt16"),
        Column("src_offset", "UInt64", codec="Delta, LZ4"),
    )


def _s(name: str) -> Column:
    return Column(name, "String", low_cardinality=True)


def _gpu_metric_columns() -> tuple[Column, ...]:
    cols = []
    for name in GPU_METRIC_FIELDS:
        info = GpuSample.model_fields[name]
        base = "UInt64" if "int" in str(info.annotation) else "Float64"
        codec = "T64, LZ4" if base == "UInt64" else "Gorilla, LZ4"
        cols.append(Column(info.alias or name, f"Nullable({base})", codec=codec))
    return tuple(cols)


GPU_METRICS = Table(
    "gpu_metrics",
    (
        *_time(),
        _s("node"),
        Column("gpu", "UInt16"),
        Column("uuid", "String"),
        Column("pci_bus_id", "String"),
        _s("nvml_error"),
        *_gpu_metric_columns(),
        *_lineage(),
    ),
    order_by=("node", "gpu", "ts", "ts_us"),
)

HOST_METRICS = Table(
    "host_metrics",
    (
        *_time(),
        _s("node"),
        Column("cpu_util", "Nullable(Float64)"),
        Column("load1", "Nullable(Float64)"),
        Column("mem_used_bytes", "Nullable(UInt64)"),
        Column("mem_total_bytes", "Nullable(UInt64)"),
        Column("swap_used_bytes", "Nullable(UInt64)"),
        *_lineage(),
    ),
    order_by=("node", "ts", "ts_us"),
)

NIC_COUNTERS = (
    "rx_bytes",
    "tx_bytes",
    "symbol_errors",
    "link_error_recovery",
    "link_downed",
    "rcv_errors",
    "xmit_discards",
)

NIC_METRICS = Table(
    "nic_metrics",
    (
        *_time(),
        _s("node"),
        _s("nic"),
        Column("port", "UInt16"),
        _s("state"),
        _s("phys_state"),
        Column("rate_gbps", "Nullable(Float64)"),
        *(Column(c, "Nullable(UInt64)") for c in NIC_COUNTERS),
        *_lineage(),
    ),
    order_by=("node", "nic", "port", "ts", "ts_us"),
)

DISK_METRICS = Table(
    "disk_metrics",
    (
        *_time(),
        _s("node"),
        _s("mount"),
        Column("used_bytes", "UInt64"),
        Column("total_bytes", "UInt64"),
        *_lineage(),
    ),
    order_by=("node", "mount", "ts", "ts_us"),
)

LOGS = Table(
    "logs",
    (
        *_time(),
        _s("node"),
        _s("source"),
        Column("path", "String"),
        Column("seq", "UInt64"),
        _s("job_id"),
        Column("rank", "Nullable(UInt32)"),
        Column("line", "String", codec="ZSTD(3)"),
        *_lineage(),
    ),
    order_by=("node", "ts", "ts_us", "event_id"),
)

TRAIN_STEPS = Table(
    "train_steps",
    (
        *_time(),
        _s("job_id"),
        Column("step", "UInt64"),
        Column("rank", "Int32"),
        _s("node"),
        *(
            Column(c, "Nullable(Float64)")
            for c in ("loss", "grad_norm", "tokens_per_s", "mfu", "step_time_s", "lr", "loss_scale")
        ),
        Column("skipped", "UInt8"),
        *_lineage(),
    ),
    order_by=("job_id", "step", "rank", "ts", "ts_us"),
)

COLLECTIVES = Table(
    "collectives",
    (
        *_time(),
        _s("job_id"),
        Column("rank", "UInt32"),
        _s("node"),
        _s("comm"),
        _s("op"),
        Column("seq", "UInt64"),
        Column("p2p_seq", "Nullable(UInt64)"),
        _s("state"),
        Column("bytes", "Nullable(UInt64)"),
        _s("dtype"),
        Column("peer", "Nullable(UInt32)"),
        Column("time_created_us", "Nullable(Int64)"),
        Column("time_started_us", "Nullable(Int64)"),
        Column("time_completed_us", "Nullable(Int64)"),
        Column("duration_ms", "Nullable(Float64)"),
        Column("timeout_ms", "Nullable(Float64)"),
        _s("reporter"),
        *_lineage(),
    ),
    order_by=("job_id", "comm", "seq", "rank", "state", "event_id"),
)

JOB_TOPOLOGY = Table(
    "job_topology",
    (
        *_time(),
        _s("job_id"),
        Column("world_size", "UInt32"),
        *(Column(c, "UInt32") for c in ("tp", "pp", "dp", "ep", "cp")),
        _s("scheduler"),
        Column("scheduler_job_id", "String"),
        Column("nodes", "Array(String)"),
        Column("payload", "String", codec="ZSTD(3)"),
        *_lineage(),
    ),
    order_by=("job_id", "ts", "ts_us"),
)

DEAD_LETTER = Table(
    "dead_letter",
    (
        *_time(),
        Column("src_topic", "String"),
        Column("src_partition", "UInt16"),
        Column("src_offset", "UInt64"),
        Column("key", "String"),
        Column("raw", "String"),
        Column("reason", "String"),
    ),
    order_by=("src_topic", "src_partition", "src_offset"),
)

TELEMETRY_TABLES: tuple[Table, ...] = (
    GPU_METRICS,
    HOST_METRICS,
    NIC_METRICS,
    DISK_METRICS,
    LOGS,
    TRAIN_STEPS,
    COLLECTIVES,
    JOB_TOPOLOGY,
)
ALL_TABLES: tuple[Table, ...] = (*TELEMETRY_TABLES, DEAD_LETTER)
TABLES_BY_NAME: dict[str, Table] = {t.name: t for t in ALL_TABLES}
