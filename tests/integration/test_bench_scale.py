"""`python -m bench.scale --quick` runs against the dev services and writes a consistent JSON.

Structure and arithmetic only: timings depend on the machine and are never asserted.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run_quick(out: Path) -> dict[str, object]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.scale", "--quick", "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its diagnose members too are stopped on a timeout
    )
    try:
        _, stderr = proc.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert "[scale " in stderr.decode()  # progress is printed
    return json.loads(out.read_text())  # type: ignore[no-any-return]


@pytest.mark.slow
def test_quick_scale_bench_writes_a_consistent_result(tmp_path: Path) -> None:
    result = _run_quick(tmp_path / "scale.json")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", str(result["measured"]))
    assert str(result["command"]).startswith("python -m bench.scale --quick")
    machine = result["machine"]
    assert isinstance(machine, dict)
    assert machine["cpus"] == os.cpu_count()
    assert len(machine["loadavg_before"]) == len(machine["loadavg_after"]) == 3

    sink = result["sink"]
    assert isinstance(sink, dict)
    for name in ("raw", "pydantic", "fast"):
        rates = sink[name]["rows_per_s"]
        assert len(rates) == 1 and rates[0] > 0
    ratio = sink["sink_to_raw_ratio"]
    for name in ("pydantic", "fast"):
        expected = sink[name]["rows_per_s_median"] / sink["raw"]["rows_per_s_median"]
        assert ratio[name] == pytest.approx(expected, abs=1e-3)

    diag = result["diagnosis"]
    assert isinstance(diag, dict)
    rates = diag["emission_events_per_s"]
    kinds = ("gpu_metrics", "host_metrics", "collective", "train_step", "log", "job_topology")
    assert rates["all"] == pytest.approx(sum(rates[k] for k in kinds), abs=0.05)
    assert rates["gpu_metrics"] == diag["job"]["gpus"] / 8  # one scrape per node per second
    assert rates["collective"] > 0  # every collective of every rank is sent
    assert sum(diag["job"]["events_by_kind"].values()) == diag["job"]["events"]
    assert [r["members"] for r in diag["runs"]] == [1, 2]
    for run in diag["runs"]:
        assert run["records_sent"] == diag["job"]["events"]
        assert len(run["per_member"]) == run["members"]
        assert run["records_consumed"] == run["records_sent"]  # each record read once
        # the last events of a finite stream may stay buffered (no later time releases them)
        assert run["fed"] == sum(m["fed"] for m in run["per_member"]) <= run["records_sent"]
        assert run["cpu_s"] == pytest.approx(sum(m["cpu_s"] for m in run["per_member"]), abs=0.05)
    assert set(diag["scaling"]["per_core_relative_to_first"]) == {"1", "2"}

    plan = result["fleet_plan"]
    assert isinstance(plan, dict)
    per_core = min([v for v in diag["scaling"]["events_per_cpu_s_median"].values() if v > 0] or [0])
    if not per_core:  # no run fed anything in time (see bench/scale_diagnosis.py): no plan
        assert plan["diagnosis_members"] is None
        return
    fleet_rate = rates["all"] / diag["job"]["gpus"] * plan["gpus"]
    assert plan["events_per_s"] == pytest.approx(fleet_rate, abs=10)
    members, capacity = plan["diagnosis_members"], per_core * plan["headroom"]
    assert members * capacity >= plan["events_per_s"] - 10
    assert (members - 1) * capacity < plan["events_per_s"] + 10
    assert plan["partitions_per_telemetry_topic"] >= 2 * members
