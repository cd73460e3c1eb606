"""Where the twin's events go: compressed JSON-lines files per family, or the bus."""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

from ingest.bus import Producer
from ingest.schema import EventBase, encode_event

FILE_OF_KIND = {
    "gpu_metrics": "gpu_metrics",
    "host_metrics": "host_metrics",
    "log": "logs",
    "train_step": "train_steps",
    "collective": "collectives",
    "job_topology": "job_topology",
}


class FileSink:
    """Writes each event family to DIR/<family>.jsonl.gz (the wire JSON, one event a line)."""

    def __init__(self, out: Path, level: int = 3) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.counts: Counter[str] = Counter()
        self._files: dict[str, gzip.GzipFile] = {
            name: gzip.GzipFile(out / f"{name}.jsonl.gz", "wb", compresslevel=level)  # noqa: SIM115
            for name in sorted(set(FILE_OF_KIND.values()))
        }

    def __call__(self, event: EventBase) -> None:
        """Append one event to its family's file."""
        name = FILE_OF_KIND[event.kind]
        handle = self._files[name]
        handle.write(encode_event(event))
        handle.write(b"\n")
        self.counts[name] += 1

    def write_truth(self, truth: list[dict[str, Any]], scenario: dict[str, Any]) -> Path:
        """Write DIR/truth.json next to the telemetry."""
        return write_truth(self.out / "truth.json", truth, scenario)

    def write_inventory(self, inventory: dict[str, object]) -> Path:
        """Write DIR/inventory.json: the cluster's cabling, as an operator's inventory has it."""
        path = self.out / "inventory.json"
        path.write_text(json.dumps(inventory, indent=1) + "\n")
        return path

    def close(self) -> None:
        """Flush and close every file."""
        for handle in self._files.values():
            handle.close()

    def __enter__(self) -> FileSink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def write_truth(path: Path, truth: list[dict[str, Any]], scenario: dict[str, Any]) -> Path:
    """Write the injected faults (for scorers only, never for diagnosis) and the scenario."""
    path.write_text(json.dumps({"scenario": scenario, "faults": truth}, indent=2) + "\n")
    return path


class BusSink:
    """Publishes events to the bus; optionally paces simulation time against the wall clock."""

    def __init__(self, producer: Producer, speed: float | None) -> None:
        self.producer = producer
        self.speed = speed
        self.sent = 0
        self._wall0 = time.monotonic()

    def __call__(self, event: EventBase) -> None:
        """Publish one event."""
        self.producer.send(event)
        self.sent += 1

    def on_tick(self, t: float) -> None:
        """Sleep until simulation second t is due (speed x real time); no pacing if None."""
        if self.speed is None:
            return
        delay = self._wall0 + t / self.speed - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def read_events(path: Path) -> list[EventBase]:
    """Read back one family file written by FileSink."""
    from ingest.schema import decode_event

    with gzip.open(path, "rb") as handle:
        return [decode_event(line) for line in handle if line.strip()]
