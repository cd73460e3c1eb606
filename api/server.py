"""How `trainguard api` runs uvicorn: an HTTP protocol whose own refusals are problems too.

uvicorn answers what it cannot parse itself, in plain text: a request line over 64 KiB
(httptools cannot split a longer URL) got `400 Invalid HTTP request received.` before the
app saw it. `ProblemHttpTools` is uvicorn's httptools protocol with three changes:

- a URL over `TG_API_MAX_URL_BYTES` is refused with a 414 problem while it is still
  arriving (the app refuses the same length with the same body under any other server);
- a request head over `TG_API_MAX_HEADER_BYTES` is refused with a 431 problem (httptools
  itself has no bound: a client could send headers until memory ran out);
- every other parse error is a 400 problem (`application/problem+json`), not plain text.

It relies on uvicorn's `HttpToolsProtocol` internals (`send_400_response`, the parser
callbacks); tests/integration/test_api_limits.py drives it over a socket.
"""

from __future__ import annotations

import functools
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from api.problems import PROBLEM, problem_bytes
from api.settings import ApiSettings


@functools.cache
def _limits() -> tuple[int, int]:
    """Return (URL bytes, head bytes) of this process's settings (read once)."""
    settings = ApiSettings()
    return settings.max_url_bytes, settings.max_header_bytes


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a request over a limit."""


class ProblemHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, with bounded heads and problem+json refusals."""

    _refusal: tuple[int, str] | None = None
    _head_bytes = 0

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._refusal, self._head_bytes = None, 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        limit = _limits()[0]
        if len(self.url) > limit:
            self._refuse(414, f"the URL is over {limit} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._head_bytes += len(name) + len(value) + 4
        limit = _limits()[1]
        if self._head_bytes > limit:
            self._refuse(431, f"the request headers are over {limit} bytes")

    def send_400_response(self, msg: str) -> None:
        status, detail = self._refusal or (400, msg)
        body = problem_bytes(status, detail)
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head.extend(
            [
                b"content-type: " + PROBLEM.encode() + b"\r\n",
                b"content-length: " + str(len(body)).encode() + b"\r\n",
                b"connection: close\r\n\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(head))
        self.transport.close()

    def _refuse(self, status: int, detail: str) -> None:
        self._refusal = (status, detail)
        self.logger.warning("refused a request: %s", detail)
        raise _Refused(detail)  # httptools raises HttpParserCallbackError: send_400_response


def server_options(settings: ApiSettings) -> dict[str, Any]:
    """Return uvicorn's options for the API (`uvicorn.run` and `uvicorn.Config` take them)."""
    return {
        "host": settings.host,
        "port": settings.port,
        "http": ProblemHttpTools,
        "log_level": "warning",
        "access_log": False,
    }
