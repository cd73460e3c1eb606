"""Errors as RFC 9457 problem details (`application/problem+json`), never a bare 500."""

from __future__ import annotations

import logging

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

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


def install(app: FastAPI) -> None:
    """Map errors to problem details."""

    @app.exception_handler(HTTPException)
    async def http_error(_req: Request, exc: HTTPException) -> JSONResponse:
        response = problem(exc.status_code, _title(exc.status_code), str(exc.detail))
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response

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

    @app.exception_handler(StoreUnavailable)
    async def store_down(req: Request, exc: StoreUnavailable) -> JSONResponse:
        log.warning("store unavailable on %s %s: %s", req.method, req.url.path, exc)
        return problem(503, "Store unavailable", "ClickHouse did not answer; retry shortly")

    @app.exception_handler(StoreError)
    async def store_failed(req: Request, exc: StoreError) -> JSONResponse:
        log.error("store query failed on %s %s: %s", req.method, req.url.path, exc)
        return problem(500, "Store query failed", "the query failed; this is a TrainGuard bug")


def _title(status: int) -> str:
    return {
        400: "Bad request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        409: "Conflict",
        422: "Invalid request",
    }.get(status, "Error")
