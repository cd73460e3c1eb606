"""A tiny Prometheus /metrics endpoint for long-running processes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def render_prometheus(samples: dict[str, float]) -> str:
    """Render samples in the Prometheus text exposition format."""
    return "".join(
        f"# TYPE {name} gauge\n{name} {value}\n" for name, value in sorted(samples.items())
    )


def serve_metrics(
    port: int, collect: Callable[[], dict[str, float]], host: str = "127.0.0.1"
) -> ThreadingHTTPServer:
    """Serve GET /metrics on host:port from a daemon thread; return the server."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served here")
                return
            body = render_prometheus(collect()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
