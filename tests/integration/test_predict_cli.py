"""`trainguard predict train` then `score` on the ClickHouse server: alerts become incidents."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from analytics.tables import GPU_METRICS, LOGS
from diagnosis.incident_store import IncidentFilter, all_incidents
from diagnosis.model import Category
from prediction.labels import failures_from_truth
from prediction.risk import gpu_risk
from sim.fleet import Fleet, FleetSpec
from tests.integration.checkpoint_helpers import running_job
from tests.integration.conftest import process_env
from tests.integration.test_prediction_store import _insert
from trainguard.cli import main

pytestmark = pytest.mark.integration


def test_train_then_score_opens_an_incident_per_alerted_gpu_naming_its_job(
    server_store, services, topics, tmp_path, monkeypatch, capsys
):
    fleet = Fleet(FleetSpec(nodes=8, days=12, fault_rate_per_gpu_day=0.05, seed=7))
    for day in fleet.days():
        _insert(server_store, day.gpu_metrics, GPU_METRICS)
        _insert(server_store, day.logs, LOGS)
    truth = tmp_path / "truth.json"
    truth.write_text(json.dumps({"faults": fleet.truth}, default=str))
    env = process_env(services, topics, server_store, TG_KAFKA_MODE="embedded")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    start, model = fleet.spec.start, tmp_path / "model.pkl"
    cut = start + timedelta(days=10)
    argv = ["--start", start.isoformat(), "--end", cut.isoformat(), "--truth", str(truth)]
    assert main(["predict", "train", *argv, "--model", str(model)]) == 0
    failures = failures_from_truth({"faults": fleet.truth})
    later = failures[failures["time"] > cut.timestamp()]
    at = datetime.fromtimestamp(int(later["time"].min()) - 6 * 3600, UTC)
    running_job(server_store, "job-fleet", [f"node-{n:04d}" for n in range(8)], at)
    assert main(["predict", "score", "--model", str(model), "--end", at.isoformat()]) == 0
    alerts = gpu_risk(server_store, alerts_only=True)
    assert len(alerts) >= 1
    found = all_incidents(server_store, IncidentFilter(category=Category.GPU_PREDICTED.value))
    blamed = {(i.suspects[0].node, i.suspects[0].gpu) for i in found}
    assert blamed == set(zip(alerts["node"], alerts["gpu"], strict=True))
    assert {i.job for i in found} == {"job-fleet"} and {i.revision for i in found} == {1}
    assert f"{len(found)} new, 0 updated" in capsys.readouterr().out
    # an hour on, the same GPUs alert again: revisions of the same incidents, none new
    again = (at + timedelta(hours=1)).isoformat()
    assert main(["predict", "score", "--model", str(model), "--end", again]) == 0
    still = gpu_risk(server_store, alerts_only=True, since=at + timedelta(minutes=30))
    updated = all_incidents(server_store, IncidentFilter(category=Category.GPU_PREDICTED.value))
    assert {i.id for i in found} <= {i.id for i in updated}
    repeat = {(n, g) for n, g in zip(still["node"], still["gpu"], strict=True)} & blamed
    assert sum(1 for i in updated if i.revision == 2) == len(repeat)
