"""Ensembles for precision: a parallel ensemble (intersection of the models' top
predictions) and a cascade (a cheap rule filter, then a classifier on what passes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from prediction.models import ModelName, Threshold, choose_threshold, fit_model, scores


def cheap_filter(features: pd.DataFrame) -> np.ndarray:
    """Return True where an error counter moved, the GPU throttles or warms past its peers.

    Healthy GPUs with silent counters (the vast majority) never reach the classifier, so
    it cannot learn to alert on the noise that failures without any precursor leave.
    """
    f = features
    moved = (
        (f["sbe_24h"] > 0)
        | (f["remap_corr_24h"] > 0)
        | (f["remap_pending"] > 0)
        | (f["pcie_replay_24h"] > 0)
        | (f["nvlink_crc_24h"] > 0)
        | (f["throttle_share_24h"] > 0)
        | (f["xid_remap_24h"] + f["xid_ecc_24h"] + f["xid_nvlink_24h"] > 0)
        | (f["temp_excess_rise"] > 3.0)
    )
    return np.asarray(moved.to_numpy(), dtype=bool)


def top_intersection(score_sets: list[np.ndarray], cuts: list[float]) -> np.ndarray:
    """Return True where every model's score reaches its cut (the intersection)."""
    alert = np.ones(len(score_sets[0]), dtype=bool)
    for s, cut in zip(score_sets, cuts, strict=True):
        alert &= s >= cut
    return alert


@dataclass
class ParallelEnsemble:
    """Alert only where every model ranks the GPU in its top fraction."""

    names: tuple[ModelName, ...] = ("gbdt", "forest", "logreg")
    models: list[Any] = field(default_factory=list)
    cuts: list[float] = field(default_factory=list)
    chosen: Threshold | None = None

    def fit(self, x: np.ndarray, y: np.ndarray, seed: int = 0) -> ParallelEnsemble:
        """Fit every member."""
        self.models = [fit_model(n, x, y, seed=seed) for n in self.names]
        return self

    def member_scores(self, x: np.ndarray) -> list[np.ndarray]:
        """Return each member's scores."""
        return [scores(m, x) for m in self.models]

    def calibrate(self, x: np.ndarray, y: np.ndarray, target_precision: float) -> Threshold:
        """Pick one top fraction for all members on validation data to reach the target."""
        sets = self.member_scores(x)
        # The ensemble score is the lowest member percentile: its top-q set is the
        # intersection of every member's top-q set.
        pct = np.vstack([percentile_rank(s, s) for s in sets]).min(axis=0)
        self.chosen = choose_threshold(pct, y, target_precision)
        q = self.chosen.value
        self.cuts = [float(np.quantile(s, q)) if np.isfinite(q) else np.inf for s in sets]
        return self.chosen

    def alerts(self, x: np.ndarray) -> np.ndarray:
        """Return True where the intersection alerts."""
        return top_intersection(self.member_scores(x), self.cuts)

    def score(self, x: np.ndarray) -> np.ndarray:
        """Return a risk score: the mean member probability."""
        return np.mean(self.member_scores(x), axis=0)


def percentile_rank(reference: np.ndarray, values: np.ndarray) -> np.ndarray:
    ref = np.sort(reference)
    return np.searchsorted(ref, values, side="left") / max(len(ref), 1)


@dataclass
class CascadeEnsemble:
    """A cheap rule filter, then a classifier trained and applied only on what passes."""

    name: ModelName = "gbdt"
    model: Any = None
    chosen: Threshold | None = None

    def fit(
        self, frame: pd.DataFrame, x: np.ndarray, y: np.ndarray, seed: int = 0
    ) -> CascadeEnsemble:
        """Fit the classifier on the rows the filter passes."""
        keep = cheap_filter(frame)
        self.model = fit_model(self.name, x[keep], y[keep], seed=seed)
        return self

    def score(self, frame: pd.DataFrame, x: np.ndarray) -> np.ndarray:
        """Return the classifier's score where the filter passes, 0 elsewhere."""
        keep = cheap_filter(frame)
        out = np.zeros(len(x))
        out[keep] = scores(self.model, x[keep])
        return out

    def calibrate(
        self, frame: pd.DataFrame, x: np.ndarray, y: np.ndarray, target: float
    ) -> Threshold:
        """Choose the cut on validation data."""
        self.chosen = choose_threshold(self.score(frame, x), y, target)
        return self.chosen

    def alerts(self, frame: pd.DataFrame, x: np.ndarray) -> np.ndarray:
        """Return True where the cascade alerts."""
        cut = self.chosen.value if self.chosen else np.inf
        return self.score(frame, x) >= max(cut, 1e-12)
