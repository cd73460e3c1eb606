"""Walk-forward cuts, ambiguous training negatives, on-call pages, benign throttling."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from prediction.features import FEATURE_COLUMNS
from prediction.models import choose_threshold, scores
from prediction.walkforward import (
    FoldVote,
    Rows,
    TwoStage,
    WalkForward,
    alert_level,
    fold_rank,
    fold_vote,
    oof_scores,
    training_rows,
    walk_forward,
)
from sim.gpus import COMPUTE, THROTTLE_HW_SLOWDOWN, THROTTLE_SW_THERMAL, GpuState
from sim.wear import BENIGN_HEAT, Wear, WearSpec

H, DAY = 86_400.0, 86_400.0


def test_ambiguous_negatives_leave_training_but_positives_and_far_ones_stay():
    ttf = np.array([3600.0, H, H + 1, 2 * H, 2 * H + 1, np.inf])
    keep = training_rows(np.zeros(6), ttf, H, exclude=True)
    assert keep.tolist() == [True, True, False, False, True, True]
    assert training_rows(np.zeros(6), ttf, H, exclude=False).all()


def pages(t: list[float], ttf: list[float], gpu: list[int] | None = None) -> pd.DataFrame:
    n = len(t)
    return pd.DataFrame({"node": "n1", "gpu": gpu or [0] * n, "time": t, "ttf": ttf})


def test_pages_are_deduplicated_per_gpu_and_true_only_within_the_horizon():
    hour = 3600.0
    # GPU 0 alerts every hour from 30 h before its failure: one early page (fails too late
    # for the horizon), then a true one 24 h later; GPU 1 alerts once and never fails.
    t0 = [k * hour for k in range(30)]
    f = pages([*t0, 0.0], [30 * hour - t for t in t0] + [np.inf], [0] * 30 + [1])
    alert = np.ones(len(f), dtype=bool)
    out = alert_level(f, alert, f["ttf"].to_numpy(), H, cooldown_s=24 * hour)
    assert (out["pages"], out["true_pages"], out["early_pages"]) == (3, 1, 1)
    assert out["failure_recall"] == 1.0 and out["precision"] == round(1 / 3, 4)
    first = alert_level(f, alert, f["ttf"].to_numpy(), H, cooldown_s=np.inf)
    assert (first["pages"], first["true_pages"]) == (2, 0)  # the first page came too early


def synthetic_fleet(days: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Hourly rows of 40 GPUs; GPUs fail at random and their SBE rate climbs for a day."""
    rng = np.random.default_rng(seed)
    hours = np.arange(days * 24) * 3600.0
    rows = []
    for g in range(40):
        fail = rng.uniform(0, days * DAY) if rng.random() < 0.6 else np.inf
        ttf = np.where(hours < fail, fail - hours, np.inf)
        weak = rng.random() < 0.2
        sbe = np.where(ttf <= H, rng.lognormal(4, 0.5, len(hours)), 0.0)
        sbe = sbe + (rng.lognormal(2.5, 1.0, len(hours)) if weak else 0.0)
        rows.append(
            pd.DataFrame(
                {"node": f"n{g // 8}", "gpu": g % 8, "time": hours, "sbe_24h": sbe, "ttf": ttf}
            )
        )
    f = pd.concat(rows, ignore_index=True)
    for c in FEATURE_COLUMNS:
        if c not in f:
            f[c] = 0.0
    return f, f.pop("ttf").to_numpy()


def test_walk_forward_cuts_never_see_the_test_block_or_later_labels():
    f, ttf = synthetic_fleet(20, 5)
    y = (ttf <= H).astype(np.int8)
    plan = WalkForward(first_test_day=10, step_days=5, folds=3)
    runs = walk_forward(f, y, ttf, H, ("logreg",), plan)
    # Rewrite every label that resolves after the first block starts: its cut must not move.
    late = f["time"].to_numpy() + H >= f["time"].min() + 10 * DAY
    y2, ttf2 = y.copy(), ttf.copy()
    y2[late], ttf2[late] = 1 - y2[late], np.where(late, 1.0, ttf)[late]
    again = walk_forward(f, y2, ttf2, H, ("logreg",), plan)
    assert runs["logreg"][0].val == again["logreg"][0].val
    assert runs["logreg"][1].val != again["logreg"][1].val  # later blocks learn from them
    first = runs["logreg"][0]
    assert f["time"].to_numpy()[first.rows].min() >= f["time"].min() + 10 * DAY
    assert set(runs) == {"logreg", "parallel"}


