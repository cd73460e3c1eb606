"""Opaque cursors for keyset pagination: the position after the last row of a page.

A cursor comes from the client, so it is decoded strictly: base64 of a JSON array whose
items have exactly the expected types (`true` is not an integer, `1.0` is not one either),
integers in [0, 2**63 - 1] (every position is a timestamp, a count or a sequence number),
strings of at most `MAX_TEXT` characters that UTF-8 can encode (no lone surrogates), and at
most `MAX_CURSOR` characters in all. Anything else is a 400 problem, never a query.
"""

from __future__ import annotations

import base64
import binascii
import json

from fastapi import HTTPException

MAX_CURSOR = 1024  # characters of an encoded cursor
MAX_TEXT = 256  # characters of a string in a position (node names, incident ids)
MAX_INT = 2**63 - 1


def encode_cursor(position: tuple[object, ...] | None) -> str | None:
    """Return the cursor of a position (None: no more pages)."""
    if position is None:
        return None
    raw = json.dumps(list(position), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, types: tuple[type, ...]) -> tuple[object, ...] | None:
    """Return the position a cursor names; anything but a position of `types` is a 400."""
    if not cursor:
        return None
    try:
        values = _values(cursor)
        if len(values) != len(types):
            raise ValueError(f"{len(values)} values, expected {len(types)}")
        for value, expected in zip(values, types, strict=True):
            _check(value, expected)
    except (ValueError, RecursionError) as exc:
        raise HTTPException(400, "malformed cursor: pass back next_cursor unchanged") from exc
    return tuple(values)


def decode_seq_cursor(cursor: str | None) -> int | None:
    """Return the sequence number a one-number cursor names (None: first page)."""
    position = decode_cursor(cursor, (int,))
    return None if position is None else int(position[0])  # type: ignore[call-overload]


def _values(cursor: str) -> list[object]:
    if len(cursor) > MAX_CURSOR or not cursor.isascii():
        raise ValueError("cursor too long or not ASCII")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except binascii.Error as exc:
        raise ValueError("not base64") from exc
    values = json.loads(raw, parse_constant=_no_constant)  # UnicodeDecodeError: a ValueError
    if type(values) is not list:
        raise ValueError("not a JSON array")
    return values


def _check(value: object, expected: type) -> None:
    """Raise ValueError unless `value` is exactly of type `expected` and within bounds."""
    if type(value) is not expected:  # exact: bool is a subclass of int
        raise ValueError(f"{type(value).__name__} where {expected.__name__} belongs")
    if isinstance(value, int) and not 0 <= value <= MAX_INT:
        raise ValueError("integer out of range")
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ValueError("string too long")
        value.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a position")
