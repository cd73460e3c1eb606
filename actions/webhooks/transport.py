"""HTTP POSTs through httpx: proxy variables honoured, `Retry-After` read, no redirects.

Proxies come from HTTP_PROXY / HTTPS_PROXY / ALL_PROXY and NO_PROXY (httpx's `trust_env`), read
when the client is built. Which answers are worth another attempt is decided here once, for
webhooks and Alertmanager alike: transport errors and timeouts, 408, 429 and 5xx. Any other
answer (a 4xx, a redirect, which is not followed) will not change on a retry.

httpx logs every request's URL at INFO; a Slack webhook URL is a credential, so its log lines
keep the scheme and host only (`RedactUrls`, put on the `httpx` logger by every `Poster`).
"""

from __future__ import annotations

import logging
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


class RedactUrls(logging.Filter):
    """Cut URLs in httpx's log records down to their origin (scheme, host, port)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                f"{a.scheme}://{a.netloc.decode()}/…" if isinstance(a, httpx.URL) else a
                for a in record.args
            )
        return True


def redact_httpx_log() -> None:
    """Put `RedactUrls` on the httpx logger once."""
    httpx_log = logging.getLogger("httpx")
    if not any(isinstance(f, RedactUrls) for f in httpx_log.filters):
        httpx_log.addFilter(RedactUrls())


class Poster:
    """A pooled httpx client that POSTs bodies and reports an `Answer` (never raises on HTTP)."""

    def __init__(self, timeout_s: float = 5.0, trust_env: bool = True) -> None:
        redact_httpx_log()
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
