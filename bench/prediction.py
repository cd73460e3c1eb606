"""GPU failure prediction benchmark: the twin's fleet and Titan's real GPU history.

Simulator (bench.prediction_sim): several generated fleets (one held out), features per
GPU-hour, labels from the ground truth; walk-forward test blocks with cuts chosen out of
fold on all labelled history before each block; window-level and alert-level metrics.
Titan: monthly snapshots, train on the early years, test on later ones, against age-only
and location-only baselines.
Prints JSON and writes bench/results/prediction.json.

    python -m bench.prediction [--nodes 64] [--days 30] [--only simulator|titan]
        [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score

from analytics.prediction import titan
from analytics.prediction.evaluate import alert_metrics
from analytics.prediction.models import choose_threshold, fit_model, scores
from bench.prediction_sim import simulator

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "prediction.json"
TARGET = 0.9
TITAN_BUDGETS = (50, 100, 200)  # GPUs alerted per monthly snapshot
PRIOR_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # model share in the rank blend with age


def _log(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def _titan_fit(train: pd.DataFrame, cols: tuple[str, ...]) -> Any:
    return fit_model("gbdt", train[list(cols)].to_numpy(float), train["y"].to_numpy(), 20)


def _titan_scores(model: Any, test: pd.DataFrame, cols: tuple[str, ...]) -> np.ndarray:
    return scores(model, test[list(cols)].to_numpy(float))


def _titan_metrics(test: pd.DataFrame, score: np.ndarray, val_cut: float | None) -> dict[str, Any]:
    y = test["y"].to_numpy()
    out: dict[str, Any] = {"average_precision": round(float(average_precision_score(y, score)), 4)}
    for k in TITAN_BUDGETS:
        per_snapshot = [
            titan.precision_at_k(score[g.index], y[g.index], k) for _, g in test.groupby("time")
        ]
        out[f"precision_at_{k}_per_snapshot"] = round(float(np.mean(per_snapshot)), 4)
    if val_cut is not None:
        out["at_validation_cut"] = alert_metrics(score >= val_cut, y)
    return out


def _titan_prior(static: Any, val: pd.DataFrame, test: pd.DataFrame) -> dict[str, Any]:
    """Blend the model's rank with the oldest-first rank; the weight is chosen on validation."""
    cols = titan.ALL_FEATURES

    def blended(frame: pd.DataFrame, w: float) -> np.ndarray:
        score = _titan_scores(static, frame, cols)
        return titan.blend_with_prior(frame, score, frame["age_days"].to_numpy(float), w)

    on_val = {w: _titan_metrics(val, blended(val, w), None) for w in PRIOR_WEIGHTS}
    weight = max(
        PRIOR_WEIGHTS,
        key=lambda w: (
            on_val[w]["precision_at_100_per_snapshot"],
            on_val[w]["average_precision"],
        ),
    )
    return {
        "weight": weight,
        "validation": on_val[weight],
        **_titan_metrics(test, blended(test, weight), None),
    }


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def _titan_sliding(
    lives: pd.DataFrame,
    test: pd.DataFrame,
    static: Any,
    test_times: list[pd.Timestamp],
    horizon_days: int,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Score each test snapshot with a model refit every half year on the two years before.

    Only snapshots whose horizon ended before the refit train it, so labels are known.
    """
    score = np.zeros(len(test))
    drift = []
    model = None
    for i, at in enumerate(test_times):
        if i % 6 == 0:
            recent = [
                t
                for t in titan.monthly("2015-01-01", "2019-01-01")[::2]
                if at - pd.DateOffset(years=2) <= t and t + pd.Timedelta(days=horizon_days) <= at
            ]
            model = _titan_fit(titan.snapshots(lives, recent, horizon_days), titan.ALL_FEATURES)
        rows = test.index[test["time"] == at]
        snap = test.loc[rows]
        score[rows] = _titan_scores(model, snap, titan.ALL_FEATURES)
        y = snap["y"].to_numpy()
        drift.append(
            {
                "snapshot": at.strftime("%Y-%m"),
                "p100_static": titan.precision_at_k(
                    _titan_scores(static, snap, titan.ALL_FEATURES), y, 100
                ),
                "p100_sliding": titan.precision_at_k(score[rows], y, 100),
            }
        )
    return score, drift


def titan_eval(horizon_days: int) -> dict[str, Any]:
    """Train on 2015-2017 snapshots, test on 2018 ones; model vs age-only and location-only."""
    lives = titan.load_lives()
    train_times = titan.monthly("2015-01-01", "2016-12-01")
    val_times = titan.monthly("2017-01-01", "2017-06-01")
    test_times = titan.monthly("2018-01-01", "2019-01-01")
    train = titan.snapshots(lives, train_times, horizon_days)
    val = titan.snapshots(lives, val_times, horizon_days)
    test = titan.snapshots(lives, test_times, horizon_days)
    out: dict[str, Any] = {
        "horizon_days": horizon_days,
        "test_base_rate": round(float(test["y"].mean()), 4),
    }
    static = None
    for name, cols in (
        ("model", titan.ALL_FEATURES),
        ("age_only", ("age_days",)),
        ("location_only", titan.LOCATION_FEATURES),
    ):
        fitted = _titan_fit(train, cols)
        static = fitted if name == "model" else static
        cut = choose_threshold(_titan_scores(fitted, val, cols), val["y"].to_numpy(), TARGET, 20)
        out[name] = _titan_metrics(test, _titan_scores(fitted, test, cols), cut.value)
    out["age_oldest_first"] = _titan_metrics(test, test["age_days"].to_numpy(float), None)
    out["model_with_age_prior"] = _titan_prior(static, val, test)
    sliding, drift = _titan_sliding(lives, test, static, test_times, horizon_days)
    out["model_sliding"] = _titan_metrics(test, sliding, None)
    out["drift_p100"] = drift
    out["lift"] = {
        f"{model}_vs_{base}": {
            metric: _ratio(out[model][metric], out[base][metric])
            for metric in ("average_precision", "precision_at_100_per_snapshot")
        }
        for model in ("model", "model_sliding", "model_with_age_prior")
        for base in ("age_only", "age_oldest_first", "location_only")
    }
    return out


def main() -> None:
    """Run both parts and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--cache", type=Path, help="keep simulated fleets here (pickles)")
    parser.add_argument(
        "--only",
        choices=("simulator", "titan"),
        help="rerun one part; the other is kept from --out",
    )
    args = parser.parse_args()
    kept = json.loads(args.out.read_text()) if args.only and args.out.is_file() else {}
    result = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "simulator": kept.get("simulator"),
        "titan": kept.get("titan"),
    }
    if args.only != "simulator":
        result["titan"] = [titan_eval(h) for h in (90, 180)]
        _log("titan done")
    if args.only != "titan":
        result["simulator"] = simulator(args.nodes, args.days, args.cache)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
