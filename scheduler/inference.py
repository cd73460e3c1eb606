"""Inference load: a diurnal series (generated or from CSV) and a short-horizon forecast."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scheduler.trace import TraceError, read_csv

DAY_S = 86_400.0


@dataclass(frozen=True)
class LoadSeries:
    """Inference demand as a fraction of the inference cluster, one value per step."""

    step_s: float
    load: np.ndarray

    def shifted(self, phase_s: float) -> LoadSeries:
        """Return the series as seen from a clock `phase_s` later (t=0 reads phase_s)."""
        k = int(round(phase_s / self.step_s)) % len(self.load)
        return self if k == 0 else LoadSeries(self.step_s, np.roll(self.load, -k))

    def at(self, t: float) -> float:
        """Return the demand fraction at time `t` (the series repeats past its end)."""
        return float(self.load[int(t // self.step_s) % len(self.load)])

    def forecast(self, t: float, horizon_s: float) -> float:
        """Return the demand expected within `horizon_s` of `t` from what is known at `t`.

        The larger of a trend extrapolation over the last three steps and the value seen one
        day earlier at the horizon (the diurnal pattern repeats), never below now.
        """
        i = int(t // self.step_s)
        n = len(self.load)
        now = float(self.load[i % n])
        ahead = max(1, int(math.ceil(horizon_s / self.step_s)))
        past = float(self.load[(i - 3) % n]) if i >= 3 else now
        trend = now + (now - past) / 3 * ahead
        per_day = int(round(DAY_S / self.step_s))
        seasonal = now
        if i >= per_day:
            window = [self.load[(i - per_day + k) % n] for k in range(1, ahead + 1)]
            seasonal = float(max(window)) * (now / max(float(self.load[(i - per_day) % n]), 1e-9))
        return min(1.0, max(now, trend, seasonal))

    def calm_s(self, t: float, rise: float) -> float:
        """Return how long demand stays within `rise` of now, judged by the day before."""
        per_day = int(round(DAY_S / self.step_s))
        i = int(t // self.step_s)
        if i < per_day:
            return math.inf
        n = len(self.load)
        limit = float(self.load[i % n]) + rise
        for k in range(1, per_day + 1):
            if self.load[(i - per_day + k) % n] > limit:
                return k * self.step_s
        return math.inf


def diurnal_load(
    days: float,
    step_s: float = 300.0,
    peak: float = 0.9,
    peak_to_trough: float = 2.2,
    noise: float = 0.02,
    seed: int = 0,
) -> LoadSeries:
    """Return a seeded diurnal series: peak at 14:00, trough at 02:00, ratio `peak_to_trough`."""
    steps = max(1, int(math.ceil(days * DAY_S / step_s)))
    t = np.arange(steps) * step_s
    trough = peak / peak_to_trough
    mid, amp = (peak + trough) / 2, (peak - trough) / 2
    wave = mid + amp * np.cos(2 * np.pi * (t - 14 * 3600) / DAY_S)
    rng = np.random.default_rng(seed)
    series = wave * (1 + noise * rng.standard_normal(steps))
    return LoadSeries(step_s=step_s, load=np.clip(series, 0.0, 1.0))


def load_series_csv(path: Path) -> LoadSeries:
    """Read `time` (s) and `load` (fraction of the inference cluster, 0-1) from a CSV."""
    frame = read_csv(path)
    missing = [c for c in ("time", "load") if c not in frame.columns]
    if missing:
        raise TraceError(f"inference load {path}: missing columns: {', '.join(missing)}")
    times = frame["time"].to_numpy(dtype=float)
    load = frame["load"].to_numpy(dtype=float)
    if len(times) < 2 or not np.all(np.diff(times) > 0):
        raise TraceError(f"inference load {path}: need >= 2 rows with increasing time")
    step = float(np.median(np.diff(times)))
    grid = np.arange(times[0], times[-1] + step, step)
    return LoadSeries(step_s=step, load=np.clip(np.interp(grid, times, load), 0.0, 1.0))


def loanable_servers(
    series: LoadSeries, t: float, servers: int, reserve_fraction: float, horizon_s: float
) -> int:
    """Return how many whole inference servers can be lent at `t`, keeping the reserve."""
    keep = math.ceil((series.forecast(t, horizon_s) + reserve_fraction) * servers - 1e-9)
    return max(0, servers - keep)
