"""ClickHouse values to JSON-safe ones (JSON has no NaN; pandas gives NaN for NULL)."""

from __future__ import annotations

import math


def finite(value: object) -> float | None:
    """Return a finite float, or None for missing/NaN/inf."""
    if value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def whole(value: object) -> int | None:
    """Return an int, or None for missing/NaN."""
    number = finite(value)
    return None if number is None else int(number)
