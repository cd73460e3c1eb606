"""First-writer-wins claims that let several engine replicas share one store safely.

ClickHouse 18.16 has no transactions and no conditional write, but an append-only `Log`
table is a total order: an INSERT holds the table's write lock, so rows come back, read by
one thread, in the order the server accepted them. A claim is one row `(key, token)`; the
claimant reads back the first row of its key and has won iff that row is its own. Two
contenders that both inserted see the same first row, so at most one wins (a key's first
row never changes once written); one whose insert came later sees the earlier one.

A key names one move of one step out of one state (`<action_id>:planned`, `...:approved`,
`...:executing`, `...:awaiting_approval`), so every side effect and every decision is taken
by exactly one replica. A winner whose move failed part-way (the store refused the next
state) claims the key again and goes on from the stored state, unless another replica has
taken it over meanwhile. A winner that dies before finishing its move would block the key
forever, so each replica writes a heartbeat: a key whose holder's heartbeat is older than
`lease_s` is taken over through a successor key `<key>><holder>`, again first-writer-wins.
A replica refuses to claim while its own heartbeat is older than half the lease (a paused
process must not act on a claim the others may already consider dead).

Assumptions: the claims table lives on one ClickHouse server (in a cluster, a `Log` table
on the coordinator, never a Distributed table); replica clocks agree within a small part of
the lease (NTP), since heartbeats are compared against the reader's clock.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from analytics.migrations import CLAIMS_TABLE, HEARTBEATS_TABLE
from analytics.store import Store, StoreError

log = logging.getLogger(__name__)
MAX_TAKEOVERS = 16  # successor keys followed before giving up (each needs a dead holder)


def replica_name(prefix: str = "act") -> str:
    """Return a name unique to this process start (host, pid, random suffix)."""
    return f"{prefix}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Holder:
    """The first claimant of a key."""

    token: str
    replica: str


class ClaimMove(StrEnum):
    """What a claimant does after reading back the first row of a key."""

    WON = "won"  # the first row is its own
    RESUME = "resume"  # its own from an earlier attempt: goes on unless taken over meanwhile
    LOST = "lost"  # held by a live replica
    TAKE_OVER = "take_over"  # held by a dead replica: claim the successor key


def after_claim(
    holder: Holder, token: str, replica: str, alive: Callable[[str], bool]
) -> ClaimMove:
    """Decide a claim from the key's first row (`alive` is asked only about another holder)."""
    if holder.token == token:
        return ClaimMove.WON
    if holder.replica == replica:
        return ClaimMove.RESUME
    if alive(holder.replica):
        return ClaimMove.LOST
    return ClaimMove.TAKE_OVER


def successor_key(key: str, dead_holder: str) -> str:
    """Return the key that takes over `key` from its dead holder (first-writer-wins again)."""
    return f"{key}>{dead_holder}"


def may_claim(now_s: float, last_beat_s: float, lease_s: float) -> bool:
    """Say whether a replica may claim: its own heartbeat is within half the lease."""
    return not now_s - last_beat_s > lease_s / 2


def within_lease(last_beat_us: float, now_us: float, lease_s: float) -> bool:
    """Say whether a heartbeat at `last_beat_us` still holds at `now_us` (microseconds)."""
    return now_us - last_beat_us <= lease_s * 1e6


