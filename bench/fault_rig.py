"""The fault runs' workload (the twin's multi-fault scenario) and their audit: rows stored per
event id against what each event makes, incidents against an uninterrupted replay.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from analytics.columns import ColumnBatch
from analytics.store import Store, StoreError
from analytics.tables import TELEMETRY_TABLES
from diagnosis.engine import DiagnosisEngine
from diagnosis.incident_store import load_incidents
from diagnosis.incidents import Incident
from ingest.schema import EventBase
from sim.scenario import parse_scenario
from sim.twin import Twin

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
PARTITIONS = 4


@dataclass(frozen=True)
class FaultRun:
    """What one fault run injected and what it found."""

    name: str
    faults_injected: int
    events_published: int
    events_lost: int
    events_duplicated: int
    incidents_expected: int
    incidents_wrong: int
    seconds: float
    notes: str


class FaultRunError(RuntimeError):
    """The run itself could not be carried out (a service did not start, nothing consumed)."""


# ---------------------------------------------------------------------------- the workload


def scenario(size: int = 1, duration_s: float = 240.0) -> dict[str, Any]:
    """Return a twin scenario of `size` blocks of 8 nodes x 8 GPUs, two 32-GPU jobs each.

    Every block has four faults of different kinds: a straggling GPU (60 s), a hung rank
    (90 s), a GPU falling off the bus (150 s) and a NIC port going down (200 s).
    """
    if size < 1:
        raise ValueError("size must be at least 1")
    jobs: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    for b in range(size):
        first, a, z = 8 * b, f"j{2 * b + 1}", f"j{2 * b + 2}"
        jobs += [
            {"id": a, "tp": 8, "dp": 4, "step_time_s": 2.0, "first_node": first},
            {"id": z, "tp": 8, "dp": 4, "step_time_s": 2.0, "first_node": first + 4},
        ]
        faults += [
            {"kind": "straggler", "node": first + 1, "gpu": 3, "at_s": 60, "slowdown": 1.6},
            {"kind": "hang", "job": z, "rank": 13, "at_s": 90},
            {"kind": "xid79", "node": first + 2, "gpu": 2, "at_s": 150},
            {"kind": "nic_down", "node": first + 6, "nic": 1, "at_s": 200},
        ]
    return {
        "seed": 5,
        "cluster": {"nodes": 8 * size, "gpus_per_node": 8, "nodes_per_rack": 4},
        "jobs": jobs,
        "duration_s": duration_s,
        "host_interval_s": 5,
        "faults": [f for f in faults if f["at_s"] < duration_s],
    }


@dataclass(frozen=True)
class Workload:
    """The twin's events in time order, and the incidents an uninterrupted replay gives."""

    events: list[EventBase]
    faults: int
    expected: dict[str, Incident]


def workload(size: int = 1, duration_s: float = 240.0, start: datetime | None = None) -> Workload:
    """Simulate the scenario from `start` (default a day ago: inside every receiver's
    event-time window; the action engine wants recent incidents, so it gets minutes ago).
    """
    data = scenario(size, duration_s)
    if start is None:
        start = (datetime.now(UTC) - timedelta(days=1)).replace(second=0, microsecond=0)
    events: list[EventBase] = []
    Twin(parse_scenario(data), events.append, start=start).run()
    events.sort(key=lambda e: e.ts)
    replay = DiagnosisEngine()
    for event in events:
        replay.feed(event)
    expected = {i.id: i for i in replay.finish()}
    return Workload(events, len(data["faults"]), expected)


def chunks(events: Sequence[EventBase], size: int) -> Iterator[Sequence[EventBase]]:
    """Yield consecutive slices of at most `size` events."""
    for i in range(0, len(events), size):
        yield events[i : i + size]


# ---------------------------------------------------------------------------- the checks


def expected_rows(events: Sequence[EventBase]) -> dict[str, Counter[str]]:
    """Return, per telemetry table, the rows each event id makes (the writer's own mapping)."""
    batch = ColumnBatch()
    for event in events:
        batch.add_event(event, ("", 0, 0))
    out: dict[str, Counter[str]] = {}
    columns = {t.name: t.column_names for t in TELEMETRY_TABLES}
    for table, rows in batch.rows.items():
        at = columns[table].index("event_id")  # rows are in the table's column order
        out[table] = Counter(str(r[at]) for r in rows)
    return out


