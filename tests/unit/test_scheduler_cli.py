"""`trainguard scheduler simulate` as other tools run it: JSON keys, one-line errors, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler.metrics import SUMMARY_KEYS

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "data" / "traces"


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainguard", "scheduler", "simulate", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_json_summary_has_the_contract_keys() -> None:
    done = simulate("--trace", str(TRACES / "tiresias_60_job.csv"), "--policy", "lyra", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert tuple(out)[: len(SUMMARY_KEYS)] == SUMMARY_KEYS
    assert out["jobs"] == 60


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--trace", "missing.csv", "--policy", "lyra"], "not found"),
        (
            ["--trace", str(TRACES / "alibaba_openb_node_list_gpu_node.csv"), "--policy", "lyra"],
            "missing columns",
        ),
        (["--trace", str(TRACES / "tiresias_60_job.csv"), "--policy", "nope"], "unknown policy"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    done = simulate(*args, "--json")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
