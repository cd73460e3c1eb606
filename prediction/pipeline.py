"""Train a predictor on stored telemetry, score the latest window, explain the top risks."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analytics.store import Store
from prediction.evaluate import Fitted, Method, fit_method, matrix
from prediction.features import (
    FEATURE_COLUMNS,
    build_features,
    window_summaries,
    xid_events,
)
from prediction.walkforward import FoldVote

REASON_FEATURES = (
    "sbe_24h",
    "remap_pending",
    "remap_corr_24h",
    "pcie_replay_24h",
    "nvlink_crc_24h",
    "temp_excess",
    "throttle_share_24h",
    "xid_remap_24h",
)


class PredictError(ValueError):
    """Input a predictor cannot use (no data, no failures, wrong file)."""


@dataclass
class Predictor:
    """A fitted method, its precision-first cut and what it predicts."""

    fitted: Fitted
    cut: float
    horizon_h: int
    target_precision: float
    features: tuple[str, ...] = FEATURE_COLUMNS

    def save(self, path: Path) -> None:
        """Write the predictor to a file."""
        path.write_bytes(pickle.dumps(self))

    @classmethod
    def load(cls, path: Path) -> Predictor:
        """Read a predictor written by `save`."""
        try:
            obj = pickle.loads(path.read_bytes())  # noqa: S301 (our own artifact)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError) as exc:
            raise PredictError(f"cannot read model {path}: {exc}") from exc
        if not isinstance(obj, cls):
            raise PredictError(f"{path} is not a trainguard predictor")
        return obj


def store_features(store: Store, start: int, end: int, bucket_s: int = 3600) -> pd.DataFrame:
    """Return the feature rows of every GPU from stored telemetry in [start, end)."""
    summaries = window_summaries(store, start, end, bucket_s)
    if summaries.empty:
        raise PredictError(f"no GPU telemetry in {store.database} between {start} and {end}")
    return build_features(summaries, xid_events(store, start, end), bucket_s)


def train(
    frame: pd.DataFrame,
    y: np.ndarray,
    method: Method,
    horizon_h: int,
    target_precision: float,
    val_share: float = 0.25,
    ttf: np.ndarray | None = None,
) -> Predictor:
    """Fit and choose the cut for the target precision.

    "vote" is the bench's walk-forward method (`FoldVote`: logreg and GBDT fold models,
    cuts chosen out of fold over all rows, alerts where both majority votes agree); it
    needs each row's time to failure `ttf` (inf: none). The others fit on the earlier part
    of the rows and choose the cut on the later part.
    """
    if y.sum() < 2:
        raise PredictError("fewer than 2 positive windows: no GPU failures to learn from")
    if method == "vote":
        if ttf is None:
            raise PredictError("the vote method needs each window's time to failure")
        try:
            vote = FoldVote(target=target_precision).fit(
                matrix(frame), frame["time"].to_numpy(float), y, ttf, horizon_h * 3600.0
            )
        except ValueError as exc:
            raise PredictError(str(exc)) from exc
        assert vote.chosen is not None
        return Predictor(Fitted("vote", vote), vote.chosen.value, horizon_h, target_precision)
    t = frame["time"].to_numpy()
    split = np.quantile(t, 1 - val_share)
    tr, va = t < split, t >= split
    if y[tr].sum() == 0 or y[va].sum() == 0:
        raise PredictError("failures fall only on one side of the train/validation split")
    fitted, chosen = fit_method(
        method,
        frame[tr],
        matrix(frame[tr]),
        y[tr],
        frame[va],
        matrix(frame[va]),
        y[va],
        target_precision,
    )
    return Predictor(fitted, chosen.value, horizon_h, target_precision)


def score_latest(predictor: Predictor, frame: pd.DataFrame) -> pd.DataFrame:
    """Return risk rows (gpu_risk columns) for the latest feature row of every GPU."""
    latest = frame.sort_values("time").drop_duplicates(["node", "gpu"], keep="last")
    latest = latest.reset_index(drop=True)
    x = matrix(latest)
    risk, alert = predictor.fitted.assess(latest, x, predictor.cut)
    return pd.DataFrame(
        {
            "ts": latest["time"].astype("int64"),
            "node": latest["node"],
            "gpu": latest["gpu"].astype("int64"),
            "uuid": latest["uuid"],
            "horizon_h": predictor.horizon_h,
            "risk": np.round(risk, 6),
            "alert": alert.astype("int64"),
            "model": predictor.fitted.method,
            "reason": [_reason(row) for _, row in latest.iterrows()],
        }
    ).sort_values("risk", ascending=False, ignore_index=True)


def _reason(row: pd.Series) -> str:
    moved = [f"{name}={row[name]:g}" for name in REASON_FEATURES if row[name] > 0]
    return ", ".join(moved[:4])
