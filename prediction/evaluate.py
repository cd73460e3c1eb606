"""Time-split evaluation: precision-first alerts, alert budgets, sliding-window retraining."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from prediction.ensemble import CascadeEnsemble, ParallelEnsemble
from prediction.features import FEATURE_COLUMNS, HISTORY_H, RATE_COUNTERS
from prediction.models import (
    ModelName,
    Threshold,
    choose_threshold,
    fit_model,
    scores,
)

Method = Literal["gbdt", "logreg", "forest", "parallel", "cascade", "vote"]
DAY = 86_400


def alert_metrics(alert: np.ndarray, y: np.ndarray) -> dict[str, float | int]:
    """Return precision, recall and F1 of alerts against window labels."""
    tp = int((alert & (y == 1)).sum())
    n_alert, n_pos = int(alert.sum()), int((y == 1).sum())
    precision = tp / n_alert if n_alert else 0.0
    recall = tp / n_pos if n_pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "alerts": n_alert,
        "positives": n_pos,
    }


def failure_recall(
    frame: pd.DataFrame, alert: np.ndarray, ttf: np.ndarray, horizon_s: float
) -> float:
    """Return the share of failures (GPU, failure time) with an alert within the horizon."""
    hit = ttf <= horizon_s
    if not hit.any():
        return 0.0
    event = frame.loc[hit, ["node", "gpu"]].assign(fail=(frame["time"].to_numpy() + ttf)[hit])
    event["alert"] = alert[hit]
    per_failure = event.groupby(["node", "gpu", "fail"])["alert"].any()
    return float(per_failure.mean())


def counter_lead(frame: pd.DataFrame, ttf: np.ndarray) -> dict[str, float | int]:
    """Return how long before each failure its error counters had been moving (telemetry only).

    For every failure, the GPU's last feature row before it: the latest onset over its
    counters (`*_onset_h`), counting only counters that started moving within the week (a
    counter moving the whole week is a steady emitter, not a precursor). Benign emitters
    that start by chance spread evenly over the week; precursors pile up in the days just
    before failures. The 24 h bins show where the pile ends, so a horizon can be read off
    a cluster's own history instead of the simulator's settings.
    """
    seen = np.isfinite(ttf) & (ttf > 0)
    rows = frame.loc[seen, ["node", "gpu"]].assign(
        fail=np.round(frame["time"].to_numpy()[seen] + ttf[seen]), ttf=ttf[seen]
    )
    onsets = frame.loc[seen, [f"{c}_onset_h" for c in RATE_COUNTERS]].to_numpy()
    new = np.where((onsets > 0) & (onsets < HISTORY_H), onsets, 0.0).max(axis=1)
    rows["onset_h"] = new + rows["ttf"].to_numpy() / 3600  # from the first move to the failure
    rows["moved"] = new > 0
    last = rows.sort_values("ttf").drop_duplicates(["node", "gpu", "fail"])
    moved = last.loc[last["moved"], "onset_h"].to_numpy()
    out: dict[str, float | int] = {
        "failures": len(last),
        "with_new_counter_movement": int(moved.size),
    }
    edges = np.arange(0, HISTORY_H + 24, 24)
    counts = np.histogram(moved, bins=edges)[0]
    for lo, hi, n in zip(edges[:-1], edges[1:], counts, strict=True):
        out[f"lead_{lo}_{hi}h"] = int(n)
    return out


def precision_at_budget(
    frame: pd.DataFrame, score: np.ndarray, y: np.ndarray, per_day: int
) -> float:
    """Return precision when only the top `per_day` GPUs of each day are alerted."""
    f = pd.DataFrame(
        {
            "day": frame["time"].to_numpy() // DAY,
            "node": frame["node"].to_numpy(),
            "gpu": frame["gpu"].to_numpy(),
            "score": score,
            "y": y,
        }
    )
    best = f.sort_values("score", ascending=False).drop_duplicates(["day", "node", "gpu"])
    top = best.groupby("day", sort=False).head(per_day)
    top = top[top["score"] > 0]
    return float(top["y"].mean()) if len(top) else 0.0


@dataclass
class Fitted:
    """A fitted method with its threshold, able to score and alert."""

    method: Method
    model: Any  # a classifier, an ensemble, or a FoldVote (method "vote")

    def score(self, frame: pd.DataFrame, x: np.ndarray) -> np.ndarray:
        """Return risk scores."""
        if isinstance(self.model, ParallelEnsemble):
            return self.model.score(x)
        if self.method == "vote":
            return self.model.predict(x)[1]
        if isinstance(self.model, CascadeEnsemble):
            return self.model.score(frame, x)
        return scores(self.model, x)

    def assess(
        self, frame: pd.DataFrame, x: np.ndarray, cut: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return (risk scores, alerts at the validation cut); the vote and the ensembles
        keep their own cuts. The models score each row once where the alerts follow from
        the scores."""
        if self.method == "vote":
            alerts, risk = self.model.predict(x)
            return risk, alerts
        if isinstance(self.model, ParallelEnsemble):
            return self.model.score(x), self.model.alerts(x)
        if isinstance(self.model, CascadeEnsemble):
            return self.model.score(frame, x), self.model.alerts(frame, x)
        risk = self.score(frame, x)
        return risk, risk >= cut


