"""Per-GPU features from telemetry windows: ECC and remaps, PCIe/NVLink, heat, power, Xids.

Two steps. `window_summaries` (SQL, portable between ClickHouse 18.16 and chdb) or
`summarize_samples` (the same in pandas, over gpu_metrics rows) reduce scrapes to one row
per GPU per bucket; `xid_events` / `xids_from_logs` pull the Xid history from the logs
table. `build_features` then turns bucket summaries into one feature row per GPU per bucket
end (the decision time), with no database, so models are testable on hand-built frames.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.store import Store

THERMAL_THROTTLE_MASK = 0x08 | 0x20 | 0x40  # HW slowdown, SW thermal, HW thermal
XID_PATTERN = r"Xid [(]PCI:([0-9A-Fa-f:.]+)[)]: ([0-9]+)"
XID_GROUPS: dict[str, tuple[int, ...]] = {
    "remap": (63, 64),
    "ecc": (48, 92, 94, 95),
    "nvlink": (74,),
    "lost": (79, 119, 120),
}
KEY = ["node", "gpu", "uuid"]
RATE_COUNTERS = ("sbe", "remap_corr", "pcie_replay", "nvlink_crc")
COUNTER_HOURS = (1, 6, 24, 72, 168)
XID_NEVER_H = 720.0  # "no Xid seen" reads as a month ago
HISTORY_H = max(COUNTER_HOURS)
"""Hours of telemetry behind the longest feature window (score with at least this much)."""

# summary column -> (SQL aggregate, pandas column, pandas aggregate)
_D = "DCGM_FI_DEV_"
_SUMMARY: dict[str, tuple[str, str, str]] = {
    "sbe_max": (f"max({_D}ECC_SBE_AGG_TOTAL)", f"{_D}ECC_SBE_AGG_TOTAL", "max"),
    "sbe_min": (f"min({_D}ECC_SBE_AGG_TOTAL)", f"{_D}ECC_SBE_AGG_TOTAL", "min"),
    "dbe_max": (f"max({_D}ECC_DBE_AGG_TOTAL)", f"{_D}ECC_DBE_AGG_TOTAL", "max"),
    "retired_sbe_max": (f"max({_D}RETIRED_SBE)", f"{_D}RETIRED_SBE", "max"),
    "retired_dbe_max": (f"max({_D}RETIRED_DBE)", f"{_D}RETIRED_DBE", "max"),
    "retired_pending_max": (f"max({_D}RETIRED_PENDING)", f"{_D}RETIRED_PENDING", "max"),
    "remap_corr_max": (
        f"max({_D}CORRECTABLE_REMAPPED_ROWS)",
        f"{_D}CORRECTABLE_REMAPPED_ROWS",
        "max",
    ),
    "remap_corr_min": (
        f"min({_D}CORRECTABLE_REMAPPED_ROWS)",
        f"{_D}CORRECTABLE_REMAPPED_ROWS",
        "min",
    ),
    "remap_unc_max": (
        f"max({_D}UNCORRECTABLE_REMAPPED_ROWS)",
        f"{_D}UNCORRECTABLE_REMAPPED_ROWS",
        "max",
    ),
    "remap_pending_max": (f"max({_D}ROW_REMAP_PENDING)", f"{_D}ROW_REMAP_PENDING", "max"),
    "remap_failure_max": (f"max({_D}ROW_REMAP_FAILURE)", f"{_D}ROW_REMAP_FAILURE", "max"),
    "pcie_replay_max": (f"max({_D}PCIE_REPLAY_COUNTER)", f"{_D}PCIE_REPLAY_COUNTER", "max"),
    "pcie_replay_min": (f"min({_D}PCIE_REPLAY_COUNTER)", f"{_D}PCIE_REPLAY_COUNTER", "min"),
    "nvlink_crc_max": (
        f"max({_D}NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL + {_D}NVLINK_CRC_DATA_ERROR_COUNT_TOTAL)",
        "_nvlink_crc",
        "max",
    ),
    "nvlink_crc_min": (
        f"min({_D}NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL + {_D}NVLINK_CRC_DATA_ERROR_COUNT_TOTAL)",
        "_nvlink_crc",
        "min",
    ),
    "temp_avg": (f"avg({_D}GPU_TEMP)", f"{_D}GPU_TEMP", "mean"),
    "temp_max": (f"max({_D}GPU_TEMP)", f"{_D}GPU_TEMP", "max"),
    "temp_var": (f"varPop({_D}GPU_TEMP)", f"{_D}GPU_TEMP", "_var"),
    "power_avg": (f"avg({_D}POWER_USAGE)", f"{_D}POWER_USAGE", "mean"),
    "power_var": (f"varPop({_D}POWER_USAGE)", f"{_D}POWER_USAGE", "_var"),
    "util_avg": (f"avg({_D}GPU_UTIL)", f"{_D}GPU_UTIL", "mean"),
    "throttled": (
        f"countIf(ifNull(bitAnd({_D}CLOCK_THROTTLE_REASONS, {THERMAL_THROTTLE_MASK}), 0) != 0)",
        "_throttled",
        "sum",
    ),
}
SUMMARY_COLUMNS: tuple[str, ...] = (
    *KEY,
    "pci_bus_id",
    "bucket",
    "samples",
    "lost",
    *_SUMMARY,
)


def window_summaries(store: Store, start: int, end: int, bucket_s: int = 3600) -> pd.DataFrame:
    """Return one row per GPU per bucket of gpu_metrics in [start, end) (epoch seconds)."""
    aggs = ",\n  ".join(f"{sql} AS {name}" for name, (sql, _, _) in _SUMMARY.items())
    b = int(bucket_s)
    sql = (
        f"SELECT node, gpu, uuid, pci_bus_id, intDiv(toUInt32(ts), {b}) * {b} AS bucket,\n"
        f"  count() AS samples, countIf(nvml_error != '') AS lost,\n  {aggs}\n"
        f"FROM `{store.database}`.gpu_metrics\n"
        "WHERE ts >= toDateTime(%(start)s) AND ts < toDateTime(%(end)s)\n"
        "GROUP BY node, gpu, uuid, pci_bus_id, bucket ORDER BY node, gpu, bucket"
    )
    frame = store.query_df(sql, {"start": int(start), "end": int(end)})
    return _typed(frame)


def summarize_samples(samples: pd.DataFrame, bucket_s: int = 3600) -> pd.DataFrame:
    """Return what `window_summaries` returns, from gpu_metrics rows (ts in epoch seconds)."""
    f = samples.copy()
    f["bucket"] = (f["ts"].astype("int64") // bucket_s) * bucket_s
    f["_nvlink_crc"] = (
        f[f"{_D}NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"] + f[f"{_D}NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"]
    )
    throttle = f[f"{_D}CLOCK_THROTTLE_REASONS"].fillna(0).astype("int64")
    f["_throttled"] = (throttle & THERMAL_THROTTLE_MASK) != 0
    f["_lost"] = f["nvml_error"].fillna("").astype(str) != ""
    groups = f.groupby([*KEY, "pci_bus_id", "bucket"], sort=True)
    out = groups.agg(samples=("ts", "size"), lost=("_lost", "sum"))
    for name, (_, column, how) in _SUMMARY.items():
        if how == "_var":
            out[name] = groups[column].var(ddof=0)
        else:
            out[name] = groups[column].agg(how)
    return _typed(out.reset_index())


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reindex(columns=list(SUMMARY_COLUMNS))
    for name in ("gpu", "bucket", "samples", "lost"):
        frame[name] = frame[name].astype("int64")
    for name in _SUMMARY:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("float64")
    return frame


def xid_events(store: Store, start: int, end: int) -> pd.DataFrame:
    """Return the Xids of kernel log lines in [start, end): node, ts, pci, xid."""
    sql = (
        "SELECT DISTINCT event_id, node, toUInt32(ts) AS ts,\n"
        f"  extract(line, '{XID_PATTERN}') AS pci,\n"
        f"  toUInt32OrZero(extract(line, 'Xid [(]PCI:[0-9A-Fa-f:.]+[)]: ([0-9]+)')) AS xid\n"
        f"FROM `{store.database}`.logs\n"
        "WHERE ts >= toDateTime(%(start)s) AND ts < toDateTime(%(end)s)\n"
        "  AND source = 'kernel' AND position(line, 'Xid (PCI:') > 0"
    )
    frame = store.query_df(sql, {"start": int(start), "end": int(end)})
    return _xid_frame(frame)


def xids_from_logs(logs: pd.DataFrame) -> pd.DataFrame:
    """Return what `xid_events` returns, from logs rows (ts in epoch seconds)."""
    kernel = logs[
        (logs["source"] == "kernel") & logs["line"].str.contains("Xid (PCI:", regex=False)
    ]
    parts = kernel["line"].str.extract(XID_PATTERN)
    frame = pd.DataFrame(
        {
            "event_id": kernel["event_id"],
            "node": kernel["node"],
            "ts": kernel["ts"].astype("int64"),
            "pci": parts[0],
            "xid": pd.to_numeric(parts[1], errors="coerce").fillna(0),
        }
    )
    return _xid_frame(frame.drop_duplicates("event_id"))


def _xid_frame(frame: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "node": frame["node"].astype(str),
            "ts": frame["ts"].astype("int64"),
            "pci": frame["pci"].astype(str).map(pci_key),
            "xid": frame["xid"].astype("int64"),
        }
    )
    return out.sort_values(["node", "ts"]).reset_index(drop=True)


def pci_key(pci: str) -> str:
    """Return domain:bus:device of an NVML ('00000000:DB:00.0') or driver ('0000:db:00') id."""
    parts = pci.lower().split(":")
    if len(parts) < 3:
        return pci.lower()
    return f"{parts[0][-4:]:0>4}:{parts[1]}:{parts[2].split('.')[0]}"


def _rolling(frame: pd.DataFrame, cols: list[str], hours: int, how: str) -> pd.DataFrame:
    indexed = frame.set_index("_time")
    result = indexed.groupby("_gid", sort=False)[cols].rolling(f"{hours}h").agg(how)
    return result.reset_index(level=0, drop=True).set_axis(frame.index)


def build_features(
    summaries: pd.DataFrame, xids: pd.DataFrame, bucket_s: int = 3600
) -> pd.DataFrame:
    """Return one feature row per GPU per bucket end (`time`, epoch s); lost GPUs dropped."""
    f = summaries.sort_values([*KEY, "bucket"]).reset_index(drop=True)
    f["_gid"] = f.groupby(KEY, sort=False).ngroup()
    f["_time"] = pd.to_datetime(f["bucket"], unit="s")
    f = _merge_xids(f, xids, bucket_s)
    out = pd.DataFrame({"node": f["node"], "gpu": f["gpu"], "uuid": f["uuid"]})
    out["time"] = f["bucket"] + bucket_s
    _counter_features(f, out)
    _heat_features(f, out)
    _xid_features(f, out)
    # Hours of this GPU's history in the frame, capped at the longest window: a scoring run
    # reads a week and a bit, so training must not see ages that scoring never can.
    seen = (f["bucket"] - f.groupby("_gid")["bucket"].transform("min")) / 3600
    out["age_h"] = seen.clip(upper=HISTORY_H)
    out["slot"] = f["gpu"]
    keep = f["lost"].to_numpy() == 0
    return out[keep].fillna(0).reset_index(drop=True)


def _counter_features(f: pd.DataFrame, out: pd.DataFrame) -> None:
    """Growth of the error counters over 1 h to a week, totals, and their acceleration.

    A weak cell or a marginal riser emits at a steady rate for weeks; a failing part
    accelerates. The rate of the last hours against the GPU's own rate over the week
    before tells them apart, whatever the absolute level.
    """
    lows = [f"{c}_min" for c in RATE_COUNTERS]
    highs = [f"{c}_max" for c in RATE_COUNTERS]
    f[highs] = f.groupby("_gid")[highs].ffill().fillna(0)
    as_lows = dict(zip(highs, lows, strict=True))
    f[lows] = f[lows].fillna(f[highs].rename(columns=as_lows))
    # The previous bucket's last value is the baseline of growth in this one.
    previous = f.groupby("_gid")[highs].shift(1).rename(columns=as_lows)
    f[lows] = np.fmin(f[lows], previous.fillna(f[lows]))
    for hours in COUNTER_HOURS:
        hi = _rolling(f, highs, hours, "max")
        lo = _rolling(f, lows, hours, "min")
        for c in RATE_COUNTERS:
            out[f"{c}_{hours}h"] = (hi[f"{c}_max"] - lo[f"{c}_min"]).clip(lower=0)
    out["sbe_trend"] = out["sbe_6h"] / 6 - (out["sbe_24h"] - out["sbe_6h"]) / 18
    for c in RATE_COUNTERS:
        recent = np.log1p(out[f"{c}_6h"] / 6)
        out[f"{c}_accel_24h"] = recent - np.log1p((out[f"{c}_24h"] - out[f"{c}_6h"]) / 18)
        out[f"{c}_accel_168h"] = recent - np.log1p((out[f"{c}_168h"] - out[f"{c}_6h"]) / 162)
        # The last hour against the five before: a part close to failing is still speeding up.
        out[f"{c}_accel_1h"] = np.log1p(out[f"{c}_1h"]) - np.log1p(
            (out[f"{c}_6h"] - out[f"{c}_1h"]) / 5
        )
        moving = (f[f"{c}_max"] > f[f"{c}_min"]).astype("float64")
        f[f"_{c}_moving"] = moving
    active = _rolling(f, [f"_{c}_moving" for c in RATE_COUNTERS], 168, "sum")
    for c in RATE_COUNTERS:
        out[f"{c}_active_h_168h"] = active[f"_{c}_moving"]
    _onset_features(f, out)
    for name in ("sbe", "remap_corr", "remap_unc", "dbe", "retired_sbe", "retired_dbe"):
        out[f"{name}_total"] = f.groupby("_gid")[f"{name}_max"].cummax().fillna(0)
    for name in ("remap_pending", "remap_failure", "retired_pending"):
        out[name] = f[f"{name}_max"].fillna(0)


def _onset_features(f: pd.DataFrame, out: pd.DataFrame) -> None:
    """When each counter started moving this week, and how much faster it moves now.

    A steady emitter (weak cell, marginal riser) has moved all week; a failing part starts
    moving and keeps speeding up, so the hours since its first move and its rate now
    against its rate just after that first move say how far along it is. A window of
    24 h before a failure and one of 40 h before look alike in rates alone.
    """
    first = _first_in_week(f, [f"_{c}_moving" for c in RATE_COUNTERS])
    gid = f["_gid"].to_numpy()
    bucket = f["bucket"].to_numpy().astype("float64")
    end = out["time"].to_numpy().astype("float64")  # the decision time: the bucket's end
    for c in RATE_COUNTERS:
        began = first[f"_{c}_moving"].to_numpy()
        moved = np.isfinite(began)
        out[f"{c}_onset_h"] = _hours_since(began, end)
        week = out[f"{c}_168h"].clip(lower=1)
        out[f"{c}_share_6h"] = out[f"{c}_6h"] / week
        out[f"{c}_share_24h"] = out[f"{c}_24h"] / week
        step = (f[f"{c}_max"] - f[f"{c}_min"]).clip(lower=0).fillna(0)
        total = step.groupby(f["_gid"]).cumsum().to_numpy()
        start = np.where(moved, began, bucket)
        until = np.minimum(start + 5 * 3600, bucket)  # buckets starting in the first 6 h
        first_6h = _value_at(gid, bucket, total, until) - _value_at(gid, bucket, total, start - 1)
        hours = (until + (end - bucket) - start) / 3600  # from onset to the end of `until`
        early = np.clip(first_6h, 0, None) / np.maximum(hours, 1)
        growth = np.log1p(out[f"{c}_6h"].to_numpy() / 6) - np.log1p(early)
        out[f"{c}_growth"] = np.where(moved, growth, 0.0)


def _first_in_week(f: pd.DataFrame, flags: list[str]) -> pd.DataFrame:
    """Return, per row and flag, the first bucket of the week up to it where the flag is set.

    NaN where it never was. A flag set since the week began reads as a week old.
    """
    starts = pd.DataFrame({c: f["bucket"].where(f[c] > 0).astype("float64") for c in flags})
    marked = pd.concat([f[["_gid", "_time"]], starts], axis=1)
    return _rolling(marked, flags, HISTORY_H, "min")


def _hours_since(began: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Return hours from the bucket `began` to the decision time `end`; 0 where never."""
    moved = np.isfinite(began)
    return np.where(moved, (end - np.where(moved, began, 0)) / 3600, 0.0)


