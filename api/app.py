"""The FastAPI application: versioned routers over the services, problem-details errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api import problems
from api.auth import Role
from api.context import ApiContext
from api.hot import HotPath
from api.limits import RequestLimits
from api.routers import (
    actions,
    fleet,
    fleet_view,
    incidents,
    jobs,
    scheduler,
    silences,
    system,
    webhooks,
)
from api.timing import RequestObserver, RequestTiming

API_VERSION = "1.0.0"
# the lists answered from their rendered bytes when asked again (api/hot.py), with their role
HOT_ROUTES = {"/v1/incidents": Role.VIEWER, "/v1/gpus": Role.VIEWER}


def create_app(context: ApiContext, observe: RequestObserver | None = None) -> FastAPI:
    """Return the app serving `context`; `observe` (metrics) times every request."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        context.snapshots.start()  # rebuilds hot lists before they expire
        try:
            yield
        finally:
            context.snapshots.stop()

    app = FastAPI(
        title="TrainGuard",
        version=API_VERSION,
        description=(
            "On-call API of TrainGuard: incidents with their suspects and evidence, jobs, "
            "fleet health. Authenticate with `Authorization: Bearer <token>` "
            "(roles: viewer, operator, admin)."
        ),
        lifespan=lifespan,
    )
    app.state.context = context
    problems.install(app)
    for module in (
        system,
        incidents,
        jobs,
        fleet,
        fleet_view,
        actions,
        webhooks,
        scheduler,
        silences,
    ):
        app.include_router(module.router)
    app.add_middleware(HotPath, context=context, routes=HOT_ROUTES)
    app.add_middleware(RequestLimits, context=context)  # runs before those above (api/limits.py)
    if observe is not None:  # outermost: refusals and hot-path answers are timed too
        app.add_middleware(RequestTiming, observe=observe, known_paths=HOT_ROUTES)
    return app
