"""Recall ceiling of the 24 h failure predictors on the design fleets: cut or separability?

For each design seed (11, 3, 29; never the held-out 41) the walk-forward runs as in the
bench (`bench.prediction_sim`: same plan, same models), and the block scores it returns
(each row's median fold rank) are cut with hindsight:
- per-block oracle: on each test block, the lowest cut whose window precision on that very
  block is >= 0.9 (the most alerts, so the most failure recall, any cut can have there);
- global oracle: one cut over all pooled test rows, at window precision 0.9, 0.8 and 0.7.
Test failures are then joined to the twin's ground truth (scorer side only, never a
feature): precursor or not, style, intensity, lead; recall at the per-block oracle cut is
broken down by them, and false alerts at the global cuts by how far their GPU is from
failing. A sensitivity check repeats the per-block oracle with the hours 24-48 h before a
failure left out of precision (right GPU, one horizon early: the twin's precursors start
up to 48 h ahead, so many of these hours already carry one).
Writes bench/results/prediction_ceiling.json.

    python -m bench.prediction_ceiling --cache DIR [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from bench.prediction_sim import DESIGN_SEEDS, MEMBERS, TARGET, _dataset
from prediction.evaluate import DAY, BlockRun
from prediction.models import choose_threshold
from prediction.walkforward import WalkForward, walk_forward
from sim.dataset import Dataset
from sim.fleet import HARDWARE_KINDS, FleetSpec
from sim.random_faults import LLAMA3_MIX, PRECURSOR_STYLES
from sim.scenario import RandomFaults

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "prediction_ceiling.json"
HORIZON_S = 24 * 3600.0
METHODS = (*MEMBERS, "two_stage")
GLOBAL_PRECISIONS = (0.9, 0.8, 0.7)
LEAD_BINS_H = (0.0, 6.0, 24.0, np.inf)


def oracle_alerts(score: np.ndarray, y: np.ndarray, target: float) -> np.ndarray:
    """Return alerts at the lowest cut reaching `target` precision on these rows (hindsight)."""
    cut = choose_threshold(score, y, target, min_alerts=1)
    if cut.precision < target:
        return np.zeros(len(score), dtype=bool)
    return score >= cut.value


def _failure_table(ds: Dataset, rows: np.ndarray, seed: int) -> pd.DataFrame:
    """Return one row per test failure with the twin's truth about its precursor."""
    f = ds.features.iloc[rows]
    ttf = ds.ttf[rows]
    hit = ttf <= HORIZON_S
    keys = pd.DataFrame(
        {
            "node": f["node"].astype(str).to_numpy()[hit],
            "gpu": f["gpu"].to_numpy().astype("int64")[hit],
            "fail": np.round(f["time"].to_numpy()[hit] + ttf[hit]).astype("int64"),
        }
    ).drop_duplicates(ignore_index=True)
    truth = pd.DataFrame(
        [
            {
                "node": str(e["component"]["node"]),  # type: ignore[index]
                "gpu": int(e["component"]["gpu"]),  # type: ignore[index]
                "fail": int(datetime.fromisoformat(str(e["onset"])).timestamp()),
                "kind": e["kind"],
                "style": (e["precursor"] or {}).get("style", "none"),  # type: ignore[attr-defined]
                "intensity": (e["precursor"] or {}).get("intensity", np.nan),  # type: ignore[attr-defined]
                "lead_h": (e["precursor"] or {}).get("lead_s", np.nan) / 3600,  # type: ignore[attr-defined]
            }
            for e in ds.truth
        ]
    )
    out = keys.merge(truth, on=["node", "gpu", "fail"], how="left", validate="one_to_one")
    out["node"] = f"s{seed}/" + out["node"]
    return out


def _caught(test: pd.DataFrame, alert: np.ndarray) -> pd.Series:
    """Return, per failure (node, gpu, fail), whether an alert fell in the horizon before it."""
    hit = test["ttf"].to_numpy() <= HORIZON_S
    ev = test.loc[hit, ["node", "gpu", "fail"]].assign(alert=alert[hit])
    return ev.groupby(["node", "gpu", "fail"])["alert"].any()


