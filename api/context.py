"""What the API's routes depend on, built once by the composition root and passed in."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, TypeVar

from fastapi import Depends, HTTPException, Request, Response
from pydantic import BaseModel

from actions.engine import ActionEngine
from actions.webhooks.delivery import Deliverer
from analytics.api_tables import API_AUDIT
from analytics.store import Store
from api.auth import Principal, Role, TokenBook, bearer_token
from api.cache import Key, Rendered, SnapshotCache
from api.generation import Generation
from diagnosis.incident_store import IncidentFilter, query_incidents
from diagnosis.incidents import Incident
from diagnosis.model import IncidentStatus
from scheduler.service import Scheduler, SchedulerState
from scheduler.state_store import latest_snapshot

_AUDIT_TYPES = {c.name: c.type for c in API_AUDIT.columns}
T = TypeVar("T")
Check = Callable[[], str | None]  # returns None when healthy, else what is wrong
# the raw (path, query bytes) of the GET being served, when the fast path may answer it next time
HOT_REQUEST: ContextVar[Key | None] = ContextVar("HOT_REQUEST", default=None)


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
    max_body_bytes: int = 1 << 20  # larger request bodies get a 413 (TG_API_MAX_BODY_BYTES)
    max_url_bytes: int = 16 << 10  # longer paths with their query get a 414 (TG_API_MAX_URL_BYTES)
    risk_horizon_h: int = 48  # the failure-risk horizon /v1/gpus shows (TG_API_RISK_HORIZON_H)
    generation: Generation = field(default_factory=Generation)  # shared by the workers
    requests: dict[tuple[str, int], int] = field(default_factory=dict)
    snapshots: SnapshotCache = field(init=False)
    _parsed: dict[str, Incident] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.snapshots = SnapshotCache(self.cache_s, self.generation)

    def cached(self, key: Key, compute: Callable[[], T]) -> T:
        """Return a recent value of an expensive read (fleet snapshots), computing if stale.

        `key` is a tuple of the typed values the read depends on (api/cache.py: `Key`).

        Values are at most `cache_s` old, dropped by any write, rebuilt in the background
        before they expire (api/cache.py).
        """
        return self.snapshots.get(key, compute)

    def cached_json(self, key: Key, build: Callable[[], BaseModel]) -> Response:
        """Return a hot list as JSON rendered once per cache period (no re-serialization).

        The raw request (path and query) is remembered as served by `key`, so that the next
        identical request is answered from the rendered bytes before routing (api/hot.py).
        """
        json_key = ("json", *key)
        rendered = self.cached(json_key, lambda: Rendered.of(build().model_dump_json().encode()))
        raw = HOT_REQUEST.get()
        if raw is not None:
            self.snapshots.alias(raw, json_key)
        return Response(
            content=rendered.body, media_type="application/json", headers={"etag": rendered.etag}
        )

    def live_incidents(self) -> list[Incident]:
        """Return the open and mitigating incidents (a snapshot at most `cache_s` old)."""

        def read() -> list[Incident]:
            live: list[Incident] = []
            for status in (IncidentStatus.OPEN, IncidentStatus.MITIGATING):
                after = None
                while True:  # every one of them, 5,000 a page
                    page, after = query_incidents(
                        self.store,
                        IncidentFilter(status=status),
                        after,
                        limit=5000,
                        parse=self._parse,
                    )
                    live += page
                    if after is None:
                        break
            return live

        return self.cached(("live-incidents",), read)

    def _parse(self, payload: str) -> Incident:
        """Return the incident a payload holds, parsing each distinct payload once.

        The live incidents are re-read every cache period and mostly unchanged; the parsed
        objects are shared between reads, so callers of `live_incidents` must not mutate them.
        """
        inc = self._parsed.get(payload)
        if inc is None:
            if len(self._parsed) >= 50_000:
                self._parsed.clear()
            inc = self._parsed[payload] = Incident.model_validate_json(payload)
        return inc

    def scheduler_state(self) -> SchedulerState | None:
        """Return the in-process scheduler's snapshot, else the newest stored one (cached)."""
        if self.scheduler is not None:
            return self.scheduler.snapshot()
        return self.cached(("scheduler-state",), lambda: latest_snapshot(self.store))

    def invalidate(self) -> None:
        """Forget cached reads in every worker (after a write, so the writer sees it at once)."""
        self.snapshots.invalidate()

    def count(self, route: str, status: int) -> None:
        """Count one response for /metrics."""
        with self._lock:
            self.requests[(route, status)] = self.requests.get((route, status), 0) + 1

    def audit(
        self, who: Principal, method: str, path: str, target: str, outcome: int, detail: str
    ) -> None:
        """Record a write with its caller; then drop every cached read."""
        now = datetime.now(UTC)
        try:
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
        finally:
            self.invalidate()  # after the write, so no rebuild can cache what came before it


def context(request: Request) -> ApiContext:
    """Return the app's context."""
    ctx: ApiContext = request.app.state.context
    return ctx


Ctx = Annotated[ApiContext, Depends(context)]


def authenticate(tokens: TokenBook, authorization: str) -> Principal:
    """Return who an Authorization header value names; else raise a 401 HTTPException."""
    token = bearer_token(authorization)
    if token is None:
        raise HTTPException(
            401, "send an API token: Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"}
        )
    who = tokens.verify(token)
    if who is None:
        raise HTTPException(401, "unknown or revoked token", {"WWW-Authenticate": "Bearer"})
    return who


def _principal(request: Request, ctx: Ctx) -> Principal:
    return authenticate(ctx.tokens, request.headers.get("authorization", ""))


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
