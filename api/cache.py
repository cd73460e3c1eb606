"""Snapshots of expensive reads and rendered hot lists, kept fresh in the background.

A value is served while it is younger than `ttl_s` (its age is that of the oldest data it
was built from, so a list rendered from a cached fleet snapshot is as old as that snapshot)
and while no write happened since it was built (the write `Generation`, shared by the
worker processes). A background thread rebuilds the entries that callers asked for recently
once they are `REFRESH_AT` of the way to expiry, so no request waits on a ClickHouse re-read.
When a rebuild overruns the TTL (a loaded machine), the previous value is served while the
refresher works, up to `OVERRUN_TTLS` TTLs old; past that, or without a refresher (tests,
one-off contexts), one caller rebuilds while the others get the previous value. A request
waits for a build only the first time a key is asked and after a write.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar, cast

from api.generation import Generation

log = logging.getLogger(__name__)
T = TypeVar("T")
REFRESH_AT = 0.7  # of the TTL: when the refresher rebuilds an entry
OVERRUN_TTLS = 2  # while the refresher rebuilds, the previous value serves up to this age
IDLE_TTLS = 3  # an entry nobody asked for in this many TTLs is no longer refreshed
FORGET_TTLS = 20  # ... and after this many it is dropped (cursor pages would pile up)
MAX_ALIASES = 20_000  # raw request keys remembered for the fast path
# A cache key: a tuple of the typed values a value depends on, its name first, e.g.
# ("gpus", state, node, limit, after). Never a string formatted from them: f"{None}" and
# "None" format alike, so `?node=None` once shared the unfiltered list's entry.
Key = tuple[Hashable, ...]


def check_key(key: Key) -> Key:
    """Return `key` if it is a hashable tuple; else raise TypeError (a formatted string)."""
    if type(key) is not tuple or not key:
        raise TypeError(f"a cache key is a non-empty tuple of typed parts, not {key!r}")
    hash(key)  # TypeError for an unhashable part
    return key


@dataclass
class Entry:
    """One cached value, when the data under it was read, the write count it saw."""

    value: object
    born: float
    generation: int
    build: Callable[[], object]
    asked: float


@dataclass(frozen=True)
class Rendered:
    """A response body rendered once, with its entity tag."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, body: bytes) -> Rendered:
        """Return a body with its tag (a hash of the bytes)."""
        return cls(body, '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"')


class SnapshotCache:
    """Single-flight, write-invalidated, background-refreshed values by key."""

    def __init__(self, ttl_s: float, generation: Generation | None = None) -> None:
        self.ttl_s = ttl_s
        self.generation = generation or Generation()
        self._entries: dict[Key, Entry] = {}
        self._gates: dict[Key, threading.Lock] = {}
        self._aliases: dict[Key, Key] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def get(self, key: Key, build: Callable[[], T]) -> T:
        """Return a fresh value of `key`, building it if needed (see the module doc)."""
        check_key(key)
        refreshing = getattr(self._local, "refreshing", False)
        limit = self.ttl_s * (REFRESH_AT if refreshing else 1.0)
        generation = self.generation.current()
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
            hit = self._entries.get(key)
        if hit is not None and hit.generation != generation:
            hit = None  # written since: never served again
        if hit is not None and time.monotonic() - hit.born < limit:
            return cast(T, self._use(hit))
        if hit is not None and not refreshing and self._overrun(hit):
            return cast(T, self._use(hit))
        if hit is not None and not gate.acquire(blocking=False):
            return cast(T, self._use(hit))  # previous value while another rebuilds
        if hit is None:
            gate.acquire()
        try:
            with self._lock:
                again = self._entries.get(key)
            if (
                again is not None
                and again.generation == generation
                and time.monotonic() - again.born < limit
            ):
                return cast(T, self._use(again))  # rebuilt while this caller waited
            return cast(T, self._build(key, build, generation, refreshing))
        finally:
            gate.release()

    def fresh(self, alias: Key) -> object | None:
        """Return the value a raw request key was last served from, if still fresh; else None."""
        key = self._aliases.get(alias)
        hit = None if key is None else self._entries.get(key)
        if hit is None or hit.generation != self.generation.current():
            return None
        if time.monotonic() - hit.born >= self.ttl_s and not self._overrun(hit):
            return None
        hit.asked = time.monotonic()
        return hit.value

    def alias(self, alias: Key, key: Key) -> None:
        """Remember that a raw request key is served by `key` (for `fresh`)."""
        check_key(alias)
        check_key(key)
        if alias not in self._aliases:
            with self._lock:
                if len(self._aliases) >= MAX_ALIASES:
                    self._aliases.clear()
                self._aliases[alias] = key

    def invalidate(self) -> None:
        """Count a write: every value built before it is dead, in every worker."""
        self.generation.bump()

    def refresh_due(self) -> int:
        """Rebuild the recently asked entries near expiry or written since; return how many."""
        now = time.monotonic()
        generation = self.generation.current()
        with self._lock:
            items = list(self._entries.items())
        done = 0
        for key, entry in items:
            if now - entry.asked > FORGET_TTLS * self.ttl_s:
                with self._lock:
                    self._entries.pop(key, None)
                continue
            if now - entry.asked > IDLE_TTLS * self.ttl_s:
                continue
            if entry.generation == generation and now - entry.born < self.ttl_s * REFRESH_AT:
                continue
            with self._lock:
                gate = self._gates.setdefault(key, threading.Lock())
            if not gate.acquire(blocking=False):
                continue  # a request is building it
            self._local.refreshing = True
            try:
                self._build(key, entry.build, self.generation.current(), refreshing=True)
                done += 1
            except Exception:  # noqa: BLE001  (the refresher's outermost loop: log, keep going)
                log.exception("refreshing the cached %s failed; requests will rebuild it", key)
            finally:
                self._local.refreshing = False
                gate.release()
        return done

    def start(self) -> None:
        """Start the background refresher (no-op without caching or when running)."""
        if self.ttl_s <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tg-api-refresh", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the refresher and wait for it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _run(self) -> None:
        tick = min(0.25, self.ttl_s / 10)
        while not self._stop.is_set():
            self._wake.wait(tick)
            self._wake.clear()
            if not self._stop.is_set():
                self.refresh_due()

    def _overrun(self, entry: Entry) -> bool:
        """Say whether an expired value may still be served because the refresher is on it."""
        if self._thread is None or time.monotonic() - entry.born >= OVERRUN_TTLS * self.ttl_s:
            return False
        self._wake.set()
        return True

    def _use(self, entry: Entry) -> object:
        entry.asked = time.monotonic()  # under a refresh: a value the refreshed one needs
        self._note(entry.born)
        return entry.value

    def _note(self, born: float) -> None:
        """Age the value being built by the cached value it just used."""
        stack: list[float] | None = getattr(self._local, "born", None)
        if stack:
            stack[-1] = min(stack[-1], born)

    def _build(self, key: Key, build: Callable[[], T], generation: int, refreshing: bool) -> T:
        stack: list[float] = self._local.__dict__.setdefault("born", [])
        stack.append(time.monotonic())
        try:
            value = build()
        finally:
            born = stack.pop()
        with self._lock:
            old = self._entries.get(key)
            asked = old.asked if refreshing and old is not None else time.monotonic()
            if old is None or (old.generation, old.born) <= (generation, born):
                self._entries[key] = Entry(value, born, generation, build, asked)
            # else a build that started later already stored a newer value: keep that one
        self._note(born)
        return value