def test_fold_vote_fit_on_known_history_alerts_a_block_as_the_walk_forward_does():
    """Production's model (`FoldVote`) is the bench's: same fold models, cuts, votes."""
    f, ttf = synthetic_fleet(20, 5)
    y = (ttf <= H).astype(np.int8)
    plan = WalkForward(first_test_day=12, step_days=4, folds=3)
    runs = walk_forward(f, y, ttf, H, ("logreg", "gbdt"), plan)
    t = f["time"].to_numpy()
    known = t + H < t.min() + 12 * DAY  # the labels the first block's history has
    x = f[list(FEATURE_COLUMNS)].to_numpy(dtype="float64")
    for names, method in ((("logreg", "gbdt"), "parallel"), (("logreg",), "logreg")):
        block = runs[method][0]
        vote = FoldVote(names, 0.9, plan).fit(x[known], t[known], y[known], ttf[known], H)
        assert block.alert.any()
        assert vote.alerts(x[block.rows]).tolist() == block.alert.tolist()
        assert np.allclose(vote.score(x[block.rows]), block.score)
    stored = pickle.loads(pickle.dumps(vote))  # `predict train` writes it, `score` reads it
    assert stored.alerts(x[block.rows]).tolist() == block.alert.tolist()


def test_fold_vote_refuses_history_shorter_than_the_feature_warm_up():
    f, ttf = synthetic_fleet(5, 5)
    x = f[list(FEATURE_COLUMNS)].to_numpy(dtype="float64")
    t = f["time"].to_numpy()
    with pytest.raises(ValueError, match="168 h of telemetry"):
        FoldVote().fit(x, t, (ttf <= H).astype(np.int8), ttf, H)


def test_two_stage_scores_zero_where_the_wide_filter_drops_a_row():
    f, ttf = synthetic_fleet(12, 7)
    x = f[list(FEATURE_COLUMNS)].to_numpy()
    two = TwoStage().fit(x, ttf, H)
    s = two.score(x)
    wide = ttf <= 2 * H
    passed = scores(two.first, x) >= two.cut
    assert (s[~passed] == 0).all()
    assert passed[wide].mean() >= 0.9  # the filter keeps most windows before a failure
    assert s[ttf <= H].mean() > s[~wide].mean()


def test_two_stage_learns_fails_soon_from_fails_later():
    """Windows 0-48 h before a failure share one signal; only onset age tells the two apart."""
    rng = np.random.default_rng(5)
    n_fail, hour = 60, 3600.0
    cols = list(FEATURE_COLUMNS)
    rows, ttf = [], []
    for _ in range(n_fail):
        strength = rng.uniform(2, 6)
        for k in range(48):  # hours since the counter started moving
            x = np.zeros(len(cols))
            x[cols.index("sbe_6h")] = strength * rng.uniform(0.8, 1.2)
            x[cols.index("sbe_onset_h")] = k + 1
            rows.append(x)
            ttf.append((48 - k) * hour)
    for _ in range(6000):  # healthy GPUs: silent, or a weak cell moving all week
        x = np.zeros(len(cols))
        if rng.random() < 0.05:
            x[cols.index("sbe_6h")] = rng.uniform(0, 3)
            x[cols.index("sbe_onset_h")] = 168
        rows.append(x)
        ttf.append(np.inf)
    x, ttf_a = np.array(rows), np.array(ttf)
    two = TwoStage().fit(x, ttf_a, H)
    s = two.score(x)
    soon, later = ttf_a <= H, (ttf_a > H) & (ttf_a <= 2 * H)
    assert s[soon].mean() > s[later].mean() + 0.3


def heated(spec: WearSpec, ticks: int = 96) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    state = GpuState(64, 8, 1, rng)
    wear = Wear(state.shape, np.random.default_rng(3), spec)
    state.activity[:] = COMPUTE
    seen = np.zeros(state.shape, np.int64)
    for k in range(ticks):
        wear.tick(state, 30 * DAY + k * 900.0, 900.0)
        state.advance(900.0)
        seen |= state.benign_throttle
    return seen, state.temp


