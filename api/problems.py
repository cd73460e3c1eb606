"""Errors as RFC 9457 problem details (`application/problem+json`), never a bare 500.

Every error the API sends is a problem: the routers' own, routing's 404 and 405, validation
errors, store failures, an unhandled exception (500, logged), the request limits in front of
the routers (api/limits.py) and the HTTP server's refusals (api/server.py).
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from analytics.store import StoreError, StoreUnavailable
from diagnosis.incident_store import IncidentNotFound
from diagnosis.lifecycle import LifecycleError

log = logging.getLogger(__name__)
PROBLEM = "application/problem+json"


class NotFound(LookupError):
    """A named resource does not exist."""


def problem(status: int, title: str, detail: str, **extra: object) -> JSONResponse:
    """Return a problem-details response."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM)


def problem_bytes(status: int, detail: str) -> bytes:
    """Return the body of a problem (for senders below the app: the HTTP server)."""
    body = {"type": "about:blank", "title": title(status), "status": status, "detail": detail}
    return json.dumps(body, separators=(",", ":")).encode()


def from_http(exc: HTTPException) -> JSONResponse:
    """Return the problem an HTTPException (FastAPI's, or Starlette's routing 404/405) says."""
    response = problem(exc.status_code, title(exc.status_code), str(exc.detail))
    for key, value in (exc.headers or {}).items():
        response.headers[key] = value
    return response


def from_store(req: Request | None, exc: StoreError) -> JSONResponse:
    """Return the problem a store failure is (503 when ClickHouse did not answer), logged."""
    where = f"{req.method} {req.url.path}" if req is not None else "a request"
    if isinstance(exc, StoreUnavailable):
        log.warning("store unavailable on %s: %s", where, exc)
        return problem(503, "Store unavailable", "ClickHouse did not answer; retry shortly")
    log.error("store query failed on %s: %s", where, exc)
    return problem(500, "Store query failed", "the query failed; this is a TrainGuard bug")


def install(app: FastAPI) -> None:
    """Map errors to problem details."""

    @app.exception_handler(HTTPException)
    async def http_error(_req: Request, exc: HTTPException) -> JSONResponse:
        return from_http(exc)

    @app.exception_handler(Exception)
    async def unhandled(_req: Request, _exc: Exception) -> JSONResponse:
        # Starlette's outermost handler; it re-raises afterwards, so the server logs the trace
        return problem(500, "Internal error", "the request failed; this is a TrainGuard bug")

    @app.exception_handler(RequestValidationError)
    async def invalid(_req: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"where": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg", "")}
            for e in exc.errors()
        ]
        detail = "; ".join(f"{e['where']}: {e['message']}" for e in errors)
        return problem(422, "Invalid request", detail, errors=errors)

    @app.exception_handler(IncidentNotFound)
    async def no_incident(_req: Request, exc: IncidentNotFound) -> JSONResponse:
        return problem(404, "Not found", str(exc))

    @app.exception_handler(NotFound)
    async def not_found(_req: Request, exc: NotFound) -> JSONResponse:
        return problem(404, "Not found", str(exc))

    @app.exception_handler(LifecycleError)
    async def conflict(_req: Request, exc: LifecycleError) -> JSONResponse:
        return problem(409, "Conflict", str(exc))

    @app.exception_handler(StoreError)
    async def store_failed(req: Request, exc: StoreError) -> JSONResponse:
        return from_store(req, exc)


def title(status: int) -> str:
    """Return the problem title of a status."""
    return {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        409: "Conflict",
        413: "Content too large",
        414: "URI too long",
        422: "Invalid request",
        431: "Request header fields too large",
        500: "Internal error",
        503: "Service unavailable",
    }.get(status, "Error")
