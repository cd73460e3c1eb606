"""The scheduler's live state: pools, loans, warm standbys, the queue."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from api.context import Ctx, Viewer
from api.models import ERRORS
from scheduler.service import SchedulerState

router = APIRouter(responses=ERRORS, prefix="/v1/scheduler", tags=["scheduler"])


@router.get("/state", response_model=SchedulerState)
def state(ctx: Ctx, _who: Viewer) -> SchedulerState:
    """Return the scheduler's state: live when it runs in this process, else the latest stored."""
    found = ctx.scheduler_state()
    if found is None:
        raise HTTPException(503, "no scheduler in this API process and none has stored its state")
    return found
