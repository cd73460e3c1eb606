"""HTTP POSTs through httpx: proxy variables honoured, `Retry-After` read, no redirects.

Proxies come from HTTP_PROXY / HTTPS_PROXY / ALL_PROXY and NO_PROXY (httpx's `trust_env`), read
when the client is built. Which answers are worth another attempt is decided here once, for
webhooks and Alertmanager alike: transport errors and timeouts, 408, 429 and 5xx. Any other
answer (a 4xx, a redirect, which is not followed) will not change on a retry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

RETRYABLE_4XX = frozenset({408, 429})


@dataclass(frozen=True)
class Answer:
    """How one POST ended: an HTTP status, or a transport error (status None)."""

    status: int | None
    error: str | None
    retry_after_s: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the receiver took it (2xx)."""
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed: transport errors, 408, 429 and 5xx."""
        if self.status is None:
            return True
        return self.status in RETRYABLE_4XX or self.status >= 500


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Return the seconds a `Retry-After` header asks for (delta-seconds or an HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class Poster:
    """A pooled httpx client that POSTs bodies and reports an `Answer` (never raises on HTTP)."""

    def __init__(self, timeout_s: float = 5.0, trust_env: bool = True) -> None:
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s), trust_env=trust_env, follow_redirects=False
        )

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        """POST a body to an already checked URL; read at most 64 KiB of the answer."""
        try:
            with self._client.stream("POST", url, content=body, headers=headers) as response:
                read = 0
                for chunk in response.iter_bytes():
                    read += len(chunk)
                    if read >= 65536:
                        break
                status = response.status_code
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
        except httpx.HTTPError as exc:  # the URL (for Slack a credential) is never repeated
            return Answer(None, f"{type(exc).__name__}: {str(exc).replace(url, '<url>')}")
        error = None if 200 <= status < 300 else f"HTTP {status}"
        return Answer(status, error, retry_after)

    def close(self) -> None:
        """Close the pooled connections."""
        self._client.close()