@dataclass(frozen=True)
class StorageCheck:
    """Events missing or stored more than once, as plain queries (no FINAL) see them."""

    lost: int
    duplicated: int
    unknown_ids: int
    dead_letters: int
    detail: str
    lost_ids: frozenset[str] = frozenset()


def check_storage(store: Store, events: Sequence[EventBase]) -> StorageCheck:
    """Compare the rows stored per (table, event id) with those each published event makes."""
    expected = expected_rows(events)
    published = {e.id for e in events}
    lost: set[str] = set()
    twice: set[str] = set()
    unknown: set[str] = set()
    lines = []
    db = store.database
    for table in TELEMETRY_TABLES:
        want = expected.get(table.name, Counter())
        frame = store.query_df(
            f"SELECT event_id, count() AS n FROM `{db}`.`{table.name}` GROUP BY event_id"
        )
        got = Counter({str(k): int(n) for k, n in frame.itertuples(index=False)})
        for event_id, n in want.items():
            if got.get(event_id, 0) < n:
                lost.add(event_id)
            elif got[event_id] > n:
                twice.add(event_id)
        unknown |= {k for k in got if k not in want and k not in published}
        twice |= {k for k in got if k not in want and k in published}
        rows, distinct = sum(got.values()), len(got)
        if want or got:
            lines.append(
                f"{table.name}: {rows} rows / {distinct} ids stored, "
                f"{sum(want.values())} / {len(want)} published"
            )
    letters = store.query_df(f"SELECT count() AS n FROM `{db}`.dead_letter")
    dead = first_value(letters)
    return StorageCheck(
        len(lost), len(twice), len(unknown), dead, "; ".join(lines), frozenset(lost)
    )


def first_value(frame: pd.DataFrame) -> int:
    """Return the first cell of a one-number query as an int."""
    return int(frame.to_numpy()[0, 0])


def stored_rows(store: Store) -> int:
    """Return the rows of every telemetry table together (no FINAL); -1 if unreadable."""
    union = " + ".join(
        f"(SELECT count() FROM `{store.database}`.`{t.name}`)" for t in TELEMETRY_TABLES
    )
    try:
        return first_value(store.query_df(f"SELECT {union} AS n"))
    except StoreError:
        return -1


def _view(incidents: dict[str, Incident]) -> dict[str, tuple[Any, ...]]:
    def top(i: Incident) -> tuple[Any, ...]:
        s = i.suspects[0] if i.suspects else None
        return (s.component, s.node, s.gpu, s.rank) if s else ()

    return {k: (str(i.category), i.job, top(i)) for k, i in incidents.items()}


def check_incidents(store: Store, expected: dict[str, Incident]) -> tuple[int, str]:
    """Return (incidents wrong, what differs): extra, missing or different from the replay."""
    stored = _view({i.id: i for i in load_incidents(store)})
    want = _view(expected)
    wrong = []
    for key in sorted(set(stored) | set(want)):
        if stored.get(key) != want.get(key):
            wrong.append(f"{key}: stored {stored.get(key)} expected {want.get(key)}")
    return len(wrong), "; ".join(wrong)


def wait_until(condition: Callable[[], bool], timeout_s: float, step_s: float = 0.2) -> bool:
    """Poll until condition() is true; return whether it became true in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return condition()


def wait_stored(store: Store, rows: int, timeout_s: float, stall_s: float = 20.0) -> bool:
    """Wait for `rows` telemetry rows stored, then a little longer (late duplicates show).

    Give up early when nothing more was stored for `stall_s` (rows lost for good).
    """
    deadline = time.monotonic() + timeout_s
    seen, moved = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = stored_rows(store)
        if now >= rows:
            break
        if now != seen:
            seen, moved = now, time.monotonic()
        elif time.monotonic() - moved >= stall_s:
            break
        time.sleep(0.25)
    time.sleep(1.5)
    return stored_rows(store) >= rows
