"""A process's registry (with `trainguard_build_info`) and its /metrics HTTP endpoint."""

from __future__ import annotations

import platform
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

ROLES = ("agent", "sink", "diagnose", "act", "api")
"""The processes that serve /metrics (the `role` label of trainguard_build_info)."""


def trainguard_version() -> str:
    """Return the installed distribution's version ("unknown" when run from a bare tree)."""
    try:
        return metadata.version("trainguard")
    except metadata.PackageNotFoundError:
        return "unknown"


class BuildInfo(Collector):
    """`trainguard_build_info{version,python,role} 1`: which build a target runs."""

    def __init__(self, role: str) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
        self.role = role

    def collect(self) -> Iterable[Metric]:
        info = GaugeMetricFamily(
            "trainguard_build_info",
            "Always 1; the labels say which TrainGuard build and role this process runs.",
            labels=["version", "python", "role"],
        )
        info.add_metric([trainguard_version(), platform.python_version(), self.role], 1.0)
        yield info


def new_registry(role: str) -> CollectorRegistry:
    """Return an empty registry of this process holding only its build info."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(BuildInfo(role))
    return registry


@dataclass
class MetricsEndpoint:
    """A running /metrics server; `close()` stops it and frees the port."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        """Return the bound port (the chosen one when the setting asked for port 0)."""
        return int(self.server.server_address[1])

    def close(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(registry: CollectorRegistry, host: str, port: int) -> MetricsEndpoint:
    """Serve GET /metrics of `registry` on host:port from a daemon thread."""
    server, thread = start_http_server(port, addr=host, registry=registry)
    return MetricsEndpoint(server, thread)
