"""GPU failure prediction benchmark: the twin's fleet and Titan's real GPU history.

Simulator (bench.prediction_sim): several generated fleets (one held out), features per
GPU-hour, labels from the ground truth; walk-forward test blocks with cuts chosen out of
fold on all labelled history before each block; window-level and alert-level metrics.
Titan: monthly snapshots; every choice made on 2017 validation snapshots, the test model
refit on every label known by 2018 (censored GPUs left out), tested on 2018 against age-only,
location-only, oldest-first and longest-in-service-first baselines, static and refit monthly.
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

from bench import titan
from bench.prediction_sim import simulator
from prediction.models import choose_threshold, fit_model, scores

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "prediction.json"
TARGET = 0.9
TITAN_BUDGETS = (50, 100, 200)  # GPUs alerted per monthly snapshot
# The model's share in the rank blend with the prior; never 1: trees are flat beyond the
# operating times they were trained on, and every later snapshot's old GPUs lie beyond them.
PRIOR_WEIGHTS = (0.25, 0.5, 0.75)
TITAN_PRIORS = ("operating_days",)  # longest in service first: wear grows with operating time
TITAN_METRICS = ("average_precision", *(f"precision_at_{k}_per_snapshot" for k in TITAN_BUDGETS))
TITAN_BASELINES = ("age_only", "location_only", "age_oldest_first", "operating_longest_first")
TITAN_FITTED = {
    "model": titan.ALL_FEATURES,
    "age_only": ("age_days",),
    "location_only": titan.LOCATION_FEATURES,
}
TITAN_START, VAL_START, TEST_START, TEST_END = (
    pd.Timestamp(d) for d in ("2015-01-01", "2017-01-01", "2018-01-01", "2019-01-01")
)


def _log(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def _titan_fit(train: pd.DataFrame, cols: tuple[str, ...]) -> Any:
    return fit_model("gbdt", train[list(cols)].to_numpy(float), train["y"].to_numpy(), 20)


def _titan_scores(model: Any, test: pd.DataFrame, cols: tuple[str, ...]) -> np.ndarray:
    return scores(model, test[list(cols)].to_numpy(float))


def _titan_metrics(test: pd.DataFrame, score: np.ndarray) -> dict[str, float]:
    y = test["y"].to_numpy()
    out = {"average_precision": round(float(average_precision_score(y, score)), 4)}
    for k in TITAN_BUDGETS:
        per_snapshot = [
            titan.precision_at_k(score[g.index], y[g.index], k) for _, g in test.groupby("time")
        ]
        out[f"precision_at_{k}_per_snapshot"] = round(float(np.mean(per_snapshot)), 4)
    return out


def _titan_scoreboard(train: pd.DataFrame, frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Return the model's and every baseline's scores on `frame`, the fitted ones fit on `train`."""
    board = {
        name: _titan_scores(_titan_fit(train, c), frame, c) for name, c in TITAN_FITTED.items()
    }
    board["age_oldest_first"] = frame["age_days"].to_numpy(float)
    board["operating_longest_first"] = frame["operating_days"].to_numpy(float)
    return board


def _titan_blend(frame: pd.DataFrame, score: np.ndarray, prior: str, weight: float) -> np.ndarray:
    return titan.blend_with_prior(frame, score, frame[prior].to_numpy(float), weight)


def _worst_ratio(metrics: dict[str, float], strongest: dict[str, float]) -> float:
    return min(metrics[m] / strongest[m] if strongest[m] else 1.0 for m in TITAN_METRICS)


def _titan_choose_blend(val: pd.DataFrame, board: dict[str, np.ndarray]) -> dict[str, Any]:
    """Pick the prior and weight whose worst ratio to the strongest baseline on validation,
    over average precision and every budget, is highest (then average precision)."""
    base = {name: _titan_metrics(val, board[name]) for name in TITAN_BASELINES}
    strongest = {m: max(b[m] for b in base.values()) for m in TITAN_METRICS}
    tried = {
        (prior, w): _titan_metrics(val, _titan_blend(val, board["model"], prior, w))
        for prior in TITAN_PRIORS
        for w in PRIOR_WEIGHTS
    }
    prior, weight = max(
        tried,
        key=lambda k: (_worst_ratio(tried[k], strongest), tried[k]["average_precision"]),
    )
    return {
        "prior": prior,
        "weight": weight,
        "validation": tried[(prior, weight)],
        "validation_worst_ratio_to_strongest_baseline": round(
            _worst_ratio(tried[(prior, weight)], strongest), 3
        ),
        "validation_baselines": base,
    }


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def _titan_times(frame: pd.DataFrame) -> list[pd.Timestamp]:
    return [pd.Timestamp(t) for t in frame["time"].drop_duplicates()]