def fit_method(
    method: Method,
    frame: pd.DataFrame,
    x: np.ndarray,
    y: np.ndarray,
    vframe: pd.DataFrame,
    vx: np.ndarray,
    vy: np.ndarray,
    target: float,
    seed: int = 0,
) -> tuple[Fitted, Threshold]:
    """Fit on the training split, choose the cut on the validation split.

    The threshold says what the cut achieved on validation; for the parallel ensemble its
    value is the members' common top fraction (their own cuts live in the ensemble).
    """
    if method == "parallel":
        par = ParallelEnsemble().fit(x, y, seed)
        return Fitted(method, par), par.calibrate(vx, vy, target)
    if method == "cascade":
        cas = CascadeEnsemble().fit(frame, x, y, seed)
        return Fitted(method, cas), cas.calibrate(vframe, vx, vy, target)
    if method == "vote":
        raise ValueError("the vote chooses its cut out of fold on all rows, not on a split")
    name: ModelName = method
    fitted = Fitted(method, fit_model(name, x, y, seed=seed))
    return fitted, choose_threshold(fitted.score(vframe, vx), vy, target)


def matrix(frame: pd.DataFrame) -> np.ndarray:
    """Return the model inputs of a feature frame."""
    return frame[list(FEATURE_COLUMNS)].to_numpy(dtype="float64")


def time_split_eval(
    frame: pd.DataFrame,
    y: np.ndarray,
    ttf: np.ndarray,
    horizon_s: float,
    method: Method,
    target: float,
    train_days: float,
    val_days: float,
    step_days: float,
    sliding: bool,
    budget_per_day: int = 3,
) -> dict[str, Any]:
    """Evaluate one method on consecutive test blocks after an initial train+val period.

    Train labels must be fully observed before validation starts and validation labels
    before the test block starts (a gap of one horizon), so nothing peeks ahead.
    """
    x = matrix(frame)
    t = frame["time"].to_numpy()
    t0 = t.min()
    start = t0 + (train_days + val_days) * DAY
    runs: list[BlockRun] = []
    fitted, chosen = None, Threshold(float("inf"), 0.0, 0.0, 0)
    while start < t.max():
        if fitted is None or sliding:
            v0 = start - val_days * DAY
            tr = (t >= v0 - train_days * DAY) & (t + horizon_s < v0)
            va = (t >= v0) & (t + horizon_s < start)
            fitted, chosen = fit_method(
                method, frame[tr], x[tr], y[tr], frame[va], x[va], y[va], target
            )
        te = (t >= start) & (t < start + step_days * DAY)
        score, alert = fitted.assess(frame[te], x[te], chosen.value)
        runs.append(
            BlockRun(method, round((start - t0) / DAY, 1), np.flatnonzero(te), alert, score, chosen)
        )
        start += step_days * DAY
    return summarize_blocks(runs, frame, y, ttf, horizon_s, budget_per_day)


@dataclass
class BlockRun:
    """One test block of one method: its rows, alerts, scores and the validation cut."""

    method: str
    start_day: float
    rows: np.ndarray
    alert: np.ndarray
    score: np.ndarray
    val: Threshold


def summarize_blocks(
    runs: list[BlockRun],
    frame: pd.DataFrame,
    y: np.ndarray,
    ttf: np.ndarray,
    horizon_s: float,
    budget_per_day: int = 3,
) -> dict[str, Any]:
    """Return pooled and per-block test metrics of consecutive blocks (with their runs)."""
    blocks = [
        {
            "start_day": float(r.start_day),
            "method": r.method,
            **_round(alert_metrics(r.alert, y[r.rows])),
            "val_precision": round(r.val.precision, 4),
            "val_recall": round(r.val.recall, 4),
        }
        for r in runs
    ]
    rows = np.concatenate([r.rows for r in runs])
    alert = np.concatenate([r.alert for r in runs])
    score = np.concatenate([r.score for r in runs])
    test = frame.iloc[rows].reset_index(drop=True)
    pooled = alert_metrics(alert, y[rows])
    pooled["failure_recall"] = failure_recall(test, alert, ttf[rows], horizon_s)
    pooled["failures"] = int(_failures(test, ttf[rows], horizon_s))
    pooled[f"precision_at_top{budget_per_day}_per_day"] = precision_at_budget(
        test, score, y[rows], budget_per_day
    )
    return {"pooled": _round(pooled), "blocks": blocks, "runs": runs}


def select_on_validation(candidates: list[list[BlockRun]], target: float) -> list[BlockRun]:
    """Pick, block by block, the method whose validation cut did best; never the test.

    Best: reached the target precision on validation with the most validation recall;
    when none reached it, the best validation precision.
    """
    chosen = []
    for block in zip(*candidates, strict=True):
        chosen.append(
            max(
                block,
                key=lambda r: (
                    r.val.precision >= target,
                    r.val.recall if r.val.precision >= target else r.val.precision,
                ),
            )
        )
    return chosen


def _failures(frame: pd.DataFrame, ttf: np.ndarray, horizon_s: float) -> int:
    hit = ttf <= horizon_s
    fail = frame["time"].to_numpy()[hit] + ttf[hit]
    keys = pd.DataFrame(
        {"node": frame["node"].to_numpy()[hit], "gpu": frame["gpu"].to_numpy()[hit], "fail": fail}
    )
    return len(keys.drop_duplicates())


def _round(m: dict[str, float | int]) -> dict[str, float | int]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()}
