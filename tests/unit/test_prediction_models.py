"""Threshold selection, ensembles (intersection, cascade) and evaluation metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from prediction.ensemble import (
    CascadeEnsemble,
    ParallelEnsemble,
    cheap_filter,
    top_intersection,
)
from prediction.evaluate import (
    BlockRun,
    alert_metrics,
    counter_lead,
    precision_at_budget,
    select_on_validation,
    summarize_blocks,
)
from prediction.features import FEATURE_COLUMNS, HISTORY_H
from prediction.models import Threshold, choose_threshold


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return scores where positives score higher on average, with overlap."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.05).astype(np.int8)
    return rng.normal(0, 1, n) + 2.5 * y, y


def test_threshold_reaches_target_precision_on_validation_and_holds_on_test():
    val_s, val_y = synthetic(20_000, 1)
    cut = choose_threshold(val_s, val_y, 0.9)
    assert cut.precision >= 0.9 and cut.alerts >= 5
    looser = choose_threshold(val_s, val_y, 0.6)
    assert looser.value < cut.value and looser.recall > cut.recall
    test_s, test_y = synthetic(20_000, 2)
    alert = test_s >= cut.value
    assert alert_metrics(alert, test_y)["precision"] > 0.8


def test_unreachable_precision_returns_the_best_cut_it_found():
    y = np.array([0, 1] * 50, dtype=np.int8)
    cut = choose_threshold(np.zeros(100), y, 0.9)
    assert cut.precision == 0.5 and cut.alerts == 100


def test_intersection_alerts_only_where_every_model_agrees():
    a = np.array([0.9, 0.8, 0.1, 0.7])
    b = np.array([0.9, 0.1, 0.8, 0.7])
    assert top_intersection([a, b], [0.5, 0.5]).tolist() == [True, False, False, True]


def frame(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = pd.DataFrame(0.0, index=range(n), columns=list(FEATURE_COLUMNS))
    y = (rng.random(n) < 0.05).astype(np.int8)
    weak = rng.random(n) < 0.05  # benign look-alikes: SBEs on healthy GPUs
    f["sbe_24h"] = np.where(
        y == 1, rng.lognormal(5, 1, n), np.where(weak, rng.lognormal(2, 1, n), 0)
    )
    f["temp_mean_24h"] = rng.normal(65, 2, n)
    f["node"], f["gpu"], f["time"] = "n1", np.arange(n) % 8, (np.arange(n) // 8) * 3600
    return f, y


def test_cascade_only_scores_what_the_filter_passes():
    f, y = frame(4000, 3)
    x = f[list(FEATURE_COLUMNS)].to_numpy()
    cas = CascadeEnsemble().fit(f, x, y)
    score = cas.score(f, x)
    passed = cheap_filter(f)
    assert (score[~passed] == 0).all() and (score[passed] > 0).any()
    cut = cas.calibrate(f, x, y, 0.9)
    assert cut.precision >= 0.9
    assert (cas.alerts(f, x) <= passed).all()


def test_parallel_ensemble_alerts_are_a_subset_of_each_member_top_set():
    f, y = frame(4000, 4)
    x = f[list(FEATURE_COLUMNS)].to_numpy()
    par = ParallelEnsemble(names=("gbdt", "logreg")).fit(x, y)
    par.calibrate(x, y, 0.9)
    alerts = par.alerts(x)
    for member, cut in zip(par.member_scores(x), par.cuts, strict=True):
        assert (member[alerts] >= cut).all()
    assert alert_metrics(alerts, y)["precision"] >= 0.9


def test_alert_budget_takes_the_top_gpus_of_each_day():
    f = pd.DataFrame({"time": [0, 0, 0, 86_400], "node": "n", "gpu": [0, 1, 2, 0]})
    score = np.array([0.9, 0.8, 0.1, 0.5])
    y = np.array([1, 0, 0, 1])
    assert precision_at_budget(f, score, y, 1) == 1.0
    assert precision_at_budget(f, score, y, 2) == 2 / 3


def block(method: str, val: Threshold, alert: list[bool]) -> BlockRun:
    a = np.array(alert)
    return BlockRun(method, 0.0, np.arange(len(a)), a, a.astype(float), val)


def test_selection_uses_validation_only():
    """The method that reached the target on validation with most recall wins the block,
    even where another one would have done better on the test block."""
    reached = block("gbdt", Threshold(0.5, 0.92, 0.4, 20), [True, False, False])
    missed = block("logreg", Threshold(0.5, 0.85, 0.9, 50), [True, True, True])
    wider = block("cascade", Threshold(0.5, 0.95, 0.2, 10), [False, False, False])
    chosen = select_on_validation([[reached], [missed], [wider]], 0.9)
    assert [r.method for r in chosen] == ["gbdt"]
    nobody = select_on_validation([[missed], [block("x", Threshold(0.5, 0.7, 1.0, 9), [])]], 0.9)
    assert nobody[0].method == "logreg"  # best validation precision when none reached it


def test_summary_counts_failures_and_blocks():
    f = pd.DataFrame({"time": [0, 3600, 7200], "node": "n", "gpu": 0})
    ttf = np.array([7200.0, 3600.0, np.inf])
    y = (ttf <= 86_400).astype(np.int8)
    out = summarize_blocks(
        [block("gbdt", Threshold(0.5, 1.0, 1.0, 1), [False, True, False])], f, y, ttf, 86_400
    )
    assert out["pooled"]["failures"] == 1 and out["pooled"]["failure_recall"] == 1.0
    assert out["pooled"]["precision"] == 1.0 and out["blocks"][0]["method"] == "gbdt"


def test_counter_lead_reads_how_early_new_counter_movement_began():
    """A part moving 30 h before its failure counts; a steady emitter and a silent one don't."""
    h = 3600.0
    rows = []
    for node, onset in (("a", 29.0), ("b", float(HISTORY_H)), ("c", 0.0)):
        for k in range(3):  # the last three hours before each GPU's failure at hour 10
            rows.append({"node": node, "gpu": 0, "time": (7 + k) * h, "sbe_onset_h": onset - 2 + k})
    f = pd.DataFrame(rows)
    for c in ("remap_corr", "pcie_replay", "nvlink_crc"):
        f[f"{c}_onset_h"] = 0.0
    f.loc[f["node"] == "b", "sbe_onset_h"] = float(HISTORY_H)
    f.loc[f["node"] == "c", "sbe_onset_h"] = 0.0
    ttf = 10 * h - f["time"].to_numpy()
    lead = counter_lead(f, ttf)
    assert lead["failures"] == 3 and lead["with_new_counter_movement"] == 1
    assert lead["lead_24_48h"] == 1  # 29 h of movement at the last row, 1 h before failure
    assert sum(v for k, v in lead.items() if k.startswith("lead_")) == 1
