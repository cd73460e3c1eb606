"""The Titan loader and snapshots on the real CSVs (../shared/data/titan)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.titan import (
    TITAN_DIR,
    TitanError,
    blend_with_prior,
    load_lives,
    load_summary,
    snapshot,
    trainable,
)


@pytest.fixture(scope="module")
def lives() -> pd.DataFrame:
    return load_lives()


def test_lives_parse_locations_and_events(lives):
    assert len(lives) == 37_343
    assert set(lives["event"]) == {"", "DBE", "OTB"}
    first = lives[lives["sn"] == "320117100060"].iloc[0]
    assert (first["col"], first["row"], first["cage"], first["slot"], first["node"]) == (
        11,
        2,
        1,
        4,
        1,
    )
    assert lives["insert"].notna().all()


def test_summary_counts_agree_with_the_lives(lives):
    summary = load_summary()
    assert len(summary) == lives["sn"].nunique() == 30_207


def test_snapshot_uses_only_the_past_and_labels_the_future(lives):
    at = pd.Timestamp("2018-01-01")
    snap = snapshot(lives, at, 180)
    assert snap["sn"].is_unique
    sn = "320117100219"  # DBE lives ended 2018-03-03, 2018-05-12 and 2018-05-29
    row = snap[snap["sn"] == sn].iloc[0]
    assert row["y"] == 1 and row["prior_events"] == 0
    later = snapshot(lives, pd.Timestamp("2018-05-01"), 180)
    assert later[later["sn"] == sn].iloc[0]["prior_dbe"] == 1
    assert 0.005 < snap["y"].mean() < 0.2


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(TitanError, match="cannot read"):
        load_lives(tmp_path)
    assert TITAN_DIR.name == "titan"


def test_prior_blend_ranks_within_each_snapshot():
    frame = pd.DataFrame({"time": [0, 0, 0, 1, 1]})
    score = np.array([0.9, 0.5, 0.1, 100.0, 200.0])  # scales differ between snapshots
    age = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    model_only = blend_with_prior(frame, score, age, 1.0)
    assert list(model_only) == [1.0, 2 / 3, 1 / 3, 0.5, 1.0]
    blend = blend_with_prior(frame, score, age, 0.5)
    # the GPU both rank high wins; where they disagree outright the blend ties
    assert blend[:3].argmax() == 1 and blend[3] == blend[4]


def test_operating_time_counts_service_only_and_censoring_is_flagged():
    day = pd.Timedelta(days=1)
    t0 = pd.Timestamp("2016-01-01")
    lives = pd.DataFrame(
        {
            "sn": ["320117100001", "320117100001", "320117100002", "320117100003"],
            "location": ["c0-0c2s0n0", "c0-0c0s1n1", "c0-0c1s2n2", "c0-0c1s3n3"],
            "col": [0, 0, 0, 0],
            "row": [0, 0, 0, 0],
            "cage": [2, 0, 1, 1],
            "slot": [0, 1, 2, 3],
            "node": [0, 1, 2, 3],
            # GPU 1: 100 days, 50 on a shelf, back in service; GPU 2 pulled without an event
            # 10 days after the snapshot; GPU 3 fails 20 days after it.
            "insert": [t0, t0 + 150 * day, t0, t0],
            "remove": [t0 + 100 * day, t0 + 400 * day, t0 + 210 * day, t0 + 220 * day],
            "event": ["", "", "", "DBE"],
        }
    )
    snap = snapshot(lives, t0 + 200 * day, 90).set_index("sn")
    assert snap.loc["320117100001", "age_days"] == 200
    assert snap.loc["320117100001", "operating_days"] == 150
    assert list(snap["y"]) == [0, 0, 1]
    assert list(snap["censored"]) == [0, 1, 0]
    train = trainable(snap.reset_index(), 90, t0 + 290 * day)
    assert list(train["sn"]) == ["320117100001", "320117100003"]
    assert trainable(snap.reset_index(), 90, t0 + 289 * day).empty
