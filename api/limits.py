"""The first check of every request: its size, and its credentials before its body is read.

Before any router, parser or other middleware sees a request:

- a path with its query longer than `max_url_bytes` is a 414 problem;
- a declared `Content-Length` over `max_body_bytes` is a 413 problem, sent at once: not a
  byte of the body is read, and the connection is closed after the answer;
- a request that carries a body (`Content-Length` above 0, or `Transfer-Encoding`) without a
  valid bearer token is a 401 problem, also before its body is read. An anonymous client
  thus makes the API hold at most what the server buffers unasked (uvicorn: 64 KiB);
- a body that streams without a length (chunked) is counted as it arrives and cut off with
  a 413 once it passes `max_body_bytes`: at most the limit plus one chunk is ever held.

The refusals name no route; /metrics counts them under route="refused". A body is only ever
read by the routers, after this check, so `100-continue` clients are refused before sending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from analytics.store import StoreError
from api import problems
from api.auth import bearer_token
from api.context import ApiContext, authenticate

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]
CLOSE = {"Connection": "close"}  # an unread body is never parsed as the next request


class RequestLimits:
    """ASGI middleware enforcing the context's URL and body limits and auth before bodies."""

    def __init__(self, app: Asgi, context: ApiContext) -> None:
        self.app = app
        self.context = context

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = await self._refusal(scope)
        if refused is not None:
            await refused(scope, receive, send)
            self.context.count("refused", refused.status_code)
            return
        await self.app(scope, self._counted(receive), send)

    async def _refusal(self, scope: Scope) -> Response | None:
        """Return the answer to a request refused before its body is read, else None."""
        limit = self.context.max_body_bytes
        path = scope.get("raw_path") or scope["path"].encode()
        if len(path) + len(scope["query_string"]) > self.context.max_url_bytes:
            detail = f"the path and query are over {self.context.max_url_bytes} bytes"
            return problems.problem(414, problems.title(414), detail)
        length, streamed, authorization = b"", False, ""
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                streamed = True
            elif name == b"authorization":
                authorization = value.decode("latin-1")
        declared = int(length) if length.isdigit() and len(length) < 20 else None
        if length and declared is None:
            return _closing(400, f"bad Content-Length {length[:40]!r}")
        if declared is not None and declared > limit:
            return _closing(413, f"the body is {declared} bytes; at most {limit} are accepted")
        if streamed or declared:
            return await self._unauthenticated(authorization)
        return None

    async def _unauthenticated(self, authorization: str) -> Response | None:
        """Return a 401 (or the store's 503) unless the header names a valid token."""
        token = bearer_token(authorization)
        if token is not None and self.context.tokens.known(token) is not None:
            return None  # verified recently: no thread hop
        try:
            await run_in_threadpool(authenticate, self.context.tokens, authorization)
        except HTTPException as exc:
            response = problems.from_http(exc)
            response.headers.update(CLOSE)
            return response
        except StoreError as exc:
            response = problems.from_store(None, exc)
            response.headers.update(CLOSE)
            return response
        return None

    def _counted(self, receive: Receive) -> Receive:
        """Return `receive` cutting the body off with a 413 once it passes the limit."""
        limit = self.context.max_body_bytes
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # the routers' handler turns it into a problem
                    raise HTTPException(413, f"the body is over {limit} bytes", CLOSE)
            return message

        return counted


def _closing(status: int, detail: str) -> Response:
    response = problems.problem(status, problems.title(status), detail)
    response.headers.update(CLOSE)
    return response
