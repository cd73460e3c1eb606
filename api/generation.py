"""A write counter that the API's worker processes share, so a write anywhere drops every cache.

Each worker caches rendered lists for `TG_API_CACHE_S`; without a shared signal, a write
handled by one worker (acknowledge, resolve, approve) would stay invisible in the others for
up to that long. A write bumps the counter in one small memory-mapped file; a cache entry
remembers the counter it was built under and is dead once the counter moves. Reading it is
one load from shared memory, cheap enough for every request.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import threading
from pathlib import Path

_WORD = struct.Struct("<Q")


class Generation:
    """The number of writes seen; process-local, or shared through a file when given one."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
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
        """Return the counter."""
        if self._map is None:
            return self._local
        return int(_WORD.unpack_from(self._map, 0)[0])

    def bump(self) -> int:
        """Count one write and return the new value."""
        with self._lock:
            if self._map is None or self._fd is None:
                self._local += 1
                return self._local
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # the other workers' bumps
            try:
                value = self.current() + 1
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