def _titan_sliding(frames: pd.DataFrame, test: pd.DataFrame, horizon_days: int) -> np.ndarray:
    """Score each test snapshot with a model refit on every snapshot whose labels are known then.

    The window grows from 2015 to `at - horizon` (t + horizon <= at), censored rows left out.
    """
    score = np.zeros(len(test))
    for at in _titan_times(test):
        rows = np.flatnonzero(test["time"] == at)
        train = titan.trainable(frames[frames["time"] >= TITAN_START], horizon_days, at)
        model = _titan_fit(train, titan.ALL_FEATURES)
        score[rows] = _titan_scores(model, test.loc[rows], titan.ALL_FEATURES)
    return score


def _titan_drift(
    test: pd.DataFrame, static: np.ndarray, sliding: np.ndarray
) -> list[dict[str, Any]]:
    y = test["y"].to_numpy()
    return [
        {
            "snapshot": at.strftime("%Y-%m"),
            "p100_static": titan.precision_at_k(static[rows], y[rows], 100),
            "p100_sliding": titan.precision_at_k(sliding[rows], y[rows], 100),
        }
        for at in _titan_times(test)
        for rows in [np.flatnonzero(test["time"] == at)]
    ]


def titan_eval(horizon_days: int) -> dict[str, Any]:
    """Choose on 2017 (trained on labels known by 2017), test on 2018 (labels known by 2018).

    Validation snapshots run 2017-01 to 2018-01 minus the horizon, so their labels are known
    when the test starts; the test model is refit on every label known by then.
    """
    lives = titan.load_lives()
    frames = titan.snapshots(lives, titan.monthly("2015-01-01", "2019-01-01"), horizon_days)
    in_time = frames["time"]
    val = frames[(in_time >= VAL_START) & (in_time <= TEST_START - pd.Timedelta(days=horizon_days))]
    val = val.reset_index(drop=True)
    test = frames[(in_time >= TEST_START) & (in_time <= TEST_END)].reset_index(drop=True)
    history = frames[in_time >= TITAN_START]
    val_board = _titan_scoreboard(titan.trainable(history, horizon_days, VAL_START), val)
    blend = _titan_choose_blend(val, val_board)
    cut = choose_threshold(val_board["model"], val["y"].to_numpy(), TARGET, 20)
    board = _titan_scoreboard(titan.trainable(history, horizon_days, TEST_START), test)
    prior, weight = blend["prior"], blend["weight"]
    sliding = _titan_blend(test, _titan_sliding(frames, test, horizon_days), prior, weight)
    static = _titan_blend(test, board["model"], prior, weight)
    out: dict[str, Any] = {
        "horizon_days": horizon_days,
        "validation_snapshots": f"{val['time'].min():%Y-%m}..{val['time'].max():%Y-%m}",
        "test_base_rate": round(float(test["y"].mean()), 4),
        # 0.9 precision is out of reach on Titan: the best cut on validation falls far short.
        "validation_best_cut": {"precision": round(cut.precision, 3), "alerts": cut.alerts},
        **{name: _titan_metrics(test, s) for name, s in board.items()},
        "model_with_prior": {**blend, **_titan_metrics(test, static)},
        "model_sliding_with_prior": _titan_metrics(test, sliding),
        "drift_p100": _titan_drift(test, static, sliding),
    }
    out["lift"] = {
        f"{model}_vs_{base}": {m: _ratio(out[model][m], out[base][m]) for m in TITAN_METRICS}
        for model in ("model", "model_with_prior", "model_sliding_with_prior")
        for base in TITAN_BASELINES
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
