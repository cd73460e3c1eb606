"""The scheduler's live state in ClickHouse: snapshots written when it changes, read back."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from analytics.scheduler_tables import SCHEDULER_SNAPSHOTS
from analytics.store import Store
from scheduler.service import SchedulerState

_TYPES = {c.name: c.type for c in SCHEDULER_SNAPSHOTS.columns}


def write_snapshot(
    store: Store, source: str, seq: int, state: SchedulerState, at: datetime
) -> None:
    """Insert one snapshot of scheduler `source`."""
    store.insert(
        SCHEDULER_SNAPSHOTS.name,
        {
            "ts": [int(at.timestamp())],
            "ts_us": [at.microsecond],
            "source": [source],
            "seq": [seq],
            "loans": [list(state.loans)],
            "standbys": [list(state.standbys)],
            "queued": [len(state.queue)],
            "state": [state.model_dump_json(exclude={"as_of"})],
        },
        _TYPES,
    )


def latest_snapshot(store: Store, source: str | None = None) -> SchedulerState | None:
    """Return the newest stored snapshot (of `source`, or of any scheduler), or None."""
    where = "WHERE source = %(source)s" if source else ""
    frame = store.query_df(
        f"SELECT state, ts, ts_us FROM `{store.database}`.`{SCHEDULER_SNAPSHOTS.name}` {where} "
        "ORDER BY ts DESC, ts_us DESC, seq DESC LIMIT 1",
        {"source": source} if source else None,
    )
    if frame.empty:
        return None
    row = frame.iloc[0]
    text = row["state"]
    state = SchedulerState.model_validate_json(text.decode() if isinstance(text, bytes) else text)
    ts = row["ts"]
    base = (
        ts.replace(tzinfo=UTC)
        if isinstance(ts, datetime)
        else datetime.fromtimestamp(float(ts), UTC)
    )
    return state.model_copy(update={"as_of": base.replace(microsecond=int(row["ts_us"]))})


class SnapshotPublisher:
    """Write a scheduler's snapshot after it changes: at most once per `interval_s`.

    A change inside the interval is kept and written by the next change after it or by
    `flush()` (the owner calls it periodically and on shutdown); an unchanged state is never
    written twice.
    """

    def __init__(
        self,
        store: Store,
        source: str = "scheduler",
        interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.source = source
        self.interval_s = interval_s
        self.clock = clock
        self.seq = 0
        self.writes = 0
        self._last_at = -float("inf")
        self._last_json: str | None = None
        self._pending: Callable[[], SchedulerState] | None = None

    def changed(self, snapshot: Callable[[], SchedulerState]) -> None:
        """Note a change; write now unless the last write was within the interval."""
        self._pending = snapshot
        if self.clock() - self._last_at >= self.interval_s:
            self.flush()

    def flush(self) -> bool:
        """Write the pending change, if any and if it differs from the last written."""
        if self._pending is None:
            return False
        state, self._pending = self._pending(), None
        text = state.model_dump_json(exclude={"as_of"})
        if text == self._last_json:
            return False
        self.seq += 1
        write_snapshot(self.store, self.source, self.seq, state, datetime.now(UTC))
        self._last_json, self._last_at = text, self.clock()
        self.writes += 1
        return True
