"""Opaque cursors for keyset pagination: the position after the last row of a page."""

from __future__ import annotations

import base64
import json

from fastapi import HTTPException


def encode_cursor(position: tuple[object, ...] | None) -> str | None:
    """Return the cursor of a position (None: no more pages)."""
    if position is None:
        return None
    raw = json.dumps(list(position), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, types: tuple[type, ...]) -> tuple[object, ...] | None:
    """Return the position a cursor names; a malformed cursor is a 400."""
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
        if not isinstance(values, list) or len(values) != len(types):
            raise ValueError("wrong length")
        if not all(isinstance(v, t) for v, t in zip(values, types, strict=True)):
            raise ValueError("wrong shape")
    except ValueError as exc:
        raise HTTPException(400, "malformed cursor: pass back next_cursor unchanged") from exc
    return tuple(values)


def decode_seq_cursor(cursor: str | None) -> int | None:
    """Return the sequence number a one-number cursor names (None: first page)."""
    position = decode_cursor(cursor, (int,))
    return None if position is None else int(position[0])  # type: ignore[call-overload]
