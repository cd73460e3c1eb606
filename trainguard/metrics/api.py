"""The API's series: request latency in every worker, served by the launcher in one place.

`trainguard api` may run several uvicorn worker processes; each records its requests in
prometheus_client's multiprocess files under PROMETHEUS_MULTIPROC_DIR (a fresh directory
the launcher makes for each start and removes at exit), and the launcher serves the sum of
all workers on TG_API_METRICS_HOST:TG_API_METRICS_PORT, a port of its own, without the
API's bearer tokens (docs/metrics.md says why).

prometheus_client chooses where values live when it is first imported: the launcher sets
the directory before anything imports it, which is why nothing here is imported by the
`api` command's module at import time.
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.multiprocess import MultiProcessCollector

from api.timing import RequestObserver
from trainguard.metrics.exposition import BuildInfo

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: hot-path answers take ~1 ms, a cold fleet page of 16k GPUs up to seconds."""


def request_observer(registry: CollectorRegistry | None = None) -> RequestObserver:
    """Return the `create_app(observe=...)` hook recording `trainguard_api_request_seconds`.

    In a worker of `trainguard api` with PROMETHEUS_MULTIPROC_DIR set, the values go to
    that directory's files whatever `registry` is; elsewhere (tests) they stay in it.
    """
    histogram = Histogram(
        "trainguard_api_request_seconds",
        "Time to answer an API request, by method, route template and HTTP status.",
        ["method", "route", "status"],
        registry=registry if registry is not None else CollectorRegistry(),
        buckets=REQUEST_BUCKETS,
    )

    def observe(method: str, route: str, status: int, seconds: float) -> None:
        histogram.labels(method, route, str(status)).observe(seconds)

    return observe


def launcher_registry(directory: Path) -> CollectorRegistry:
    """Return the registry the launcher serves: every worker's files, and the build info."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    registry.register(BuildInfo("api"))
    return registry
