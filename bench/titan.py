"""The Titan supercomputer's GPU history (OLCF, 2013-2019): loader, snapshot features,
and a time-split evaluation against age-only and location-only baselines.

`gc_full.csv` has one row per GPU life at one location (serial number, location
`c{col}-{row}c{cage}s{slot}n{node}`, insert, remove, and the event that ended it: DBE,
OTB (off the bus) or none). At a snapshot time T every GPU in service gets features known at
T (age, cumulative operating time, its own and its location's past events, where it
sits); the label is a DBE/OTB event within the horizon after T. A GPU taken out without an
event before the horizon ends (Titan replaced thousands of old GPUs in 2016-2017) is
`censored`: its 0 says nothing about its hazard, so training leaves it out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

TITAN_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "titan"
LOCATION = r"c(?P<col>\d+)-(?P<row>\d+)c(?P<cage>\d+)s(?P<slot>\d+)n(?P<node>\d+)"
LOCATION_FEATURES = ("col", "row", "cage", "slot", "node", "loc_events", "cabinet_rate")
HISTORY_FEATURES = (
    "age_days",
    "operating_days",
    "at_location_days",
    "prior_events",
    "prior_dbe",
    "prior_otb",
    "prior_lives",
    "lot",
)
ALL_FEATURES = (*HISTORY_FEATURES, *LOCATION_FEATURES)


class TitanError(ValueError):
    """The Titan files are missing or not in the expected format."""


def load_lives(directory: Path = TITAN_DIR) -> pd.DataFrame:
    """Return one row per GPU life: sn, location parts, insert, remove, event ('' if none)."""
    path = directory / "gc_full.csv"
    try:
        raw = pd.read_csv(path, dtype={"SN": str, "location": str, "event": str})
    except (OSError, pd.errors.ParserError) as exc:
        raise TitanError(f"cannot read {path}: {exc}") from exc
    missing = {"SN", "location", "insert", "remove", "event"} - set(raw.columns)
    if missing:
        raise TitanError(f"{path}: missing columns {sorted(missing)}")
    loc = raw["location"].str.extract(LOCATION)
    if loc.isna().any(axis=None):
        bad = raw.loc[loc.isna().any(axis=1), "location"].iloc[0]
        raise TitanError(f"{path}: unparseable location {bad!r}")
    remove = pd.to_datetime(raw["remove"])
    # Lives with no insert time were in place when the record starts.
    insert = pd.to_datetime(raw["insert"]).fillna(
        remove.min() if raw["insert"].isna().all() else pd.to_datetime(raw["insert"]).min()
    )
    lives = pd.DataFrame(
        {
            "sn": raw["SN"].str.lstrip("0"),
            "location": raw["location"],
            **{c: loc[c].astype("int64") for c in ("col", "row", "cage", "slot", "node")},
            "insert": insert,
            "remove": remove,
            "event": raw["event"].fillna(""),
        }
    )
    return lives.sort_values(["insert", "sn"], ignore_index=True)


def load_summary(directory: Path = TITAN_DIR) -> pd.DataFrame:
    """Return the per-GPU summary (dbe, otb, dead, location columns)."""
    path = directory / "gc_summary_loc.csv"
    try:
        return pd.read_csv(path, dtype={"SN": str})
    except (OSError, pd.errors.ParserError) as exc:
        raise TitanError(f"cannot read {path}: {exc}") from exc


def snapshot(lives: pd.DataFrame, at: pd.Timestamp, horizon_days: float) -> pd.DataFrame:
    """Return features known at `at` for every GPU in service then, and its label."""
    live = lives[(lives["insert"] <= at) & (lives["remove"] > at)].drop_duplicates("sn")
    past = lives[lives["remove"] <= at]
    past_events = past[past["event"] != ""]
    started = lives[lives["insert"] <= at]
    first = started.groupby("sn")["insert"].min()
    # Time on a shelf between lives does not wear the GPU; only time in service does.
    in_service = (
        started["remove"].where(started["remove"] <= at, at) - started["insert"]
    ).dt.total_seconds()
    f = live[["sn", "location", "col", "row", "cage", "slot", "node"]].copy()
    f["time"] = at
    f["age_days"] = (at - f["sn"].map(first)).dt.total_seconds() / 86_400
    f["operating_days"] = f["sn"].map(in_service.groupby(started["sn"]).sum()) / 86_400
    f["at_location_days"] = (at - live["insert"]).dt.total_seconds() / 86_400
    for name, kinds in (
        ("prior_events", ("DBE", "OTB")),
        ("prior_dbe", ("DBE",)),
        ("prior_otb", ("OTB",)),
    ):
        counts = past_events[past_events["event"].isin(kinds)].groupby("sn").size()
        f[name] = f["sn"].map(counts).fillna(0)
    f["prior_lives"] = f["sn"].map(past.groupby("sn").size()).fillna(0)
    f["lot"] = f["sn"].str[:6].astype("int64")
    f["loc_events"] = f["location"].map(past_events.groupby("location").size()).fillna(0)
    cab = past_events.groupby(["col", "row"]).size()
    per_cab = lives[lives["insert"] <= at].groupby(["col", "row"]).size()
    rate = (cab / per_cab).fillna(0)
    f["cabinet_rate"] = [rate.get((c, r), 0.0) for c, r in zip(f["col"], f["row"], strict=True)]
    end = at + pd.Timedelta(days=horizon_days)
    ahead = lives[(lives["event"] != "") & (lives["remove"] > at) & (lives["remove"] <= end)]
    f["y"] = f["sn"].isin(set(ahead["sn"])).astype("int8")
    back = lives[(lives["insert"] <= end) & (lives["remove"] > end)]
    f["censored"] = ((f["y"] == 0) & ~f["sn"].isin(set(back["sn"]))).astype("int8")
    return f.reset_index(drop=True)


def snapshots(lives: pd.DataFrame, times: list[pd.Timestamp], horizon_days: float) -> pd.DataFrame:
    """Return the snapshots at several times, stacked."""
    return pd.concat([snapshot(lives, t, horizon_days) for t in times], ignore_index=True)


def trainable(frame: pd.DataFrame, horizon_days: float, known_by: pd.Timestamp) -> pd.DataFrame:
    """Return the uncensored rows whose labels were known at `known_by` (t + horizon <= it)."""
    known = frame["time"] + pd.Timedelta(days=horizon_days) <= known_by
    return frame[known & (frame["censored"] == 0)]


def monthly(start: str, end: str) -> list[pd.Timestamp]:
    """Return month starts in [start, end]."""
    return list(pd.date_range(start, end, freq="MS"))


def precision_at_k(score: np.ndarray, y: np.ndarray, k: int) -> float:
    """Return the share of failures among the k highest scores."""
    top = np.argsort(-score, kind="stable")[:k]
    return float(y[top].mean()) if len(top) else 0.0


def blend_with_prior(
    frame: pd.DataFrame, score: np.ndarray, prior: np.ndarray, weight: float
) -> np.ndarray:
    """Return weight * the model's rank + (1 - weight) * the prior's rank, per snapshot.

    Ranks are percentiles within each snapshot time, so a GPU the model flags only ranks
    high when the prior (age: the oldest first) agrees, and the two scales never mix.
    """
    ranks = pd.DataFrame({"time": frame["time"].to_numpy(), "s": score, "p": prior})
    by_time = ranks.groupby("time")
    return np.asarray(
        weight * by_time["s"].rank(pct=True) + (1 - weight) * by_time["p"].rank(pct=True),
        dtype="float64",
    )