def _value_at(
    gid: np.ndarray, bucket: np.ndarray, values: np.ndarray, at: np.ndarray
) -> np.ndarray:
    """Return each row's GPU's `values` at its last bucket <= `at` (0 before its first).

    Rows must be sorted by GPU (`gid` ascending) then bucket.
    """
    # Exact integer keys: epoch seconds fit in 32 bits until 2106.
    g = gid.astype("int64") << 32
    key = g + bucket.astype("int64")
    i = np.searchsorted(key, g + np.floor(at).astype("int64"), side="right") - 1
    i = np.clip(i, 0, len(values) - 1)
    return np.where((gid[i] == gid) & (bucket[i] <= at), values[i], 0.0)


def _heat_features(f: pd.DataFrame, out: pd.DataFrame) -> None:
    """Temperature, power and throttling: level, variance, trend, excess over node peers.

    Peers in the same node run the same job at the same time, so the excess over their
    median removes the workload and the room.
    """
    means = _rolling(f, ["temp_avg", "power_avg", "util_avg", "temp_var", "power_var"], 24, "mean")
    between = _rolling(f, ["temp_avg", "power_avg"], 24, "var").fillna(0)
    out["temp_mean_24h"] = means["temp_avg"]
    out["temp_max_24h"] = _rolling(f, ["temp_max"], 24, "max")["temp_max"]
    out["temp_std_24h"] = np.sqrt(means["temp_var"].fillna(0) + between["temp_avg"])
    out["temp_trend"] = _rolling(f, ["temp_avg"], 6, "mean")["temp_avg"] - means["temp_avg"]
    for col in ("temp_avg", "power_avg"):
        f[f"_{col}_excess"] = f[col] - f.groupby(["node", "bucket"])[col].transform("median")
    out["temp_excess"] = f["_temp_avg_excess"]
    excess = ["_temp_avg_excess", "_power_avg_excess"]
    short, week = _rolling(f, excess, 6, "mean"), _rolling(f, excess, 168, "mean")
    out["temp_excess_6h"] = short["_temp_avg_excess"]
    out["temp_excess_rise"] = short["_temp_avg_excess"] - week["_temp_avg_excess"]
    out["power_excess_6h"] = short["_power_avg_excess"]
    _temp_rise(f, out, short["_temp_avg_excess"])
    out["power_mean_24h"] = means["power_avg"]
    out["power_std_24h"] = np.sqrt(means["power_var"].fillna(0) + between["power_avg"])
    out["util_mean_24h"] = means["util_avg"]
    for hours in (6, 24):
        sums = _rolling(f, ["throttled", "samples"], hours, "sum")
        out[f"throttle_share_{hours}h"] = sums["throttled"] / sums["samples"].clip(lower=1)
    # A hot aisle or an HBM-bound job throttles all week; a part heating up starts to.
    f["_throttling"] = (f["throttled"].fillna(0) > 0).astype("float64")
    began = _first_in_week(f, ["_throttling"])["_throttling"].to_numpy()
    out["throttle_onset_h"] = _hours_since(began, out["time"].to_numpy().astype("float64"))