def test_healthy_gpus_in_hot_aisles_or_behind_bad_fans_throttle_and_others_do_not():
    seen, temp = heated(BENIGN_HEAT)
    throttled = seen != 0
    assert 0.01 < throttled.mean() < 0.3  # some healthy GPUs, not the fleet
    assert (seen & THROTTLE_SW_THERMAL).any() and (seen & THROTTLE_HW_SLOWDOWN).any()
    assert temp[throttled].mean() > temp[~throttled].mean()
    quiet, _ = heated(WearSpec())
    assert not quiet.any()  # the twin's default wear keeps healthy scenarios clean


def test_fold_models_alert_by_majority_where_their_mean_never_crosses_the_oof_cut():
    # Three fold models, each sure of a positive in its own fold (out-of-fold score 0.95)
    # and each blind to one test positive another sees: the pooled out-of-fold cut is
    # 0.95, each positive test row reaches it for two of three models, their mean never.
    oof = np.r_[np.full(6, 0.95), np.full(30, 0.1)]
    y = np.r_[np.ones(6), np.zeros(30)].astype(np.int8)
    cut = choose_threshold(oof, y, 0.9).value
    assert cut == 0.95
    fold_scores = np.array([[0.95, 0.95, 0.0, 0.1], [0.95, 0.0, 0.95, 0.1], [0.0, 0.95, 0.95, 0.1]])
    assert not (fold_scores.mean(axis=0) >= cut).any()  # the old rule: never alerts
    alert, score = fold_vote(fold_scores, cut)
    assert alert.tolist() == [True, True, True, False]
    assert (score >= cut).tolist() == alert.tolist()  # median >= cut is the vote (3 folds)
    one = fold_vote(fold_scores[:1], cut)[0]
    assert one.tolist() == [True, True, False, False]  # one model: its own cut, no averaging
    none, zero = fold_vote(np.zeros((0, 4)), cut)
    assert not none.any() and not zero.any()


def test_fold_models_on_different_scales_vote_on_their_ranks_not_one_models_cut():
    # Three fold models that order rows alike (six positives on top of each fold) but score
    # on different scales (more or less history: sharper or flatter scores). The sharpest
    # model's negatives outscore the others' positives, so a raw pooled cut lands on its
    # scale alone: in the block only it reaches the cut, never a majority.
    scales = np.array([1.0, 0.5, 0.25])
    own_raw = [np.r_[np.full(6, 0.95), np.linspace(0.0, 0.5, 30)] * k for k in scales]
    y = np.tile(np.r_[np.ones(6), np.zeros(30)], 3).astype(np.int8)
    block_raw = np.array([0.95, 0.1]) * scales[:, None]
    raw_cut = choose_threshold(np.concatenate(own_raw), y, 0.9).value
    assert (block_raw >= raw_cut).sum(axis=0).tolist() == [1, 0]
    assert not fold_vote(block_raw, raw_cut)[0].any()
    ranked = [fold_rank(o, b) for o, b in zip(own_raw, block_raw, strict=True)]
    chosen = choose_threshold(np.concatenate([o for o, _ in ranked]), y, 0.9)
    assert (chosen.precision, chosen.recall) == (1.0, 1.0)  # ranks: every fold's positives
    alert, _ = fold_vote(np.vstack([b for _, b in ranked]), chosen.value)
    assert alert.tolist() == [True, False]


def test_block_alerts_are_the_fold_models_majority_at_the_oof_cut():
    f, ttf = synthetic_fleet(20, 5)
    y = (ttf <= H).astype(np.int8)
    plan = WalkForward(first_test_day=10, step_days=5, folds=3)
    run = walk_forward(f, y, ttf, H, ("logreg",), plan)["logreg"][0]
    t = f["time"].to_numpy().astype("float64")
    start = t.min() + 10 * DAY
    history = (t + H < start) & (t >= t.min() + plan.warmup_h * 3600)
    test = (t >= start) & (t < start + 5 * DAY)
    usable = training_rows(t, ttf, H, True)
    x = f[list(FEATURE_COLUMNS)].to_numpy(dtype="float64")
    rows = Rows(x, y, ttf, t, H, usable)
    _, on_test = oof_scores(("logreg",), rows, history, t + H < start, test, 3)
    per_fold = on_test["logreg"]
    assert per_fold.shape == (3, int(test.sum()))  # one row per fold model, not averaged
    votes = (per_fold >= run.val.value).sum(axis=0)
    assert run.alert.tolist() == (votes >= 2).tolist()
