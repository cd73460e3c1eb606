"""The feature queries and the gpu_risk table on the real ClickHouse server and on chdb."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from analytics.columns import ColumnBatch
from analytics.store import Store
from analytics.tables import GPU_METRICS, LOGS
from diagnosis.incident_store import record_transition, save_incidents
from diagnosis.lifecycle import Transition
from diagnosis.model import Category, IncidentStatus
from prediction.features import (
    build_features,
    summarize_samples,
    window_summaries,
    xid_events,
    xids_from_logs,
)
from prediction.labels import failures_from_store
from prediction.risk import gpu_risk, write_risk
from sim.fleet import Fleet, FleetSpec
from tests.actions_builders import make_incident

pytestmark = pytest.mark.integration
START = datetime(2026, 9, 1, tzinfo=UTC)


@pytest.fixture(params=["server_store", "embedded_store"])
def store(request: pytest.FixtureRequest) -> Store:
    return request.getfixturevalue(request.param)


def _value(v: object, ch_type: str) -> object:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if "Int" in ch_type:
        return int(v)  # type: ignore[call-overload]
    return v.item() if isinstance(v, np.generic) else v


def _insert(store: Store, frame: pd.DataFrame, table) -> None:
    """Insert rows the sink's converter produced (a frame turns nullable ints into floats)."""
    types = {c.name: c.type for c in table.columns}
    cols = {c: [_value(v, types[c]) for v in frame[c].tolist()] for c in table.column_names}
    store.insert(table.name, cols, types)


def test_feature_queries_match_the_pandas_builder(store: Store):
    fleet = Fleet(FleetSpec(nodes=2, days=2, fault_rate_per_gpu_day=0.5, seed=5))
    days = list(fleet.days())
    samples = pd.concat([d.gpu_metrics for d in days], ignore_index=True)
    logs = pd.concat([d.logs for d in days], ignore_index=True)
    _insert(store, samples, GPU_METRICS)
    _insert(store, logs, LOGS)
    start, end = int(START.timestamp()), int((START + timedelta(days=2)).timestamp())
    from_db = window_summaries(store, start, end)
    local = summarize_samples(samples)
    key = ["node", "gpu", "bucket", "uuid"]
    from_db = from_db.sort_values(key, ignore_index=True)
    local = local.sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(from_db, local, check_exact=False, rtol=1e-6)
    xids = xid_events(store, start, end)
    assert len(xids) == len(xids_from_logs(logs)) > 0
    assert sorted(xids["xid"]) == sorted(xids_from_logs(logs)["xid"])
    features = build_features(from_db, xids)
    assert len(features) > 0 and features["time"].max() <= end


def test_risk_round_trip_keeps_the_latest_score_per_gpu(store: Store):
    t = int(START.timestamp())
    rows = pd.DataFrame(
        {
            "ts": [t, t + 3600, t],
            "node": ["n1", "n1", "n2"],
            "gpu": [0, 0, 3],
            "uuid": ["GPU-a", "GPU-a", "GPU-b"],
            "horizon_h": [24, 24, 24],
            "risk": [0.2, 0.95, 0.4],
            "alert": [0, 1, 0],
            "model": "cascade",
            "reason": ["", "sbe_24h=900", ""],
        }
    )
    assert write_risk(store, rows) == 3
    risk = gpu_risk(store, horizon_h=24)
    assert risk[["node", "gpu", "risk", "alert"]].values.tolist() == [
        ["n1", 0, 0.95, 1],
        ["n2", 3, 0.4, 0],
    ]
    assert risk.iloc[0]["reason"] == "sbe_24h=900"
    assert gpu_risk(store, alerts_only=True)["node"].tolist() == ["n1"]
    assert gpu_risk(store, since=START + timedelta(hours=2)).empty
    assert gpu_risk(store, horizon_h=1).empty
    batch = ColumnBatch()
    assert not batch.rows  # the sink's tables are untouched by the risk table


def test_training_labels_are_the_stored_gpu_hardware_incidents(store: Store):
    """A real cluster has no truth.json: labels are what diagnosis stored, false alarms out."""
    t = START + timedelta(hours=5)
    failed = make_incident(1, node="node-0007", gpu=2, at=t)
    dismissed = make_incident(2, node="node-0008", gpu=1, at=t)
    network = make_incident(3, category=Category.NETWORK, node="node-0009", gpu=None, at=t)
    later = make_incident(4, node="node-0007", gpu=5, at=START + timedelta(days=3))
    save_incidents(store, [failed, dismissed, network, later])
    record_transition(
        store,
        Transition(
            incident_id=dismissed.id,
            status=IncidentStatus.FALSE_ALARM,
            reason="reseated, passed diagnostics",
            actor="oncall",
            at=t + timedelta(minutes=30),
        ),
    )
    found = failures_from_store(store, START, START + timedelta(days=2))
    assert found[["node", "gpu", "time"]].values.tolist() == [["node-0007", 2, int(t.timestamp())]]