def _temp_rise(f: pd.DataFrame, out: pd.DataFrame, last_6h: pd.Series) -> None:
    """The excess over node peers against the GPU's own excess 2-7 days before.

    The week-long mean of `temp_excess_rise` already holds the start of a slow rise; the
    days before it do not. A fan that has warmed for weeks has a steady slope, a part that
    started heating has a new one.
    """
    col = "_temp_avg_excess"
    sums = {h: _rolling(f, [col], h, "sum")[col] for h in (48, 168)}
    counts = {h: _rolling(f, [col], h, "count")[col] for h in (48, 168)}
    older = (counts[168] - counts[48]).to_numpy()
    base = np.where(older > 0, (sums[168] - sums[48]).to_numpy() / np.maximum(older, 1), np.nan)
    out["temp_rise_6h"] = (last_6h - base).fillna(0)
    out["temp_rise_24h"] = (_rolling(f, [col], 24, "mean")[col] - base).fillna(0)
    out["temp_slope_6h"] = 2 * (last_6h - _rolling(f, [col], 12, "mean")[col])


def _xid_features(f: pd.DataFrame, out: pd.DataFrame) -> None:
    """Xid counts per group, distinct groups, hours since the last one, node neighbours'."""
    xid_cols = [c for c in f.columns if c.startswith("xid_")]
    for hours in (24, 168):
        rolled = _rolling(f, xid_cols, hours, "sum")
        for c in xid_cols:
            out[f"{c}_{hours}h"] = rolled[c]
    groups = [f"xid_{n}_168h" for n in (*XID_GROUPS, "other")]
    out["xid_groups_168h"] = (out[groups] > 0).sum(axis=1).astype("float64")
    any_xid = f[[f"xid_{n}" for n in (*XID_GROUPS, "other")]].sum(axis=1) > 0
    last = f["bucket"].where(any_xid).groupby(f["_gid"]).ffill()
    out["hours_since_xid"] = (
        ((f["bucket"] - last) / 3600).fillna(XID_NEVER_H).clip(upper=XID_NEVER_H)
    )
    node_hw = f.groupby(["node", "bucket"])["xid_hw"].transform("sum") - f["xid_hw"]
    f["_node_hw"] = node_hw
    out["node_hw_xid_168h"] = _rolling(f, ["_node_hw"], 168, "sum")["_node_hw"]


