"""Outermost ASGI middleware: each HTTP request's latency by route template and status.

The route is FastAPI's template (`/v1/incidents/{incident_id}`), never the raw path, so
the label stays bounded; requests answered before routing (the hot path's repeated GETs,
refusals of oversized requests) are labelled with their path when it is one of
`known_paths`, else `unmatched`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]
RequestObserver = Callable[[str, str, int, float], None]
"""Called with (method, route template, status, seconds) once a response is complete."""

UNMATCHED = "unmatched"


class RequestTiming:
    """Time every HTTP request and report it to `observe`."""

    def __init__(self, app: Asgi, observe: RequestObserver, known_paths: Iterable[str]) -> None:
        self.app, self.observe, self.known_paths = app, observe, frozenset(known_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]  # an exception before the response starts is a 500 to the client

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self.observe(
                scope["method"], self._route(scope), status[0], time.perf_counter() - started
            )

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        template = getattr(route, "path", None)
        if isinstance(template, str):
            return template
        return scope["path"] if scope["path"] in self.known_paths else UNMATCHED
