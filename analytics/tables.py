"""ClickHouse table definitions for every event family, rendered per server capability.

One definition renders to DDL for ClickHouse 18.16 (Debian's server: plain String, no TTL,
no codecs) and for current engines (chdb: LowCardinality, codecs, TTL), picked by version.

In cluster mode (`Features.cluster` set) a table is two: `<name>_local`, a Replicated*MergeTree
on every server, and `<name>`, a Distributed table over it. Everything else reads and writes
`<name>`, so no query changes; see docs/storage-cluster.md. Without a cluster the DDL is the
single-server DDL, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ingest.schema import DEFAULT_CLUSTER, GPU_METRIC_FIELDS, GpuSample

CLUSTER_MIGRATION = 9
# the schema version cluster mode (Replicated + Distributed tables) first shipped with
CLUSTER_MODE_SINCE = CLUSTER_MIGRATION
"""The migration that added the `cluster` column (analytics/migrations.py)."""


def stored_cluster(cluster: str) -> str:
    """Return how a cluster is stored: '' for the default one (rows from before clusters)."""
    return "" if cluster == DEFAULT_CLUSTER else cluster


def cluster_name(stored: object) -> str:
    """Return the cluster a stored value names (the inverse of `stored_cluster`)."""
    return str(stored or "") or DEFAULT_CLUSTER


def cluster_filter(cluster: str | None) -> tuple[str, dict[str, str]]:
    """Return a WHERE condition on the `cluster` column and its parameters (None: all)."""
    if cluster is None:
        return "1", {}
    return "cluster = %(cluster)s", {"cluster": stored_cluster(cluster)}


@dataclass(frozen=True)
class Features:
    """What the connected ClickHouse supports beyond 18.16."""

    low_cardinality: bool = False
    codecs: bool = False
    ttl: bool = False
    cluster: str = ""  # the <remote_servers> cluster the tables are spread over; "" = one server

    @classmethod
    def for_version(cls, version: tuple[int, ...]) -> Features:
        """Return the features of a server version (LowCardinality, codecs, TTL from 20.3)."""
        modern = version >= (20, 3)
        return cls(low_cardinality=modern, codecs=modern, ttl=modern)

    def on_cluster(self, cluster: str) -> Features:
        """Return these features for tables spread over `cluster` ("" = one server)."""
        return replace(self, cluster=cluster)

    @property
    def on(self) -> str:
        """Return the ` ON CLUSTER` clause of DDL (empty on one server)."""
        return f" ON CLUSTER `{self.cluster}`" if self.cluster else ""


LOCAL_SUFFIX = "_local"


def zookeeper_path(cluster: str, database: str, table: str) -> str:
    """Return the ZooKeeper path of a replicated table; `{shard}` is the server's macro."""
    return f"/clickhouse/{cluster}/tables/{{shard}}/{database}/{table}"


