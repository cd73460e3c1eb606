"""HMAC-SHA256 signatures over timestamp and body: `X-TrainGuard-Signature: t=<unix>,v1=<hex>`.

Receivers call `verify_signature`; a stale timestamp is rejected (old captures cannot be
replayed later) and a `ReplayCache` also rejects a second arrival of the same signature.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

HEADER = "X-TrainGuard-Signature"


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """Return the signature header value for a body sent at `timestamp` (unix seconds)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def _parse(header: str) -> tuple[int, list[str]] | None:
    ts, sigs = None, []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            ts = int(value)
        elif key == "v1" and value:
            sigs.append(value)
    return (ts, sigs) if ts is not None and sigs else None


class ReplayCache:
    """Signatures seen within the tolerance window (a receiver's memory of deliveries).

    Pass it only for deliveries the receiver will accept: a retry after the receiver's own
    error may carry the same timestamp and signature, and is not a replay.
    """

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_time(self, signature: str, now: float, tolerance_s: float) -> bool:
        """Record a signature; return False if it was already seen within the window."""
        with self._lock:
            self._seen = {s: t for s, t in self._seen.items() if now - t <= 2 * tolerance_s}
            if signature in self._seen:
                return False
            self._seen[signature] = now
            return True


def verify_signature(
    secret: str,
    header: str,
    body: bytes,
    tolerance_s: float = 300.0,
    now: float | None = None,
    replays: ReplayCache | None = None,
) -> bool:
    """Return whether a header signs this body with this secret, recently and only once."""
    parsed = _parse(header or "")
    if parsed is None:
        return False
    ts, sigs = parsed
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance_s:
        return False
    expected = sign(secret, body, ts).partition("v1=")[2]
    if not any(hmac.compare_digest(expected, s) for s in sigs):
        return False
    return replays is None or replays.first_time(expected, current, tolerance_s)