def _merge_xids(f: pd.DataFrame, xids: pd.DataFrame, bucket_s: int) -> pd.DataFrame:
    f["_pci"] = f["pci_bus_id"].astype(str).map(pci_key)
    names = [*XID_GROUPS, "other"]
    for name in (*names, "hw"):
        f[f"xid_{name}" if name != "hw" else "xid_hw"] = 0.0
    if xids.empty:
        return f
    x = xids.copy()
    x["bucket"] = (x["ts"] // bucket_s) * bucket_s
    group = pd.Series("other", index=x.index)
    for name, codes in XID_GROUPS.items():
        group[x["xid"].isin(codes)] = name
    x["group"] = group
    x["hw"] = group.isin(["ecc", "lost", "nvlink"])
    counts = x.pivot_table(
        index=["node", "pci", "bucket"], columns="group", values="xid", aggfunc="size", fill_value=0
    )
    counts = counts.reindex(columns=names, fill_value=0).add_prefix("xid_")
    counts["xid_hw"] = x.groupby(["node", "pci", "bucket"])["hw"].sum()
    counts = counts.reset_index().rename(columns={"pci": "_pci"})
    f = f.drop(columns=[f"xid_{n}" for n in (*names, "hw")])
    f = f.merge(counts, on=["node", "_pci", "bucket"], how="left")
    cols = [f"xid_{n}" for n in (*names, "hw")]
    f[cols] = f[cols].fillna(0).astype("float64")
    return f


FEATURE_COLUMNS: tuple[str, ...] = (
    *(f"{c}_{h}h" for h in COUNTER_HOURS for c in RATE_COUNTERS),
    "sbe_trend",
    *(f"{c}_accel_{h}h" for h in (1, 24, 168) for c in RATE_COUNTERS),
    *(f"{c}_active_h_168h" for c in RATE_COUNTERS),
    *(f"{c}_{n}" for n in ("onset_h", "share_6h", "share_24h", "growth") for c in RATE_COUNTERS),
    *(
        f"{n}_total"
        for n in ("sbe", "remap_corr", "remap_unc", "dbe", "retired_sbe", "retired_dbe")
    ),
    "remap_pending",
    "remap_failure",
    "retired_pending",
    "temp_mean_24h",
    "temp_max_24h",
    "temp_std_24h",
    "temp_trend",
    "temp_excess",
    "temp_excess_6h",
    "temp_excess_rise",
    "power_excess_6h",
    "temp_rise_6h",
    "temp_rise_24h",
    "temp_slope_6h",
    "power_mean_24h",
    "power_std_24h",
    "util_mean_24h",
    "throttle_share_6h",
    "throttle_share_24h",
    "throttle_onset_h",
    *(f"xid_{n}_{h}h" for h in (24, 168) for n in (*XID_GROUPS, "other", "hw")),
    "xid_groups_168h",
    "hours_since_xid",
    "node_hw_xid_168h",
    "age_h",
    "slot",
)
"""Model inputs, in order (the rest of a feature frame identifies the GPU and time)."""
