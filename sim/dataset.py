"""Build a labelled feature set from a generated fleet (the simulator side of the bench)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from prediction.features import build_features, summarize_samples, xids_from_logs
from prediction.labels import failures_from_truth, time_to_failure
from sim.fleet import Fleet, FleetSpec


@dataclass
class Dataset:
    """Features per GPU-hour, the failures behind the labels, time to the next failure."""

    features: pd.DataFrame
    failures: pd.DataFrame
    ttf: np.ndarray
    truth: list[dict[str, object]]


def fleet_dataset(spec: FleetSpec, bucket_s: int = 3600) -> Dataset:
    """Simulate a fleet day by day, summarize each day, then build features and labels."""
    fleet = Fleet(spec)
    summaries, logs = [], []
    for day in fleet.days():
        summaries.append(summarize_samples(day.gpu_metrics, bucket_s))
        logs.append(day.logs)
    xids = xids_from_logs(pd.concat(logs, ignore_index=True))
    features = build_features(pd.concat(summaries, ignore_index=True), xids, bucket_s)
    failures = failures_from_truth({"faults": fleet.truth})
    return Dataset(features, failures, time_to_failure(features, failures), fleet.truth)
