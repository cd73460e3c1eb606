"""Recorded agent fixtures shared by unit and integration tests (tests/fixtures/agent/)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).parent / "fixtures" / "agent"


def load_fake_nvml() -> ModuleType:
    """Import tests/fixtures/agent/fake_nvml.py (fixtures are not a package)."""
    name = "tg_agent_fake_nvml"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "fake_nvml.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def kernel_lines(label: str) -> list[str]:
    """Return the real kernel-log lines recorded under `label` (e.g. xid-79)."""
    for line in (FIXTURES / "kernel_lines.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["label"] == label:
            return str(row["text"]).split("\n")
    raise KeyError(label)
