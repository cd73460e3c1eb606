"""Maintenance windows (silences): while one is active the action engine executes nothing it
matches (actions/silences.py); viewers list them, operators create and delete them."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Path, Query

from actions.silences import (
    MaintenanceWindow,
    WindowNotFound,
    WindowSpec,
    create_window,
    delete_window,
    list_windows,
)
from api.context import Ctx, Operator, Viewer
from api.models import ERRORS
from api.problems import NotFound

router = APIRouter(responses=ERRORS, prefix="/v1/silences", tags=["silences"])


@router.get("", response_model=list[MaintenanceWindow])
def list_silences(
    ctx: Ctx,
    _who: Viewer,
    include_expired: bool = Query(False, description="Also windows that ended or were deleted."),
) -> list[MaintenanceWindow]:
    """List maintenance windows, newest first (by default those not over yet)."""
    if include_expired:
        return list_windows(ctx.store, include_deleted=True)
    now = datetime.now(UTC)
    return [w for w in list_windows(ctx.store) if w.ends_at > now]


@router.post("", response_model=MaintenanceWindow, status_code=201)
def create_silence(body: WindowSpec, ctx: Ctx, who: Operator) -> MaintenanceWindow:
    """Create a window; the caller is its author."""
    window = create_window(ctx.store, body, author=who.name)
    ctx.audit(who, "POST", "silences", window.id, 201, body.reason)
    return window


@router.delete("/{window_id}", response_model=MaintenanceWindow)
def delete_silence(
    ctx: Ctx, who: Operator, window_id: str = Path(pattern=r"^mw-[0-9a-f]{16}$")
) -> MaintenanceWindow:
    """Delete a window: it stops matching at once (kept in the history)."""
    try:
        window = delete_window(ctx.store, window_id, actor=who.name)
    except WindowNotFound as exc:
        raise NotFound(str(exc)) from exc
    ctx.audit(who, "DELETE", "silences", window_id, 200, window.reason)
    return window