class Claims:
    """Claims and heartbeats of one replica (thread-safe; the heartbeat runs on a thread)."""

    def __init__(
        self,
        store: Store,
        replica: str | None = None,
        lease_s: float = 15.0,
        heartbeat_s: float = 2.0,
    ) -> None:
        if not heartbeat_s < lease_s / 2:
            raise ValueError("the heartbeat must come at least twice per lease")
        self.store, self.lease_s, self.heartbeat_s = store, lease_s, heartbeat_s
        self.replica = replica or replica_name()
        self._last_beat = float("-inf")  # monotonic time of the last stored heartbeat
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ claims

    def acquire(self, key: str) -> bool:
        """Claim `key`, or its successor if its holder is dead; return whether this won."""
        self._ensure_beating()
        if not may_claim(time.monotonic(), self._last_beat, self.lease_s):
            log.warning("claims: own heartbeat is stale, not claiming %s", key)
            return False
        for _ in range(MAX_TAKEOVERS):
            token = uuid.uuid4().hex
            holder = self._insert_and_read(key, token)
            move = after_claim(holder, token, self.replica, self.alive)
            if move == ClaimMove.RESUME:
                # its own move that failed part-way (the store refused the next state): it
                # goes on from the stored state, unless another replica took it over while
                # this one's heartbeat had lapsed
                return self.holder(successor_key(key, self.replica)) is None
            if move != ClaimMove.TAKE_OVER:
                return move == ClaimMove.WON
            log.warning("claims: %s holds %s but is dead; taking over", holder.replica, key)
            key = successor_key(key, holder.replica)
        return False

    def holder(self, key: str) -> Holder | None:
        """Return the first claimant of `key` (no successor followed), or None."""
        frame = self.store.query_df(
            f"SELECT token, replica FROM `{self.store.database}`.`{CLAIMS_TABLE}` "
            f"WHERE key = %(key)s LIMIT 1 SETTINGS max_threads = 1",
            {"key": key},
        )
        if frame.empty:
            return None
        return Holder(str(frame.iloc[0, 0]), str(frame.iloc[0, 1]))

    def _insert_and_read(self, key: str, token: str) -> Holder:
        now = datetime.now(UTC)
        self.store.insert(
            CLAIMS_TABLE,
            {
                "key": [key],
                "token": [token],
                "replica": [self.replica],
                "at": [int(now.timestamp())],
                "at_us": [now.microsecond],
            },
            {
                "key": "String",
                "token": "String",
                "replica": "String",
                "at": "DateTime",
                "at_us": "UInt32",
            },
        )
        found = self.holder(key)
        if found is None:  # an acknowledged insert is visible on the same server
            raise StoreError(f"claim {key!r} not read back after its insert")
        return found

    # ------------------------------------------------------------------ liveness

    def alive(self, replica: str) -> bool:
        """Say whether `replica` wrote a heartbeat within the lease."""
        frame = self.store.query_df(
            f"SELECT max(toUInt64(at) * 1000000 + at_us) FROM "
            f"`{self.store.database}`.`{HEARTBEATS_TABLE}` WHERE replica = %(r)s",
            {"r": replica},
        )
        last_us = 0 if frame.empty else int(str(frame.iloc[0, 0]))
        return within_lease(last_us, time.time() * 1e6, self.lease_s)

    def beat(self) -> None:
        """Store one heartbeat of this replica."""
        now = datetime.now(UTC)
        started = time.monotonic()
        self.store.insert(
            HEARTBEATS_TABLE,
            {
                "replica": [self.replica],
                "seq": [time.time_ns()],
                "at": [int(now.timestamp())],
                "at_us": [now.microsecond],
            },
            {"replica": "String", "seq": "UInt64", "at": "DateTime", "at_us": "UInt32"},
        )
        self._last_beat = started

    def _ensure_beating(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self.beat()
            self._thread = threading.Thread(
                target=_beat_while_used,
                args=(weakref.ref(self), self._stop, self.heartbeat_s),
                name="tg-heartbeat",
                daemon=True,
            )
            self._thread.start()

    def stop(self) -> None:
        """Stop the heartbeat (the others take this replica's claims over after the lease)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def _beat_while_used(ref: weakref.ref[Claims], stop: threading.Event, every_s: float) -> None:
    """Beat until stopped or until the claims object is gone (an engine dropped)."""
    failing = False
    while not stop.wait(every_s):
        claims = ref()
        if claims is None:
            return
        try:
            claims.beat()
            failing = False
        except StoreError as exc:  # the lease lapses; claims are refused until it is back
            if not failing:
                log.warning("claims: heartbeat not stored (retrying quietly): %s", exc)
            failing = True
        del claims
