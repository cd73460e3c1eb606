"""The package layering: which top-level package may import which (declared once, here).

A module imports only packages of layers below its own; the packages of one layer do not
import each other. tests/unit/test_package_graph.py reads every import of every module
(function-level and `TYPE_CHECKING` ones included) and fails on an edge against this list
and on any cycle between packages. docs/layers.md explains the choices.

Where a lower package needs something only a higher one knows, the higher one passes it
in: `ingest.sink.Sink` gets its writer (`analytics.writer`) from `trainguard.wiring`;
`actions.executors.kubernetes.kube_backend` takes any object with the `KubeAccess` fields
(`trainguard.settings.ActSettings` is one). A role's settings class lives in its package
when a module of that package reads it (`api/settings.py`, `actions/webhooks/settings.py`,
`ingest/agent/settings.py`, `ui/settings.py`); `trainguard.settings.settings_classes` lists
them all for the unknown-variable check.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("bench",),  # measurements: start any part, the composition root included
    ("trainguard",),  # the composition root: CLI, settings, wiring of processes
    ("api", "ui", "sim"),  # REST API; console (an HTTP client of the API); digital twin, fleet
    ("actions",),  # remediation: ladders, plans, executors, webhooks
    ("scheduler", "prediction"),  # Lyra capacity; failure risk (raises predicted incidents)
    ("diagnosis",),  # detectors, localization, incidents and their store
    ("analytics",),  # ClickHouse tables, migrations, queries, the sink's writer
    ("ingest",),  # wire schema, bus, readers, node agent
)
"""Top-level packages, highest layer first."""


def layer_of(package: str) -> int:
    """Return the rank of `package` (0: the top); KeyError if it is not declared."""
    for rank, layer in enumerate(LAYERS):
        if package in layer:
            return rank
    raise KeyError(package)


def may_import(importer: str, imported: str) -> bool:
    """Say whether a module of `importer` may import `imported` (both top-level packages)."""
    return importer == imported or layer_of(importer) < layer_of(imported)


def describe() -> str:
    """Return the layering as lines, highest first (`a -> b` means a may import b)."""
    return "\n".join(f"  {rank}: {', '.join(layer)}" for rank, layer in enumerate(LAYERS))
