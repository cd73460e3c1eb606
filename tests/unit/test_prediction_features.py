"""Features from hand-built gpu_metrics and logs frames; label windows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from prediction.features import (
    FEATURE_COLUMNS,
    HISTORY_H,
    XID_NEVER_H,
    build_features,
    pci_key,
    summarize_samples,
    xids_from_logs,
)
from prediction.labels import failures_from_truth, label_windows, time_to_failure

D = "DCGM_FI_DEV_"
T0 = 1_788_220_800  # 2026-09-01 00:00 UTC


def make_samples(hours: int = 30, sbe_from: int | None = None, node: str = "n1", gpu: int = 0):
    """Return 15-minute scrapes of one GPU; SBEs climb by 10 a scrape from hour sbe_from."""
    rows = []
    sbe = 0
    for k in range(hours * 4):
        t = T0 + k * 900
        if sbe_from is not None and k >= sbe_from * 4:
            sbe += 10
        rows.append(
            {
                "ts": t,
                "node": node,
                "gpu": gpu,
                "uuid": f"GPU-{node}-{gpu}",
                "pci_bus_id": "00000000:18:00.0",
                "nvml_error": "",
                f"{D}ECC_SBE_AGG_TOTAL": sbe,
                f"{D}ECC_DBE_AGG_TOTAL": 0,
                f"{D}RETIRED_SBE": 0,
                f"{D}RETIRED_DBE": 0,
                f"{D}RETIRED_PENDING": 0,
                f"{D}CORRECTABLE_REMAPPED_ROWS": 0,
                f"{D}UNCORRECTABLE_REMAPPED_ROWS": 0,
                f"{D}ROW_REMAP_PENDING": 0,
                f"{D}ROW_REMAP_FAILURE": 0,
                f"{D}PCIE_REPLAY_COUNTER": 0,
                f"{D}NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": 0,
                f"{D}NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": 0,
                f"{D}GPU_TEMP": 60.0 + (k % 2),
                f"{D}POWER_USAGE": 600.0,
                f"{D}GPU_UTIL": 97.0,
                f"{D}CLOCK_THROTTLE_REASONS": 0,
            }
        )
    return pd.DataFrame(rows)


def make_xid_logs(node: str = "n1", code: int = 63, at: int = T0 + 3600) -> pd.DataFrame:
    line = (
        "2026-09-01T01:00:00,000000+00:00 NVRM: Xid (PCI:0000:18:00): "
        f"{code}, pid=1234, Row Remapper: New row marked for remapping, reset gpu to activate."
    )
    return pd.DataFrame(
        [{"ts": at, "node": node, "source": "kernel", "line": line, "event_id": "e1"}]
    )


def test_summaries_bucket_scrapes_per_gpu_hour():
    s = summarize_samples(make_samples(hours=3, sbe_from=1))
    assert list(s["bucket"]) == [T0, T0 + 3600, T0 + 7200]
    assert list(s["samples"]) == [4, 4, 4]
    assert s.loc[1, "sbe_min"] == 10 and s.loc[1, "sbe_max"] == 40
    assert s.loc[0, "temp_var"] == 0.25


def test_features_see_sbe_growth_and_its_trend():
    feats = build_features(
        summarize_samples(make_samples(30, sbe_from=24)), xids_from_logs(make_xid_logs())
    )
    last = feats.iloc[-1]
    assert last["time"] == T0 + 30 * 3600
    assert last["sbe_6h"] == 240 and last["sbe_24h"] == 240
    assert last["sbe_trend"] > 0
    quiet = feats[feats["time"] <= T0 + 24 * 3600]
    assert (quiet["sbe_24h"] == 0).all()
    assert feats.iloc[1]["xid_remap_24h"] == 1
    assert set(FEATURE_COLUMNS) <= set(feats.columns)


def test_lost_gpu_rows_are_not_decisions():
    samples = make_samples(4)
    samples.loc[samples["ts"] >= T0 + 7200, "nvml_error"] = "NVML_ERROR_GPU_IS_LOST"
    feats = build_features(summarize_samples(samples), xids_from_logs(make_xid_logs()))
    assert list(feats["time"]) == [T0 + 3600, T0 + 7200]


def test_pci_ids_of_nvml_and_the_driver_match():
    assert pci_key("00000000:DB:00.0") == pci_key("0000:db:00") == "0000:db:00"


def test_labels_mark_windows_within_the_horizon_only():
    feats = pd.DataFrame({"node": "n1", "gpu": 0, "time": T0 + np.arange(5) * 3600})
    failures = pd.DataFrame({"node": ["n1"], "gpu": [0], "time": [T0 + 4 * 3600], "kind": "x"})
    assert list(label_windows(feats, failures, 3600)) == [0, 0, 0, 1, 0]
    assert list(label_windows(feats, failures, 3 * 3600)) == [0, 1, 1, 1, 0]
    other = failures.assign(gpu=1)
    assert not label_windows(feats, other, 86_400).any()
    assert np.isinf(time_to_failure(feats, other)).all()


def test_failures_from_truth_use_the_failure_not_the_precursor_onset():
    truth = {
        "faults": [
            {
                "kind": "precursor",
                "then": "xid79",
                "onset": "2026-09-01T00:00:00+00:00",
                "onset_s": 100.0,
                "failure_at_s": 3700.0,
                "component": {"type": "gpu", "node": "n1", "gpu": 2},
            },
            {
                "kind": "nic_down",
                "onset": "2026-09-01T00:00:00+00:00",
                "onset_s": 0.0,
                "component": {"type": "nic", "node": "n1", "nic": "mlx5_0"},
            },
            {
                "kind": "ecc_dbe",
                "onset": "2026-09-01T02:00:00+00:00",
                "onset_s": 0.0,
                "component": {"type": "gpu", "node": "n2", "gpu": 0},
            },
        ]
    }
    f = failures_from_truth(truth)
    assert f[["node", "gpu", "time", "kind"]].values.tolist() == [
        ["n1", 2, T0 + 3600, "xid79"],
        ["n2", 0, T0 + 7200, "ecc_dbe"],
    ]


def test_acceleration_separates_a_failing_part_from_a_steady_weak_cell():
    """Same SBE count over the last 6 h; the weak cell has emitted all week, the other not."""
    steady = make_samples(200, sbe_from=0, node="n1")
    rising = make_samples(200, sbe_from=194, node="n2")
    feats = build_features(
        summarize_samples(pd.concat([steady, rising], ignore_index=True)),
        xids_from_logs(make_xid_logs()),
    )
    last = feats.sort_values("time").groupby("node").tail(1).set_index("node")
    assert last.loc["n1", "sbe_6h"] == last.loc["n2", "sbe_6h"]
    assert last.loc["n2", "sbe_accel_168h"] > last.loc["n1", "sbe_accel_168h"] + 2
    assert last.loc["n1", "sbe_active_h_168h"] > 100 > last.loc["n2", "sbe_active_h_168h"]
    assert last.loc["n1", "age_h"] == HISTORY_H  # capped: scoring never sees more


def test_hours_since_the_last_xid_and_its_absence():
    feats = build_features(
        summarize_samples(make_samples(6)), xids_from_logs(make_xid_logs(at=T0 + 3600))
    )
    assert feats["hours_since_xid"].iloc[0] == XID_NEVER_H
    assert list(feats["hours_since_xid"].iloc[1:4]) == [0, 1, 2]
    assert feats["xid_groups_168h"].iloc[-1] == 1


def test_onset_and_growth_tell_how_far_along_a_counter_is():
    """A weak cell steady all week, a part that began 10 h ago and speeds up, a quiet GPU."""
    steady = make_samples(200, sbe_from=0, node="n1")
    rising = make_samples(200, node="n2")
    k = np.arange(len(rising))
    began = 190 * 4  # scrape index of hour 190
    step = np.where(k >= began, 1 + (k - began), 0)  # 1, 2, 3 ... more SBEs each scrape
    rising[f"{D}ECC_SBE_AGG_TOTAL"] = np.cumsum(step)
    quiet = make_samples(200, node="n3")
    feats = build_features(
        summarize_samples(pd.concat([steady, rising, quiet], ignore_index=True)),
        xids_from_logs(make_xid_logs()),
    )
    last = feats.sort_values("time").groupby("node").tail(1).set_index("node")
    assert last.loc["n1", "sbe_onset_h"] == HISTORY_H
    assert last.loc["n2", "sbe_onset_h"] == 10
    assert last.loc["n3", "sbe_onset_h"] == 0 and last.loc["n3", "sbe_growth"] == 0
    assert abs(last.loc["n1", "sbe_growth"]) < 0.1  # the same rate as at the week's start
    # The first 6 h after onset: 300 SBEs; the last 6 h: 684 (rates 50 vs 114 an hour).
    assert last.loc["n2", "sbe_growth"] == pytest.approx(np.log1p(114) - np.log1p(50))
    assert last.loc["n2", "sbe_share_6h"] > 0.7 > last.loc["n1", "sbe_share_6h"] + 0.5


def test_temperature_rise_is_against_the_gpus_own_excess_days_before():
    """One GPU of two in a node warms by 3 C for the last 6 h; its peer stays put."""
    hours = 200
    hot = make_samples(hours, node="n1", gpu=0)
    peer = make_samples(hours, node="n1", gpu=1)
    peer["uuid"] = "GPU-n1-1"
    peer["pci_bus_id"] = "00000000:2A:00.0"
    hot[f"{D}GPU_TEMP"] += 2.0  # runs 2 C warmer than its peer all along (airflow)
    hot.loc[hot["ts"] >= T0 + (hours - 6) * 3600, f"{D}GPU_TEMP"] += 3.0
    feats = build_features(
        summarize_samples(pd.concat([hot, peer], ignore_index=True)),
        xids_from_logs(make_xid_logs()),
    )
    last = feats.sort_values("time").groupby("gpu").tail(1).set_index("gpu")
    # The node median of two GPUs is their mean, so the hot GPU's excess is half the gap.
    assert last.loc[0, "temp_rise_6h"] == pytest.approx(1.5)
    assert last.loc[0, "temp_rise_24h"] == pytest.approx(1.5 * 6 / 24)
    assert last.loc[0, "temp_slope_6h"] == pytest.approx(1.5)  # last 6 h vs the 6 before
    assert last.loc[1, "temp_rise_6h"] == pytest.approx(-1.5)
    before = feats[(feats["gpu"] == 0) & (feats["time"] == T0 + (hours - 6) * 3600)]
    assert before["temp_rise_6h"].iloc[0] == pytest.approx(0.0)


def test_throttle_onset_tells_a_gpu_starting_to_throttle_from_a_hot_aisle():
    always = make_samples(200, node="n1")
    always[f"{D}CLOCK_THROTTLE_REASONS"] = 0x20  # SW thermal slowdown all week
    starting = make_samples(200, node="n2")
    starting.loc[starting["ts"] >= T0 + 190 * 3600, f"{D}CLOCK_THROTTLE_REASONS"] = 0x20
    never = make_samples(200, node="n3")
    never[f"{D}CLOCK_THROTTLE_REASONS"] = 0x04  # a power cap: not a thermal reason
    feats = build_features(
        summarize_samples(pd.concat([always, starting, never], ignore_index=True)),
        xids_from_logs(make_xid_logs()),
    )
    last = feats.sort_values("time").groupby("node").tail(1).set_index("node")
    assert list(last.loc[["n1", "n2", "n3"], "throttle_onset_h"]) == [HISTORY_H, 10, 0]
