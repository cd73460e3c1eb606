"""Alerts as gpu.predicted incidents and the checkpoint probe, on the ClickHouse server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from actions.checkpoint import LogCheckpoints
from diagnosis.incident_store import (
    save_incidents,
)
from diagnosis.model import IncidentStatus
from prediction.alerts import jobs_on_nodes, predicted_incidents
from tests.actions_builders import make_incident
from tests.integration.checkpoint_helpers import (
    SAVED,
    log,
    risk_rows,
    running_job,
    set_status,
)

pytestmark = pytest.mark.integration


def test_alerts_become_one_incident_per_gpu_and_skip_failed_gpus(server_store):
    now = datetime.now(UTC)
    first, _ = predicted_incidents(server_store, risk_rows("node-0075", 3, now), now)
    save_incidents(server_store, first)
    later = now + timedelta(hours=1)
    rows = pd.concat(
        [
            risk_rows("node-0075", 3, later, risk=0.99),
            risk_rows("node-0076", 1, later),  # has failed already
            risk_rows("node-0076", 2, later, alert=0),  # no alert
            risk_rows("node-0077", 0, later, risk=0.4),  # below --min-risk
        ],
        ignore_index=True,
    )
    save_incidents(server_store, [make_incident(7601, node="node-0076", gpu=1, at=now)])
    again, skipped = predicted_incidents(server_store, rows, later, min_risk=0.5)
    assert skipped == 2
    (update,) = again
    assert (update.id, update.revision, update.findings) == (first[0].id, 2, 2)
    assert update.suspects[0].score == pytest.approx(0.99) and len(update.evidence) == 2
    assert update.updated_at == later and update.detected_at == now


@pytest.fixture(params=["server_store", "embedded_store"])
def any_store(request: pytest.FixtureRequest):
    return request.getfixturevalue(request.param)


def test_probe_and_job_lookup_on_the_server_and_on_chdb(any_store):
    now = datetime.now(UTC).replace(microsecond=0)
    running_job(any_store, "job-a", ["node-a1", "node-a2"], now - timedelta(minutes=5))
    running_job(any_store, "job-old", ["node-b1"], now - timedelta(hours=2))  # ended
    assert jobs_on_nodes(any_store, now) == {"node-a1": "job-a", "node-a2": "job-a"}
    probe = LogCheckpoints(any_store)
    since = now - timedelta(minutes=1)
    log(any_store, "node-a2", SAVED.format(job="job-a"), now - timedelta(minutes=2))  # before
    log(any_store, "node-b1", SAVED.format(job="job-old"), now)  # not the job's node
    log(any_store, "node-a1", SAVED.format(job="x"), now, job="job-other")  # another job's id
    assert probe.saved_since("job-a", since) is None
    log(any_store, "node-a2", "[rank0]:" + SAVED.format(job="job-a"), now + timedelta(seconds=3))
    found = probe.saved_since("job-a", since)
    assert found is not None and found.node == "node-a2"
    assert (found.saved.iteration, found.saved.path) == (1200, "/ckpt/job-a")
    assert found.at == now + timedelta(seconds=3)


def test_a_revision_keeps_its_job_and_a_closed_prediction_cools_down(server_store):
    now = datetime.now(UTC)
    running_job(server_store, "job-first", ["node-0081"], now)
    (first,), _ = predicted_incidents(server_store, risk_rows("node-0081", 2, now), now)
    save_incidents(server_store, [first])
    later = now + timedelta(hours=1)
    running_job(server_store, "job-second", ["node-0081"], later)  # another job moved in
    (again,), _ = predicted_incidents(server_store, risk_rows("node-0081", 2, later), later)
    assert (again.id, again.job) == (first.id, "job-first")  # its ladder waits for job-first
    assert "job-first" in again.summary
    set_status(server_store, first.id, IncidentStatus.RESOLVED, "drained at the checkpoint", later)
    day = later + timedelta(days=1)
    assert predicted_incidents(server_store, risk_rows("node-0081", 2, day), day) == ([], 1)
    week = later + timedelta(days=8)
    (fresh,), _ = predicted_incidents(server_store, risk_rows("node-0081", 2, week), week)
    assert fresh.id != first.id and fresh.revision == 1


def test_a_page_of_look_alike_lines_does_not_hide_the_save(server_store):
    now = datetime.now(UTC).replace(microsecond=0)
    running_job(server_store, "job-c", ["node-c1"], now)
    probe = LogCheckpoints(server_store, limit=2)
    since = now - timedelta(seconds=10)
    for i in range(3):  # hold a needle, are no save
        line = f"successfully saved checkpoint metadata to /ckpt/meta-{i}"
        log(server_store, "node-c1", line, now - timedelta(seconds=5 - i))
    log(server_store, "node-c1", SAVED.format(job="job-c"), now)
    assert probe.saved_since("job-c", since) is None  # the first page: look-alikes only
    found = probe.saved_since("job-c", since)
    assert found is not None and found.saved.iteration == 1200
