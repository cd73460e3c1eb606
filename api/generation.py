"""A write counter that the API's worker processes share, so a write anywhere drops every cache.

Each worker caches rendered lists for `TG_API_CACHE_S`; without a shared signal, a write
handled by one worker (acknowledge, resolve, approve) would stay invisible in the others for
up to that long. A write bumps the counter in one small memory-mapped file; a cache entry
remembers the counter it was built under and is dead once the counter moves. Reading it is
one load from shared memory, cheap enough for every request.

API instances on other hosts share no file: given a store, a write also appends one row to
the `api_writes` table, and every instance adds that table's row count to its own counter,
read at most once per `interval_ms`. A write acknowledged through any instance therefore
drops the caches of every other instance within `interval_ms` plus one ClickHouse read (a
request arriving later than that re-reads the count, which the write already raised).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import socket
import struct
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from analytics.migrations import API_WRITES_TABLE
from analytics.store import Store, StoreError

_WORD = struct.Struct("<Q")


class Generation:
    """The number of writes seen; process-local, or shared through a file when given one."""

    def __init__(
        self, path: Path | None = None, store: Store | None = None, interval_ms: int = 500
    ) -> None:
        self.path = path
        self.store = store if interval_ms > 0 else None
        self.interval_s = interval_ms / 1000
        self._remote = 0
        self._read_at = float("-inf")  # monotonic time the remote count was last read
        self._reading = threading.Lock()
        self._writer = f"{socket.gethostname()}:{os.getpid()}"
        self._local = 0
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        if path is not None:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            if os.fstat(self._fd).st_size < _WORD.size:
                os.ftruncate(self._fd, _WORD.size)
            self._map = mmap.mmap(self._fd, _WORD.size)

    def current(self) -> int:
        """Return the counter (this host's writes plus, with a store, every instance's)."""
        return self._host() + self._stored()

    def _host(self) -> int:
        if self._map is None:
            return self._local
        return int(_WORD.unpack_from(self._map, 0)[0])

    def _stored(self) -> int:
        """Return the stored write count, re-read when older than the interval."""
        if self.store is None or time.monotonic() - self._read_at < self.interval_s:
            return self._remote
        if not self._reading.acquire(blocking=False):
            return self._remote  # another request is reading it now
        try:
            started = time.monotonic()
            frame = self.store.query_df(
                f"SELECT count() FROM `{self.store.database}`.`{API_WRITES_TABLE}`"
            )
            self._remote = max(self._remote, 0 if frame.empty else int(str(frame.iloc[0, 0])))
            self._read_at = started
        except StoreError:  # ClickHouse away: the list reads fail too; try again next request
            pass
        finally:
            self._reading.release()
        return self._remote

    def bump(self) -> int:
        """Count one write and return the new value (stored for other hosts first)."""
        if self.store is not None:
            self.store.insert(
                API_WRITES_TABLE,
                {
                    "seq": [time.time_ns()],
                    "writer": [self._writer],
                    "at": [int(datetime.now(UTC).timestamp())],
                },
                {"seq": "UInt64", "writer": "String", "at": "DateTime"},
            )
        return self._bump_host() + self._stored()

    def _bump_host(self) -> int:
        with self._lock:
            if self._map is None or self._fd is None:
                self._local += 1
                return self._local
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # the other workers' bumps
            try:
                value = self._host() + 1
                _WORD.pack_into(self._map, 0, value)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            return value

    def close(self) -> None:
        """Unmap the file (the file itself stays for the other workers)."""
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