def seed_blocks(seed: int, nodes: int, days: int, cache: Path | None) -> dict[str, Any]:
    """Run the bench's 24 h walk-forward on one fleet; return its test rows, scores, truth."""
    threadpool_limits(1)
    ds = _dataset(FleetSpec(nodes=nodes, days=days, seed=seed), cache)
    y = (ds.ttf <= HORIZON_S).astype(np.int8)
    plan = WalkForward(target=TARGET, extra=("two_stage",))
    runs = walk_forward(ds.features, y, ds.ttf, HORIZON_S, MEMBERS, plan)
    rows = np.concatenate([r.rows for r in runs[METHODS[0]]])
    test = ds.features.iloc[rows][["node", "gpu", "time"]].reset_index(drop=True)
    test["node"] = f"s{seed}/" + test["node"].astype(str)
    test["ttf"] = ds.ttf[rows]
    fail = test["time"].to_numpy() + test["ttf"].to_numpy()
    test["fail"] = np.where(np.isfinite(fail), np.round(fail), -1).astype("int64")  # -1: none
    test["block"] = np.concatenate(
        [np.full(len(r.rows), f"s{seed}/{r.start_day}") for r in runs[METHODS[0]]]
    )
    per_method: dict[str, dict[str, np.ndarray]] = {}
    for m in METHODS:
        blocks: list[BlockRun] = runs[m]
        per_method[m] = {
            "score": np.concatenate([b.score for b in blocks]),
            "alert": np.concatenate([b.alert for b in blocks]),
        }
    return {"test": test, "methods": per_method, "failures": _failure_table(ds, rows, seed)}


def _window(test: pd.DataFrame, alert: np.ndarray) -> dict[str, Any]:
    """Return window precision, alerts and failure recall of pooled alerts."""
    y = test["ttf"].to_numpy() <= HORIZON_S
    n = int(alert.sum())
    return {
        "window_precision": round(float(y[alert].mean()), 4) if n else None,
        "alerts": n,
        "failure_recall": round(float(_caught(test, alert).mean()), 4),
    }


def _false_alerts(test: pd.DataFrame, alert: np.ndarray) -> dict[str, int]:
    """Return false alert-hours by how long until their GPU fails."""
    ttf = test["ttf"].to_numpy()[alert & (test["ttf"].to_numpy() > HORIZON_S)]
    return {
        "fails_in_24_48h": int((ttf <= 2 * DAY).sum()),
        "fails_in_2_7d": int(((ttf > 2 * DAY) & (ttf <= 7 * DAY)).sum()),
        "later_or_never": int((ttf > 7 * DAY).sum()),
    }


def _breakdown(failures: pd.DataFrame, caught: pd.Series) -> dict[str, Any]:
    """Return failure count and recall by precursor, style, intensity quartile and lead."""
    f = failures.set_index(["node", "gpu", "fail"]).assign(caught=caught).fillna({"caught": False})
    pre = f[f["style"] != "none"]
    quart = pd.qcut(pre["intensity"], 4)
    lead = pd.cut(pre["lead_h"], LEAD_BINS_H, right=False)
    groups = {
        "all": f,
        "no_precursor": f[f["style"] == "none"],
        "precursor": pre,
        **{f"style_{s}": g for s, g in pre.groupby("style")},
        **{
            f"intensity_q{i + 1}_{iv.left:.3f}_{iv.right:.3f}": g
            for i, (iv, g) in enumerate(pre.groupby(quart, observed=True))
        },
        **{f"lead_{iv.left:g}_{iv.right:g}h": g for iv, g in pre.groupby(lead, observed=True)},
        "lead_ge_6h": pre[pre["lead_h"] >= 6],
    }
    return {
        k: {"failures": len(g), "recall": round(float(g["caught"].mean()), 4)}
        for k, g in groups.items()
        if len(g)
    }


