"""Single models (gradient-boosted trees, logistic regression, random forest) and
precision-first thresholds chosen on a validation split."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

ModelName = Literal["gbdt", "logreg", "forest"]
MODEL_NAMES: tuple[ModelName, ...] = ("gbdt", "logreg", "forest")


def _signed_log(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


def make_model(name: ModelName, seed: int = 0) -> Any:
    """Return an unfitted classifier of one family."""
    if name == "gbdt":
        return HistGradientBoostingClassifier(
            max_iter=200,
            learning_rate=0.08,
            max_leaf_nodes=15,
            l2_regularization=1.0,
            min_samples_leaf=40,
            random_state=seed,
        )
    if name == "logreg":
        return make_pipeline(
            FunctionTransformer(_signed_log),
            StandardScaler(),
            LogisticRegression(C=0.3, max_iter=1000),
        )
    if name == "forest":
        return RandomForestClassifier(
            n_estimators=120, min_samples_leaf=5, max_depth=14, n_jobs=2, random_state=seed
        )
    raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODEL_NAMES)})")


def fit_model(
    name: ModelName, x: np.ndarray, y: np.ndarray, negatives_per_positive: int = 50, seed: int = 0
) -> Any:
    """Fit one model; negatives are subsampled (failures are rare; positives all kept)."""
    rng = np.random.default_rng(seed)
    pos = np.flatnonzero(y == 1)
    neg = np.flatnonzero(y == 0)
    if pos.size == 0:
        raise ValueError("no positive examples in the training window")
    keep = min(neg.size, max(2000, negatives_per_positive * pos.size))
    chosen = np.concatenate([pos, rng.choice(neg, size=keep, replace=False)])
    return make_model(name, seed).fit(x[chosen], y[chosen])


def scores(model: Any, x: np.ndarray) -> np.ndarray:
    """Return the failure probability of each row."""
    if len(x) == 0:
        return np.zeros(0)
    return np.asarray(model.predict_proba(x)[:, 1], dtype="float64")


@dataclass(frozen=True)
class Threshold:
    """A score cut chosen on validation data, with what it achieved there."""

    value: float
    precision: float
    recall: float
    alerts: int


def choose_threshold(
    score: np.ndarray, y: np.ndarray, target_precision: float, min_alerts: int = 5
) -> Threshold:
    """Return the lowest cut whose alerts reach target precision on validation data.

    Every cut from the top score down is considered; the lowest one that still has at
    least `min_alerts` alerts at >= target precision wins (most recall at that precision).
    When none does, the cut with the best precision among those with `min_alerts` alerts
    is returned, so callers see how short the target fell.
    """
    order = np.argsort(-score, kind="stable")
    s, t = score[order], y[order].astype("float64")
    tp = np.cumsum(t)
    alerts = np.arange(1, len(s) + 1)
    # Only cut between distinct scores: ties are alerted together.
    last_of_tie = np.r_[s[1:] != s[:-1], True]
    prec = tp / alerts
    total = max(t.sum(), 1.0)
    ok = last_of_tie & (alerts >= min_alerts)
    if not ok.any():
        return Threshold(float("inf"), 0.0, 0.0, 0)
    good = ok & (prec >= target_precision)
    i = (
        int(np.flatnonzero(good)[-1])
        if good.any()
        else int(np.flatnonzero(ok)[np.argmax(prec[ok])])
    )
    return Threshold(float(s[i]), float(prec[i]), float(tp[i] / total), int(alerts[i]))
