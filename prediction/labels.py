"""Labels: a GPU hardware incident within a horizon after each decision time.

Failures come from diagnosis incidents (`gpu.hardware` with a GPU suspect), which is what a
real cluster has, or from the twin's ground truth (truth.json: for scorers and training
labels on the twin only, never a feature).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analytics.store import Store
from diagnosis.incident_store import IncidentFilter, all_incidents
from diagnosis.model import Category, IncidentStatus

HARDWARE_KINDS = frozenset({"xid79", "ecc_dbe", "gsp_timeout", "nvlink"})
FAILURE_COLUMNS = ["node", "gpu", "time", "kind"]


def _epoch(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())


def failures_from_truth(truth: Mapping[str, Any] | Path | str) -> pd.DataFrame:
    """Return GPU hardware failures (node, gpu, time epoch s, kind) from truth.json."""
    data = json.loads(Path(truth).read_text()) if isinstance(truth, Path | str) else truth
    rows = []
    for entry in data.get("faults", []):
        comp = entry.get("component") or {}
        if comp.get("type") != "gpu":
            continue
        kind = entry["kind"]
        at = _epoch(entry["onset"])
        if kind == "precursor":
            if entry.get("then") not in HARDWARE_KINDS:
                continue
            at += int(round(entry["failure_at_s"] - entry["onset_s"]))
            kind = entry["then"]
        if kind in HARDWARE_KINDS:
            rows.append((comp["node"], int(comp["gpu"]), at, kind))
    return pd.DataFrame(rows, columns=FAILURE_COLUMNS).sort_values("time", ignore_index=True)


def failures_from_incidents(incidents: Iterable[Any]) -> pd.DataFrame:
    """Return GPU hardware failures from diagnosis incidents (their top GPU suspect)."""
    rows = []
    for inc in incidents:
        if str(inc.category) != "gpu.hardware":
            continue
        gpu = next((s for s in inc.suspects if s.node is not None and s.gpu is not None), None)
        if gpu is not None:
            rows.append((gpu.node, int(gpu.gpu), int(inc.detected_at.timestamp()), inc.summary))
    return pd.DataFrame(rows, columns=FAILURE_COLUMNS).sort_values("time", ignore_index=True)


def failures_from_store(store: Store, since: datetime, until: datetime) -> pd.DataFrame:
    """Return the GPU hardware failures diagnosis stored between `since` and `until`.

    Incidents someone marked a false alarm are not failures; every other status is (an open
    incident is a GPU that failed and has not been dealt with yet).
    """
    where = IncidentFilter(category=Category.GPU_HARDWARE.value, since=since, until=until)
    found = all_incidents(store, where)
    return failures_from_incidents(i for i in found if i.status is not IncidentStatus.FALSE_ALARM)


def time_to_failure(features: pd.DataFrame, failures: pd.DataFrame) -> np.ndarray:
    """Return seconds from each row's `time` to the next failure of its GPU (inf: none)."""
    rows = features[["node", "gpu", "time"]].reset_index(drop=True).copy()
    rows["_row"] = np.arange(len(rows))
    rows["time"] = rows["time"].astype("int64")
    if failures.empty:
        return np.full(len(rows), np.inf)
    fail = failures[["node", "gpu", "time"]].rename(columns={"time": "fail_time"}).copy()
    fail["fail_time"] = fail["fail_time"].astype("int64")
    fail["time"] = fail["fail_time"]
    merged = pd.merge_asof(
        rows.sort_values("time"),
        fail.sort_values("time"),
        on="time",
        by=["node", "gpu"],
        direction="forward",
        allow_exact_matches=False,
    ).sort_values("_row")
    delta = (merged["fail_time"] - merged["time"]).to_numpy(dtype="float64")
    return np.where(np.isnan(delta), np.inf, delta)


def label_windows(features: pd.DataFrame, failures: pd.DataFrame, horizon_s: float) -> np.ndarray:
    """Return 1 where the row's GPU has a hardware failure in (time, time + horizon]."""
    return (time_to_failure(features, failures) <= horizon_s).astype(np.int8)
