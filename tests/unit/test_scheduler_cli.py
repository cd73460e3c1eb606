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
        (
            ["--trace", str(TRACES / "tiresias_60_job.csv"), "--policy", "lyra"]
            + ["--training-servers", "0"],
            "--training-servers must be >= 1",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    done = simulate(*args, "--json")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


@pytest.mark.parametrize(("load", "lends"), [(1.0, False), (0.1, True)])
def test_explicit_clusters_and_inference_load(tmp_path: Path, load: float, lends: bool) -> None:
    series = tmp_path / "load.csv"
    series.write_text("time,load\n" + "".join(f"{t},{load}\n" for t in range(0, 7200, 300)))
    trace = str(TRACES / "tiresias_60_job.csv")
    done = simulate(
        "--trace", trace, "--policy", "lyra", "--inference-load", str(series),
        "--training-servers", "3", "--inference-servers", "2", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert tuple(out)[: len(SUMMARY_KEYS)] == SUMMARY_KEYS
    assert (out["training_servers"], out["inference_servers"]) == (3, 2)
    assert (out["loans"] > 0) is lends


def test_default_training_cluster_follows_the_sizing_rule() -> None:
    from scheduler.model import SimConfig
    from scheduler.trace import load_trace
    from scheduler.workload import size_training

    path = TRACES / "tiresias_60_job.csv"
    done = simulate("--trace", str(path), "--policy", "fifo", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    expected = size_training(load_trace(path), SimConfig())
    assert out["training_servers"] == out["inference_servers"] == expected


def test_a_bad_row_is_named(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit_time,duration,num_gpus\n0,60,1\n5,-5,2\n")
    done = simulate("--trace", str(trace), "--policy", "fifo", "--json")
    assert done.returncode == 2
    assert "data row 2: duration -5, num_gpus 2" in done.stderr