def ceiling(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Pool the seeds' test rows; return actual, per-block-oracle and global-oracle results."""
    test = pd.concat([p["test"] for p in parts], ignore_index=True)
    failures = pd.concat([p["failures"] for p in parts], ignore_index=True)
    ttf = test["ttf"].to_numpy()
    y = (ttf <= HORIZON_S).astype(np.int8)
    early = (ttf > HORIZON_S) & (ttf <= 2 * HORIZON_S)  # right GPU, one horizon too soon
    out: dict[str, Any] = {}
    for m in METHODS:
        score = np.concatenate([p["methods"][m]["score"] for p in parts])
        actual = np.concatenate([p["methods"][m]["alert"] for p in parts])
        oracle = _block_oracle(test, score, y, np.ones(len(test), dtype=bool))
        caught = _caught(test, oracle)
        kept = ~early
        lenient = _block_oracle(test, score, y, kept)  # never alerts on the early hours
        global_cuts = {}
        for p in GLOBAL_PRECISIONS:
            alert = oracle_alerts(score, y, p)
            global_cuts[f"precision_{p:g}"] = {
                **_window(test, alert),
                "false_alert_hours": _false_alerts(test, alert),
                "recall_by_truth": _breakdown(failures, _caught(test, alert)),
            }
        out[m] = {
            "walk_forward_cut": _window(test, actual),
            "per_block_oracle_0.9": {
                **_window(test, oracle),
                "recall_by_truth": _breakdown(failures, caught),
            },
            "per_block_oracle_0.9_hours_24_48h_before_failure_ignored": {
                **_window(test[kept], lenient[kept]),
                "recall_by_truth": _breakdown(failures, _caught(test, lenient)),
            },
            "global_oracle": global_cuts,
        }
    counts = {k: v["failures"] for k, v in _breakdown(failures, pd.Series(dtype=bool)).items()}
    return {"test_failures": counts, "methods": out}


def onset_oracle(
    lead_s: tuple[float, float], horizon_s: float, precursor_share: float, step_s: float = 3600.0
) -> list[dict[str, float]]:
    """Return the best alert rules of a predictor that knows each precursor's onset exactly.

    Leads are spread evenly over `lead_s`; a row every `step_s` while a precursor runs; a
    row at age a (time since onset) is positive when the failure is within the horizon.
    Such a predictor knows a, not the lead, so its best rules alert from some age a0 on:
    precision is the share of positive rows among those alerted, failure recall the share
    of failures with a precursor older than a0, times `precursor_share` (silent failures are
    never caught). One entry per a0 (hours).
    """
    leads = np.linspace(*lead_s, 2001)
    out = []
    for a0 in np.arange(0.0, lead_s[1] / step_s) * step_s:
        alerted = positive = 0.0
        for lead in leads:
            age = np.arange(a0, lead, step_s)
            alerted += age.size
            positive += int(np.count_nonzero(lead - age <= horizon_s))
        caught = float(np.mean(leads > a0)) * precursor_share
        if alerted:
            out.append(
                {
                    "alert_from_age_h": float(a0 / 3600),
                    "precision": round(positive / alerted, 4),
                    "failure_recall": round(caught, 4),
                }
            )
    return out


def twin_precursor_share() -> float:
    """Return the share of the prediction fleet's GPU failures that get a precursor."""
    kinds = dict(LLAMA3_MIX)
    hardware = sum(kinds[k] for k in HARDWARE_KINDS)
    with_style = sum(kinds[k] for k in PRECURSOR_STYLES)
    return FleetSpec().precursor_share * with_style / hardware


def _block_oracle(
    test: pd.DataFrame, score: np.ndarray, y: np.ndarray, kept: np.ndarray
) -> np.ndarray:
    """Return per-block oracle alerts among `kept` rows (the others never alert)."""
    alert = np.zeros(len(test), dtype=bool)
    for idx in test.groupby("block").indices.values():
        rows = idx[kept[idx]]
        alert[rows] = oracle_alerts(score[rows], y[rows], TARGET)
    return alert


def main(argv: list[str] | None = None) -> None:
    """Run the ceiling analysis on the design seeds and write its JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--cache", type=Path, default=None)
    p.add_argument("--out", type=Path, default=RESULTS)
    a = p.parse_args(argv)
    run = partial(seed_blocks, nodes=a.nodes, days=a.days, cache=a.cache)
    with ProcessPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(run, DESIGN_SEEDS))
    result = {
        "seeds": list(DESIGN_SEEDS),
        "horizon_h": 24,
        "target_precision": TARGET,
        "note": "hindsight cuts on the walk-forward's own block scores (median fold rank); "
        "truth read only to break recall down, never as a feature",
        **ceiling(parts),
        "onset_oracle": {
            "note": "knows each precursor's onset exactly, not its lead; the twin's lead "
            "range and precursor share; best rules alert once a precursor is a0 hours old",
            "precursor_share": round(twin_precursor_share(), 4),
            "rules": onset_oracle(
                RandomFaults().precursor_lead_s, HORIZON_S, twin_precursor_share()
            ),
        },
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"[ceiling] wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
