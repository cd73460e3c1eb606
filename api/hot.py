"""The request path in front of the routers: counts responses, answers repeated hot GETs.

A hot list (incident pages, GPU health) is rendered once per cache period. When a GET's
exact path and query were served before from a rendered body that is still fresh, and its
bearer token is known valid for the route's role (verified within the token cache period),
the body is sent straight away: no routing, no
parameter parsing, no thread hop. Anything else (first request, a write since, a bad or
missing token, a miss) goes through the routers, which answer it and remember it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from api.auth import Role, bearer_token
from api.cache import Key, Rendered
from api.context import HOT_REQUEST, ApiContext

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]
_JSON = b"application/json"


class HotPath:
    """ASGI middleware: the fast path for `routes` (path -> role the route requires)."""

    def __init__(self, app: Asgi, context: ApiContext, routes: Mapping[str, Role]) -> None:
        self.app = app
        self.context = context
        self.routes = dict(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        raw: Key | None = None
        role = self.routes.get(path)
        if role is not None and scope["method"] == "GET":
            raw = (path, bytes(scope["query_string"]))
            rendered = self.context.snapshots.fresh(raw)
            if isinstance(rendered, Rendered) and self._admits(scope, role):
                await self._send(scope, send, rendered)
                return
        await self._route(scope, receive, send, raw)

    def _admits(self, scope: Scope, role: Role) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                token = bearer_token(value.decode("latin-1"))
                who = self.context.tokens.known(token) if token else None  # a miss: routers
                return who is not None and who.role.level >= role.level
        return False

    async def _send(self, scope: Scope, send: Send, rendered: Rendered) -> None:
        etag = rendered.etag.encode()
        status, body = 200, rendered.body
        for name, value in scope["headers"]:
            if name == b"if-none-match" and value == etag:
                status, body = 304, b""
        headers = [(b"etag", etag), (b"content-length", str(len(body)).encode())]
        if status == 200:
            headers.append((b"content-type", _JSON))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        self.context.count(scope["path"], status)

    async def _route(self, scope: Scope, receive: Receive, send: Send, raw: Key | None) -> None:
        status = 500

        async def counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        token = HOT_REQUEST.set(raw)
        try:
            await self.app(scope, receive, counted)
        finally:
            HOT_REQUEST.reset(token)
            route = scope.get("route")
            self.context.count(getattr(route, "path", "unmatched"), status)
