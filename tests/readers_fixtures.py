"""Real-format fixtures of the readers: blocks of log lines by label, and the shared samples."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "readers"
REAL_SAMPLES = REPO / ".." / "shared" / "data" / "real_samples"
REAL_LOGS = REPO / ".." / "shared" / "data" / "real_logs" / "real_logs.jsonl"


def log_blocks(name: str = "train_log_lines.txt") -> dict[str, list[str]]:
    """Return the fixture's blocks: label -> lines."""
    blocks: dict[str, list[str]] = {}
    label = ""
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("## "):
            label = line.split()[1]
            blocks[label] = []
        elif line and not line.startswith("#"):
            blocks[label].append(line)
    return blocks


def real_log(label: str, contains: str) -> list[str]:
    """Return the lines of the first shared real log of this label containing `contains`."""
    for line in REAL_LOGS.read_text().splitlines():
        entry = json.loads(line)
        if entry["label"] == label and contains in entry["text"]:
            return list(entry["text"].splitlines())
    raise LookupError(f"no real log {label!r} containing {contains!r}")
