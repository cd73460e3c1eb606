"""What the API's routes depend on, built once by the composition root and passed in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, TypeVar, cast

from fastapi import Depends, HTTPException, Request, Response
from pydantic import BaseModel

from actions.engine import ActionEngine
from actions.webhooks.delivery import Deliverer
from analytics.api_tables import API_AUDIT
from analytics.store import Store
from api.auth import Principal, Role, TokenBook
from diagnosis.incident_store import IncidentFilter, query_incidents
from diagnosis.incidents import Incident
from diagnosis.model import IncidentStatus
from scheduler.service import Scheduler, SchedulerState
from scheduler.state_store import latest_snapshot

_AUDIT_TYPES = {c.name: c.type for c in API_AUDIT.columns}
T = TypeVar("T")
Check = Callable[[], str | None]  # returns None when healthy, else what is wrong


@dataclass
class ApiContext:
    """The store, the token book, readiness checks and request counters."""

    store: Store
    tokens: TokenBook
    checks: dict[str, Check] = field(default_factory=dict)
    engine: ActionEngine | None = None  # approvals, dry runs and the breaker need it
    deliverer: Deliverer | None = None  # webhook tests and re-deliveries
    scheduler: Scheduler | None = None
    cache_s: float = 5.0
    requests: dict[tuple[str, int], int] = field(default_factory=dict)
    _cache: dict[str, tuple[float, object]] = field(default_factory=dict)
    _gates: dict[str, threading.Lock] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cached(self, key: str, compute: Callable[[], T]) -> T:
        """Return a recent value of an expensive read (fleet snapshots), computing if stale.

        One caller computes a stale key; while it does, the others get the stale value (or,
        when there is none yet, wait for the result), so a burst runs the query once and no
        request waits on a refresh it does not need.
        """
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
            hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < self.cache_s:
            return cast(T, hit[1])
        if hit is not None and not gate.acquire(blocking=False):
            return cast(T, hit[1])  # stale while another caller refreshes it
        if hit is None:
            gate.acquire()
        try:
            with self._lock:
                hit = self._cache.get(key)
            if hit is not None and time.monotonic() - hit[0] < self.cache_s:
                return cast(T, hit[1])  # refreshed while this caller waited
            value = compute()
            with self._lock:
                self._cache[key] = (time.monotonic(), value)
            return value
        finally:
            gate.release()

    def cached_json(self, key: str, build: Callable[[], BaseModel]) -> Response:
        """Return a hot list as JSON rendered once per cache period (no re-serialization)."""
        body = self.cached(f"json:{key}", lambda: build().model_dump_json().encode())
        return Response(content=body, media_type="application/json")

    def live_incidents(self) -> list[Incident]:
        """Return the open and mitigating incidents (a snapshot at most `cache_s` old)."""

        def read() -> list[Incident]:
            live: list[Incident] = []
            for status in (IncidentStatus.OPEN, IncidentStatus.MITIGATING):
                page, _ = query_incidents(self.store, IncidentFilter(status=status), limit=5000)
                live += page
            return live

        return self.cached("live-incidents", read)

    def scheduler_state(self) -> SchedulerState | None:
        """Return the in-process scheduler's snapshot, else the newest stored one (cached)."""
        if self.scheduler is not None:
            return self.scheduler.snapshot()
        return self.cached("scheduler-state", lambda: latest_snapshot(self.store))

    def invalidate(self) -> None:
        """Forget cached reads (after a write, so the writer sees its change at once)."""
        with self._lock:
            self._cache.clear()

    def count(self, route: str, status: int) -> None:
        """Count one response for /metrics."""
        with self._lock:
            self.requests[(route, status)] = self.requests.get((route, status), 0) + 1

    def audit(
        self, who: Principal, method: str, path: str, target: str, outcome: int, detail: str
    ) -> None:
        """Record a write with its caller."""
        self.invalidate()
        now = datetime.now(UTC)
        self.store.insert(
            API_AUDIT.name,
            {
                "ts": [int(now.timestamp())],
                "ts_us": [now.microsecond],
                "actor": [who.name],
                "role": [who.role.value],
                "method": [method],
                "path": [path],
                "target": [target],
                "outcome": [outcome],
                "detail": [detail[:2000]],
            },
            _AUDIT_TYPES,
        )


def context(request: Request) -> ApiContext:
    """Return the app's context."""
    ctx: ApiContext = request.app.state.context
    return ctx


Ctx = Annotated[ApiContext, Depends(context)]


def _principal(request: Request, ctx: Ctx) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(
            401, "send an API token: Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"}
        )
    who = ctx.tokens.verify(token.strip())
    if who is None:
        raise HTTPException(401, "unknown or revoked token", {"WWW-Authenticate": "Bearer"})
    return who


def require(role: Role) -> Callable[..., Principal]:
    """Return a dependency admitting callers with at least this role."""

    def check(who: Annotated[Principal, Depends(_principal)]) -> Principal:
        if who.role.level < role.level:
            raise HTTPException(403, f"needs the {role.value} role; {who.name} is {who.role.value}")
        return who

    return check


Viewer = Annotated[Principal, Depends(require(Role.VIEWER))]
Operator = Annotated[Principal, Depends(require(Role.OPERATOR))]
Admin = Annotated[Principal, Depends(require(Role.ADMIN))]