@dataclass(frozen=True)
class Column:
    """One column: name, base type, and how newer servers may store it."""

    name: str
    type: str
    low_cardinality: bool = False
    codec: str | None = None
    since: int = 1  # the migration that added it (earlier ones create the table without it)

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

    @property
    def shard_by(self) -> tuple[str, ...]:
        """Return the columns whose hash picks a row's shard in cluster mode.

        Rows from Kafka go by their (topic, partition): one partition's rows of a table all
        live on one shard, so the writer's per-partition watermark is read from one shard and a
        block of them is applied there atomically. Other tables go by the first sort column
        (an id), so every version of a ReplacingMergeTree key lands on the same shard and is
        replaced there.
        """
        names = self.column_names
        if "src_topic" in names and "src_partition" in names:
            return ("src_topic", "src_partition")
        return (self.order_by[0],)

    def local_name(self, features: Features) -> str:
        """Return the name of the table that stores the rows (`<name>_local` in a cluster)."""
        return f"{self.name}{LOCAL_SUFFIX}" if features.cluster else self.name

    def ddl(
        self,
        database: str,
        features: Features,
        retention_days: int | None = None,
        as_of: int | None = None,
    ) -> str:
        """Return CREATE TABLE IF NOT EXISTS for the table that stores the rows.

        On one server that is `<name>` itself; in a cluster it is `<name>_local`, created
        ON CLUSTER as Replicated(Replacing)MergeTree with the same version column. With
        `as_of`, the table as migration `as_of` created it (columns added later left out).
        """
        version = f"`{self.version_column}`" if self.version_column else ""
        engine = f"ReplacingMergeTree({version})" if self.replacing else "MergeTree()"
        if features.cluster:
            path = zookeeper_path(features.cluster, database, self.name)
            args = ", ".join(a for a in (f"'{path}'", "'{replica}'", version) if a)
            engine = f"Replicated{'Replacing' if self.replacing else ''}MergeTree({args})"
        columns = [c for c in self.columns if as_of is None or c.since <= as_of]
        cols = ",\n  ".join(c.render(features) for c in columns)
        ttl = ""
        if retention_days and features.ttl and self.partition_by:
            ttl = f"\nTTL {self.time_column} + INTERVAL {int(retention_days)} DAY DELETE"
        partition = f"\nPARTITION BY {self.partition_by}" if self.partition_by else ""
        return (
            f"CREATE TABLE IF NOT EXISTS `{database}`.`{self.local_name(features)}`"
            f"{features.on} (\n  {cols}\n)\n"
            f"ENGINE = {engine}{partition}\nORDER BY ({', '.join(self._key(as_of))}){ttl}"
        )

    def distributed_ddl(self, database: str, features: Features) -> str:
        """Return CREATE TABLE IF NOT EXISTS for the Distributed table `<name>` of a cluster."""
        if not features.cluster:
            raise ValueError(f"{self.name}: a Distributed table needs a cluster")
        key = ", ".join(f"`{c}`" for c in self.shard_by)
        return (
            f"CREATE TABLE IF NOT EXISTS `{database}`.`{self.name}`{features.on} "
            f"AS `{database}`.`{self.local_name(features)}` "
            f"ENGINE = Distributed(`{features.cluster}`, `{database}`, "
            f"`{self.local_name(features)}`, cityHash64({key}))"
        )

    def create(
        self,
        database: str,
        features: Features,
        retention_days: int | None = None,
        as_of: int | None = None,
    ) -> list[str]:
        """Return the statements that create this table: one, or local + Distributed."""
        if features.cluster and as_of is not None:
            as_of = max(as_of, CLUSTER_MODE_SINCE)  # see add_columns
        first = self.ddl(database, features, retention_days, as_of)
        return [first, self.distributed_ddl(database, features)] if features.cluster else [first]

    def add_columns(self, database: str, features: Features, since: int) -> list[str]:
        """Return the ALTERs that add the columns of migration `since` (and extend the key).

        A new sort-key column is added without a default expression (ClickHouse forbids one
        in a key it extends), so rows from before it read as the type's empty value.

        In a cluster, tables are created at least at the schema of `CLUSTER_MODE_SINCE` (no
        cluster-mode database predates it), so its columns need no ALTER. A later column goes
        to `<name>_local` ON CLUSTER, and the Distributed `<name>` is created again over it
        (18.16 refuses an ALTER ON CLUSTER of a table that is not replicated, and MODIFY ORDER
        BY in an ALTER ON CLUSTER: a later key change in a cluster is refused here).
        """
        new = [c for c in self.columns if c.since == since]
        if not new or (features.cluster and since <= CLUSTER_MODE_SINCE):
            return []
        adds = [f"ADD COLUMN {c.render(features)}" for c in new]
        extends_key = any(c.name in self.order_by for c in new)
        if not features.cluster:
            key = [f"MODIFY ORDER BY ({', '.join(self._key(since))})"] if extends_key else []
            return [f"ALTER TABLE `{database}`.`{self.name}` {', '.join(adds + key)}"]
        if extends_key:
            raise ValueError(
                f"{self.name}: migration {since} extends the sort key, which ClickHouse 18.16 "
                "cannot do ON CLUSTER; run it on one replica of each shard"
            )
        local = f"`{database}`.`{self.local_name(features)}`{features.on}"
        return [
            f"ALTER TABLE {local} {', '.join(adds)}",
            f"DROP TABLE IF EXISTS `{database}`.`{self.name}`{features.on}",
            self.distributed_ddl(database, features),
        ]

    def _key(self, as_of: int | None) -> list[str]:
        since = {c.name: c.since for c in self.columns}
        return [k for k in self.order_by if as_of is None or since.get(k, 1) <= as_of]


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


def _cluster() -> Column:
    """The cluster of the row ('' for the default cluster): node and job names repeat across
    clusters, so it ends every telemetry table's sort key (rows never merge across them)."""
    return Column("cluster", "String", low_cardinality=True, since=CLUSTER_MIGRATION)


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
        _cluster(),
    ),
    order_by=("node", "gpu", "ts", "ts_us", "cluster"),
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
        _cluster(),
    ),
    order_by=("node", "ts", "ts_us", "cluster"),
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
        _cluster(),
    ),
    order_by=("node", "nic", "port", "ts", "ts_us", "cluster"),
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
        _cluster(),
    ),
    order_by=("node", "mount", "ts", "ts_us", "cluster"),
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
        _cluster(),
    ),
    order_by=("node", "ts", "ts_us", "event_id", "cluster"),
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
        _cluster(),
    ),
    order_by=("job_id", "step", "rank", "ts", "ts_us", "cluster"),
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
        _cluster(),
    ),
    order_by=("job_id", "comm", "seq", "rank", "state", "event_id", "cluster"),
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
        _cluster(),
    ),
    order_by=("job_id", "ts", "ts_us", "cluster"),
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
