"""Liveness, readiness (ClickHouse and Kafka reachable) and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse

from api.auth import Principal
from api.context import Ctx, Viewer
from api.models import ERRORS

router = APIRouter(tags=["system"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Say the process is up."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "A dependency is down."}})
def readyz(ctx: Ctx) -> JSONResponse:
    """Check every dependency; 503 naming the ones that are down."""
    results = {name: check() for name, check in ctx.checks.items()}
    down = {name: why for name, why in results.items() if why is not None}
    body = {
        "status": "down" if down else "ready",
        "checks": {k: v or "ok" for k, v in results.items()},
    }
    return JSONResponse(body, status_code=503 if down else 200)


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(ctx: Ctx) -> str:
    """Return request counters in the Prometheus text format."""
    lines = [
        "# HELP trainguard_api_requests_total API responses by route and status.",
        "# TYPE trainguard_api_requests_total counter",
    ]
    for (route, status), n in sorted(ctx.requests.items()):
        lines.append(f'trainguard_api_requests_total{{route="{route}",status="{status}"}} {n}')
    return "\n".join(lines) + "\n"


@router.get("/v1/me", response_model=Principal, responses=ERRORS, tags=["auth"])
def me(who: Viewer) -> Principal:
    """Return the caller's token name and role (what the console may show them)."""
    return who
