"""Real lines for the sim.formats tests (tests/fixtures/sim_formats/), and small helpers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "sim_formats"


def fixture_rows(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def real(label: str, index: int = 0) -> list[str]:
    """Return the lines of the `index`-th real excerpt labelled `label` (shared or public)."""
    rows = [
        r
        for r in fixture_rows("real_logs.jsonl") + fixture_rows("public_lines.jsonl")
        if r["label"] == label
    ]
    return rows[index]["text"].split("\n")


def all_real_lines() -> list[str]:
    """Return every line of every real excerpt."""
    rows = fixture_rows("real_logs.jsonl") + fixture_rows("public_lines.jsonl")
    return [line for r in rows for line in r["text"].split("\n")]


def body(line: str) -> str:
    """Return a kernel line without its prefix (everything before ``NVRM:`` / the message)."""
    at = line.find("NVRM:")
    return line[at:] if at >= 0 else line


TS = datetime(2024, 8, 30, 11, 43, 14, tzinfo=UTC)
