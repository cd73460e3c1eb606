"""Maintenance windows (silences): while one is active, the engine executes no action it matches.

A window names what it covers with glob matchers (`fnmatch`, case-sensitive) on the node, the
job, the cluster and the incident category; every matcher given must match, an empty matcher
matches anything, and a window with no matcher at all is refused (a fleet-wide freeze is
written `cluster="*"` on purpose). A window is active from `starts_at` (inclusive) to
`ends_at` (exclusive); an expired or deleted window never matches again. Windows live in
ClickHouse (`maintenance_windows`), append-only: a deletion is a new row.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.store import next_seq
from analytics.silence_tables import MAINTENANCE_WINDOWS
from analytics.store import Store

_TYPES = {c.name: c.type for c in MAINTENANCE_WINDOWS.columns}
MATCHERS = ("node", "job", "cluster", "category")
_PATTERN = r"^[A-Za-z0-9_.*?\[\]!:/-]*$"
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # ClickHouse DateTime holds 1970..2105
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


class WindowNotFound(LookupError):
    """No window with that id (or it was already deleted)."""


class WindowSpec(BaseModel):
    """What an operator asks for: matchers, when, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str = Field("", max_length=253, pattern=_PATTERN, description="Node name glob.")
    job: str = Field("", max_length=253, pattern=_PATTERN, description="Job id glob.")
    cluster: str = Field("", max_length=253, pattern=_PATTERN, description="Cluster name glob.")
    category: str = Field(
        "", max_length=100, pattern=_PATTERN, description="Incident category glob (gpu.*)."
    )
    starts_at: AwareDatetime
    ends_at: AwareDatetime
    reason: str = Field(min_length=1, max_length=1000, description="Why (shown in the audit).")

    @field_validator("starts_at", "ends_at")
    @classmethod
    def _whole_seconds(cls, value: datetime) -> datetime:
        if not EARLIEST <= value <= LATEST:
            raise ValueError(f"must be between {EARLIEST.year} and {LATEST.year}")
        return value.replace(microsecond=0).astimezone(UTC)  # what the store keeps

    @model_validator(mode="after")
    def _sane(self) -> WindowSpec:
        if not any(getattr(self, m) for m in MATCHERS):
            raise ValueError(
                "a maintenance window needs at least one matcher (node, job, cluster or "
                "category); use cluster='*' for a fleet-wide freeze"
            )
        if self.ends_at <= self.starts_at:
            raise ValueError("ends_at must be after starts_at")
        return self


class MaintenanceWindow(WindowSpec):
    """A stored window: the spec plus its id, author and whether it was deleted."""

    id: str
    author: str = Field(min_length=1, max_length=200)
    created_at: AwareDatetime
    deleted: bool = False
    deleted_by: str = ""

    def active(self, now: datetime) -> bool:
        """Return whether the window covers a moment (and was not deleted)."""
        return not self.deleted and self.starts_at <= now < self.ends_at


@dataclass(frozen=True)
class Subject:
    """What an action is about, as the window matchers see it."""

    nodes: tuple[str, ...]
    job: str
    cluster: str
    category: str


def matches(window: WindowSpec, subject: Subject) -> bool:
    """Return whether every matcher of a window matches the subject (any of its nodes)."""
    if window.node and not any(fnmatchcase(n, window.node) for n in subject.nodes):
        return False
    if window.job and not fnmatchcase(subject.job, window.job):
        return False
    if window.cluster and not fnmatchcase(subject.cluster, window.cluster):
        return False
    return not (window.category and not fnmatchcase(subject.category, window.category))


def first_match(
    windows: Sequence[MaintenanceWindow], subject: Subject, now: datetime
) -> MaintenanceWindow | None:
    """Return the first active window that matches, or None."""
    for window in windows:
        if window.active(now) and matches(window, subject):
            return window
    return None


# ---------------------------------------------------------------------- the store


def _at(moment: datetime) -> int:
    return int(moment.astimezone(UTC).timestamp())


def _row(window: MaintenanceWindow, now: datetime) -> dict[str, list[Any]]:
    now = now.astimezone(UTC)
    row: dict[str, Any] = {
        "id": window.id,
        "seq": next_seq(),
        "at": _at(now),
        "at_us": now.microsecond,
        "starts_at": _at(window.starts_at),
        "ends_at": _at(window.ends_at),
        **{m: getattr(window, m) for m in MATCHERS},
        "author": window.author,
        "reason": window.reason,
        "deleted_by": window.deleted_by,
        "deleted": int(window.deleted),
    }
    return {k: [v] for k, v in row.items()}


def create_window(
    store: Store, spec: WindowSpec, author: str, now: datetime | None = None
) -> MaintenanceWindow:
    """Store a new window; return it with its id."""
    created = now or datetime.now(UTC)
    window = MaintenanceWindow(
        **spec.model_dump(), id="mw-" + uuid.uuid4().hex[:16], author=author, created_at=created
    )
    store.insert(MAINTENANCE_WINDOWS.name, _row(window, created), _TYPES)
    return window


def delete_window(
    store: Store, window_id: str, actor: str, now: datetime | None = None
) -> MaintenanceWindow:
    """Mark a window deleted (it stops matching at once); raise WindowNotFound."""
    found = [w for w in list_windows(store, include_deleted=True) if w.id == window_id]
    if not found or found[0].deleted:
        raise WindowNotFound(f"no maintenance window {window_id!r}")
    gone = found[0].model_copy(update={"deleted": True, "deleted_by": actor})
    store.insert(MAINTENANCE_WINDOWS.name, _row(gone, now or datetime.now(UTC)), _TYPES)
    return gone


def list_windows(
    store: Store, active_at: datetime | None = None, include_deleted: bool = False
) -> list[MaintenanceWindow]:
    """Return windows at their latest version, newest first; filtered on the server.

    `active_at`: only those covering that moment (deleted ones never do).
    """
    having = [] if include_deleted or active_at is not None else ["d = 0"]
    params: dict[str, Any] = {}
    if active_at is not None:
        having += ["d = 0", "s <= %(now)s", "e > %(now)s"]
        params["now"] = _at(active_at)
    clause = f"HAVING {' AND '.join(having)} " if having else ""
    frame = store.query_df(
        "SELECT id, toUInt32(argMax(starts_at, seq)) AS s, toUInt32(argMax(ends_at, seq)) AS e, "
        "argMax(node, seq), argMax(job, seq), argMax(cluster, seq), argMax(category, seq), "
        "argMax(author, seq), argMax(reason, seq), argMax(deleted, seq) AS d, "
        "argMax(deleted_by, seq), toUInt32(min(at)) AS c "
        f"FROM `{store.database}`.`{MAINTENANCE_WINDOWS.name}` GROUP BY id {clause}"
        "ORDER BY c DESC, id",
        params,
    )
    found = []
    for row in frame.itertuples(index=False):
        wid, s, e, node, job, cluster, category, author, reason, d, deleted_by, c = (
            _text(v) for v in row
        )
        found.append(
            MaintenanceWindow(
                id=wid,
                starts_at=datetime.fromtimestamp(int(s), UTC),
                ends_at=datetime.fromtimestamp(int(e), UTC),
                node=node,
                job=job,
                cluster=cluster,
                category=category,
                author=author,
                reason=reason,
                deleted=bool(int(d)),
                deleted_by=deleted_by,
                created_at=datetime.fromtimestamp(int(c), UTC),
            )
        )
    return found


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
