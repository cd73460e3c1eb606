"""The store: one small interface over a ClickHouse server (clickhouse-driver) and chdb."""

from __future__ import annotations

import logging
import queue
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa
from clickhouse_driver import Client
from clickhouse_driver import errors as ch_errors
from clickhouse_driver.util.escape import escape_params

log = logging.getLogger(__name__)
CLOSE_WAIT_S = 10.0  # close() waits this long for a connection another thread is using


class StoreError(RuntimeError):
    """A statement failed on the server (bad SQL, bad data)."""


class StoreRejected(StoreError):
    """The store refused the data itself (type, range, encoding): retrying cannot help."""


class StoreUnavailable(StoreError):
    """The store cannot be reached or is overloaded; retrying later may succeed."""


# Server error codes that mean the data itself is bad: parse, type, range, size.
_DATA_CODES = {6, 26, 27, 38, 41, 53, 69, 70, 72, 131, 321}
# Server error codes worth retrying: timeouts, network, overload, too many parts; and in a
# cluster: no ZooKeeper (225, 999), replica read-only (242), too few live replicas for the
# quorum (285), previous quorum write unfinished (286), replica not in the quorum (289).
_RETRYABLE_CODES = {
    *(159, 160, 164, 202, 209, 210, 241, 252, 279, 319, 394, 425),
    *(225, 242, 285, 286, 289, 999),
}


