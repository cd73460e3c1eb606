"""The FastAPI application: versioned routers over the services, problem-details errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response

from api import problems
from api.context import ApiContext
from api.routers import actions, fleet, incidents, jobs, scheduler, system, webhooks

API_VERSION = "1.0.0"


def create_app(context: ApiContext) -> FastAPI:
    """Return the app serving `context`."""
    app = FastAPI(
        title="TrainGuard",
        version=API_VERSION,
        description=(
            "On-call API of TrainGuard: incidents with their suspects and evidence, jobs, "
            "fleet health. Authenticate with `Authorization: Bearer <token>` "
            "(roles: viewer, operator, admin)."
        ),
    )
    app.state.context = context
    problems.install(app)
    for module in (system, incidents, jobs, fleet, actions, webhooks, scheduler):
        app.include_router(module.router)

    @app.middleware("http")
    async def count(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        route = request.scope.get("route")
        context.count(getattr(route, "path", "unmatched"), response.status_code)
        return response

    return app
