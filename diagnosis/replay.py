"""Replay a `trainguard sim run` directory through diagnosis: telemetry in, incidents out.

The families are merged in time order and fed to the diagnosis engine (`diagnosis.engine`),
the same one the streaming worker runs. The ground truth (truth.json) is never read here.
"""

from __future__ import annotations

import gzip
import heapq
from collections.abc import Iterator
from pathlib import Path

from diagnosis.engine import DiagnosisEngine
from diagnosis.fabric import Fabric
from diagnosis.incidents import Incident
from ingest.schema import EventBase, decode_event

FAMILIES = ("gpu_metrics", "host_metrics", "logs", "train_steps", "collectives", "job_topology")


class ReplayError(ValueError):
    """A directory that is not a readable sim run."""


def iter_family(path: Path) -> Iterator[EventBase]:
    """Yield the events of one family file, one line at a time."""
    with gzip.open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                yield decode_event(line)


def merged_events(directory: Path) -> Iterator[EventBase]:
    """Yield every family's events merged in time order."""
    files = [directory / f"{name}.jsonl.gz" for name in FAMILIES]
    present = [f for f in files if f.exists()]
    if not present:
        raise ReplayError(f"{directory}: no telemetry files (*.jsonl.gz) found")
    return heapq.merge(*(iter_family(f) for f in present), key=lambda e: e.ts)


def load_fabric(directory: Path) -> Fabric | None:
    """Return the inventory's cabling, if the directory has one."""
    path = directory / "inventory.json"
    return Fabric.from_json(path.read_bytes()) if path.exists() else None


def diagnose_dir(path: Path | str) -> list[Incident]:
    """Replay a sim run directory and return its incidents."""
    directory = Path(path)
    if not directory.is_dir():
        raise ReplayError(f"{directory}: not a directory")
    replay = DiagnosisEngine(load_fabric(directory))
    for event in merged_events(directory):
        replay.feed(event)
    return replay.finish()
