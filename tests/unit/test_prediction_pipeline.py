"""`predict train` / `score` without a store: the vote method from features to risk rows."""

from __future__ import annotations

import numpy as np
import pytest

from prediction.pipeline import PredictError, Predictor, score_latest, train
from tests.unit.test_prediction_walkforward import DAY, H, synthetic_fleet


def test_vote_trains_on_known_history_and_alerts_the_gpus_about_to_fail(tmp_path):
    f, ttf = synthetic_fleet(20, 5)
    f["uuid"] = "GPU-" + f["node"] + "-" + f["gpu"].astype(str)
    f.loc[ttf <= H, "sbe_24h"] += 1000.0  # separable, so the 0.9 cut is reachable
    y = (ttf <= H).astype(np.int8)
    t = f["time"].to_numpy()
    now = t.min() + 16 * DAY
    known = t + H < now  # labels resolved by now, as `train` reads incidents up to --end
    predictor = train(f[known], y[known], "vote", 24, 0.9, ttf=ttf[known])
    path = tmp_path / "model.pkl"
    predictor.save(path)
    seen = f[t <= now]
    risk = score_latest(Predictor.load(path), seen)
    assert len(risk) == 40 and risk["risk"].is_monotonic_decreasing
    latest = seen.sort_values("time").groupby(["node", "gpu"]).tail(1)
    failing = latest[ttf[latest.index] <= H]
    alerted = risk[risk["alert"] == 1]
    assert len(failing) == 3
    pairs = set(zip(alerted["node"], alerted["gpu"], strict=True))
    assert pairs == set(zip(failing["node"], failing["gpu"], strict=True))
    assert (risk["model"] == "vote").all() and (risk["horizon_h"] == 24).all()


def test_vote_needs_the_time_to_failure_and_a_week_of_history():
    f, ttf = synthetic_fleet(20, 5)
    y = (ttf <= H).astype(np.int8)
    with pytest.raises(PredictError, match="time to failure"):
        train(f, y, "vote", 24, 0.9)
    short = f[f["time"] < f["time"].min() + 6 * DAY]
    with pytest.raises(PredictError, match="168 h of telemetry"):
        train(short, y[short.index], "vote", 24, 0.9, ttf=ttf[short.index])