class Store(Protocol):
    """What the rest of TrainGuard needs from ClickHouse."""

    database: str
    cluster: str  # the ClickHouse cluster the tables are spread over; "" = one server

    def version(self) -> tuple[int, ...]:
        """Return the server version as a tuple of ints."""

    def command(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a statement that returns nothing."""

    def query_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Run a query and return its result as a DataFrame."""

    def insert(
        self, table: str, columns: Mapping[str, Sequence[Any]], types: Mapping[str, str]
    ) -> None:
        """Insert columns (equal-length lists) into database.table in one block."""

    def running_inserts(self) -> set[str]:
        """Return the query ids of INSERTs into this database the server is running now."""

    def close(self) -> None:
        """Release connections."""


def render(sql: str, params: Mapping[str, Any] | None) -> str:
    """Substitute %(name)s placeholders with safely escaped literals."""
    if not params:
        return sql
    return str(sql % escape_params(dict(params), {}))


def query_scalar(store: Store, sql: str, params: Mapping[str, Any] | None = None) -> Any:
    """Return the first column of the first row of a query, or None if it has no rows."""
    frame = store.query_df(sql, params)
    return None if frame.empty else frame.iloc[0, 0]


def parse_version(text: str) -> tuple[int, ...]:
    """Parse '18.16.1' or '26.9.2.1' into a tuple of ints."""
    return tuple(int(p) for p in text.strip().strip('"').split(".") if p.isdigit())


def cluster_settings(insert_quorum: int) -> dict[str, int]:
    """Return the query settings of every statement a store sends to a cluster.

    - `insert_distributed_sync`: an INSERT into a Distributed table returns only once every
      shard has its rows (the default queues them on the receiving server and sends later, so
      a watermark read right after would miss them, and a crash of that server loses them).
    - `insert_quorum`: that many replicas of the shard hold the rows before the INSERT
      returns. With every replica (2 of 2), any replica a read goes to holds every
      acknowledged row, and an INSERT whose outcome was unknown blocks the next one (code
      286, retryable) until every replica has it. While fewer replicas are alive an INSERT
      fails (code 285, retryable) instead.

    `select_sequential_consistency` is not set: on 18.16 a DROP PARTITION (retention) that
    drops the last quorum-written part leaves it recorded in ZooKeeper, and every such read
    of the table then fails until the next insert into it.
    """
    return {
        "insert_distributed_sync": 1,
        **({"insert_quorum": insert_quorum} if insert_quorum else {}),
    }


class ServerStore:
    """A ClickHouse server over the native protocol (one server, or one entry to a cluster)."""

    def __init__(
        self,
        host: str,
        port: int,
        database: str,
        user: str = "default",
        password: str = "",
        connect_timeout_s: float = 5.0,
        connections: int = 1,
        cluster: str = "",
        insert_quorum: int = 0,
    ) -> None:
        """Connect lazily; `connections` > 1 lets that many queries run at once (the API).

        With `cluster`, the tables are spread over that ClickHouse cluster (see
        analytics/tables.py) and every statement carries `cluster_settings(insert_quorum)`.
        """
        self.database = database
        self.cluster = cluster
        extra = cluster_settings(insert_quorum) if cluster else {}
        self._idle: queue.LifoQueue[Client] = queue.LifoQueue()
        self._all = [
            Client(
                host=host,
                port=port,
                user=user,
                password=password,
                connect_timeout=connect_timeout_s,
                send_receive_timeout=120,
                settings={"insert_block_size": 1_048_576, **extra},
            )
            for _ in range(max(1, connections))
        ]
        for client in self._all:
            self._idle.put(client)
        self._where = f"{host}:{port}"

    def _run(self, sql: str, **kwargs: Any) -> Any:
        client = self._idle.get()
        try:
            return self._execute(client, sql, **kwargs)
        finally:
            self._idle.put(client)

    def _execute(self, client: Client, sql: str, **kwargs: Any) -> Any:
        try:
            return client.execute(sql, **kwargs)
        except (ch_errors.NetworkError, ch_errors.SocketTimeoutError, EOFError, OSError) as exc:
            client.disconnect()
            raise StoreUnavailable(f"ClickHouse at {self._where} unreachable: {exc}") from exc
        except ch_errors.ServerException as exc:
            if exc.code in _RETRYABLE_CODES:
                raise StoreUnavailable(f"ClickHouse busy (code {exc.code}): {exc.message}") from exc
            if exc.code in _DATA_CODES:
                raise StoreRejected(
                    f"ClickHouse rejected the data ({exc.code}): {exc.message.splitlines()[0]}"
                ) from exc
            raise StoreError(f"ClickHouse error {exc.code}: {exc.message.splitlines()[0]}") from exc
        except ch_errors.Error as exc:
            if getattr(exc, "code", None) in _DATA_CODES:
                raise StoreRejected(f"data not encodable for ClickHouse: {exc}") from exc
            raise StoreError(f"ClickHouse client error: {exc}") from exc
        except (struct.error, TypeError, ValueError, OverflowError) as exc:
            raise StoreRejected(f"data not encodable for ClickHouse: {exc}") from exc

    def version(self) -> tuple[int, ...]:
        return parse_version(self._run("SELECT version()")[0][0])

    def command(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        self._run(render(sql, params))

    def query_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        rows, meta = self._run(render(sql, params), with_column_types=True)
        return pd.DataFrame(rows, columns=[name for name, _ in meta])

    def insert(
        self, table: str, columns: Mapping[str, Sequence[Any]], types: Mapping[str, str]
    ) -> None:
        names = ", ".join(f"`{c}`" for c in columns)
        self._run(
            f"INSERT INTO `{self.database}`.`{table}` ({names}) VALUES",
            params=list(columns.values()),
            columnar=True,
        )

    def running_inserts(self) -> set[str]:
        """Return the INSERTs into this database running now, on every server of the cluster.

        A writer in a cluster may enter through another server than the one a dead owner used,
        so every server is asked (those down are skipped: they run nothing).
        """
        prefix = f"INSERT INTO `{self.database}`."
        if not self.cluster:
            rows = self._run(
                "SELECT query_id FROM system.processes WHERE startsWith(query, %(prefix)s)",
                params={"prefix": prefix},
            )
            return {str(r[0]) for r in rows}
        hosts = self._run(
            "SELECT host_address, port FROM system.clusters WHERE cluster = %(c)s",
            params={"c": self.cluster},
        )
        if not hosts:
            raise StoreError(f"cluster {self.cluster!r} is not in {self._where}'s config")
        # every address a shard of its own: all servers asked, each down one skipped
        rows = self._run(
            "SELECT query_id FROM remote(%(hosts)s, system, processes) "
            "WHERE startsWith(query, %(prefix)s)",
            params={"hosts": ",".join(f"{h}:{int(p)}" for h, p in hosts), "prefix": prefix},
            settings={"skip_unavailable_shards": 1},
        )
        return {str(r[0]) for r in rows}

    def close(self) -> None:
        """Disconnect every client while no query runs on it, then keep it for later use (it
        reconnects lazily). Each client is taken from the idle pool first, waiting up to
        `CLOSE_WAIT_S` for one another thread is using (a lease heartbeat, say): pulling the
        socket from under a running query broke that query and the close both. A client
        still busy after the wait is left connected, and said so."""
        taken: list[Client] = []
        deadline = time.monotonic() + CLOSE_WAIT_S
        try:
            for _ in self._all:
                taken.append(self._idle.get(timeout=max(0.0, deadline - time.monotonic())))
        except queue.Empty:
            busy = len(self._all) - len(taken)
            log.warning(
                "ClickHouse at %s: %d connection(s) busy at close, left open", self._where, busy
            )
        finally:
            for client in taken:
                client.disconnect()
                self._idle.put(client)


_ARROW_TYPES = {
    "String": pa.binary(),
    "DateTime": pa.uint32(),
    "Float64": pa.float64(),
    "UInt8": pa.uint8(),
    "UInt16": pa.uint16(),
    "UInt32": pa.uint32(),
    "UInt64": pa.uint64(),
    "Int16": pa.int16(),
    "Int32": pa.int32(),
    "Int64": pa.int64(),
}


def arrow_type(ch_type: str) -> pa.DataType:
    """Return the Arrow type that carries a ClickHouse column type into chdb."""
    inner = ch_type
    while inner.startswith(("Nullable(", "LowCardinality(")):
        inner = inner[inner.index("(") + 1 : -1]
    if inner.startswith("Array("):
        return pa.list_(arrow_type(inner[6:-1]))
    return _ARROW_TYPES[inner]


def _utf8(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value  # not text: kept as bytes, as clickhouse-driver does
    return value


def _text_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Decode the String columns chdb returns as bytes, so both stores give the same frames."""
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object and len(column) and isinstance(column.iloc[0], bytes):
            frame[name] = column.map(_utf8)
    return frame


class EmbeddedStore:
    """ClickHouse in-process (chdb) with a persistent directory."""

    def __init__(self, path: str, database: str) -> None:
        from chdb import session  # heavy shared library: load only when embedded mode is used

        self.database = database
        self.cluster = ""  # chdb is one process: never a cluster
        self.path = path
        self._session = session.Session(path)
        self._lock = threading.Lock()

    def _run(self, sql: str, fmt: str = "CSV") -> Any:
        with self._lock:
            try:
                return self._session.query(sql, fmt)
            except _chdb_errors() as exc:
                raise StoreError(f"chdb error: {str(exc).splitlines()[0]}") from exc

    def version(self) -> tuple[int, ...]:
        return parse_version(str(self._run("SELECT version()")))

    def command(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        self._run(render(sql, params))

    def query_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        frame = self._run(render(sql, params), "DataFrame")
        return _text_columns(frame) if isinstance(frame, pd.DataFrame) else pd.DataFrame()

    def insert(
        self, table: str, columns: Mapping[str, Sequence[Any]], types: Mapping[str, str]
    ) -> None:
        try:
            arrays = {c: pa.array(v, type=arrow_type(types[c])) for c, v in columns.items()}
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as exc:
            raise StoreRejected(f"data not encodable for chdb: {exc}") from exc
        _tg_insert = pa.table(arrays)  # noqa: F841  (read by chdb's Python() table function)
        names = ", ".join(f"`{c}`" for c in columns)
        self._run(
            f"INSERT INTO `{self.database}`.`{table}` ({names}) "
            f"SELECT {names} FROM Python(_tg_insert)"
        )

    def running_inserts(self) -> set[str]:
        return set()  # one process owns the directory: nothing of anyone else's is in flight

    def close(self) -> None:
        with self._lock:
            self._session.close()


def _chdb_errors() -> tuple[type[Exception], ...]:
    """Return the exception classes chdb raises for a failed query.

    chdb's sessions raise `chdb._exceptions.ChdbError`, which is not the `chdb.ChdbError`
    exported at the top level; both are caught.
    """
    import chdb

    classes: list[type[Exception]] = [chdb.ChdbError]
    try:
        from chdb import _exceptions

        classes.append(_exceptions.ChdbError)
    except ImportError:  # an older chdb without the private module
        pass
    return tuple(classes)
