"""Read job traces: the canonical CSV, the Tiresias sample and Alibaba's openb pod list."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from scheduler.elastic import ELASTIC_SHARE, random_ranges, ranges_by_share
from scheduler.model import Job

CANONICAL = ("submit_time", "duration", "num_gpus")
TIRESIAS = ("job_id", "num_gpu", "submit_time", "duration")
ALIBABA = ("creation_time", "deletion_time", "num_gpu")
REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "data" / "traces"


class TraceError(ValueError):
    """A trace file that cannot be read as jobs; the message is one line."""


def read_csv(path: Path) -> pd.DataFrame:
    """Return the CSV at `path` as a frame, or raise TraceError naming the problem."""
    if not path.is_file():
        raise TraceError(f"trace file not found: {path}")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(f"cannot parse {path}: {first}") from exc


def detect_format(frame: pd.DataFrame) -> str:
    """Return which trace format the frame's columns match."""
    cols = set(frame.columns)
    if cols.issuperset(CANONICAL):
        return "canonical"
    if cols.issuperset(TIRESIAS):
        return "tiresias"
    if cols.issuperset(ALIBABA):
        return "alibaba"
    missing = ", ".join(c for c in CANONICAL if c not in cols)
    raise TraceError(
        f"missing columns: {missing} (expected canonical submit_time,duration,num_gpus, "
        "the Tiresias or the Alibaba openb pod-list format)"
    )


def _numeric(frame: pd.DataFrame, column: str, blank_ok: bool = False) -> np.ndarray:
    """Return a column as floats; a blank cell is NaN when `blank_ok`, else an error."""
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & (frame[column].notna() if blank_ok else True)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise TraceError(f"column {column}: non-numeric value in data row {row + 1}")
    return values.to_numpy(dtype=float).copy()


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "submit_time": _numeric(frame, "submit_time"),
            "duration": _numeric(frame, "duration"),
            "num_gpus": _numeric(frame, "num_gpus"),
        }
    )
    for name in ("min_gpus", "max_gpus", "checkpoint"):
        if name in frame.columns:
            out[name] = _numeric(frame, name)
    if "gpu_type" in frame.columns:
        out["gpu_type"] = frame["gpu_type"]
    return out


def _tiresias(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "submit_time": _numeric(frame, "submit_time"),
            "duration": _numeric(frame, "duration"),
            "num_gpus": _numeric(frame, "num_gpu"),
        }
    )


def _alibaba(frame: pd.DataFrame) -> pd.DataFrame:
    """Map pods to jobs: GPU pods that ran, runtime from scheduling to deletion.

    A pod with no `scheduled_time` never ran (it was deleted while pending), so its
    creation-to-deletion time is queuing, not work: it is left out. A fractional GPU
    (`gpu_milli` < 1000, GPU sharing) counts as a whole GPU: the model has no sharing. A pod
    with no `deletion_time` was still running when the trace ended: it runs until the last
    time the trace records.
    """
    gpus = _numeric(frame, "num_gpu")
    created = _numeric(frame, "creation_time")
    deleted = _numeric(frame, "deletion_time", blank_ok=True)
    running = np.isnan(deleted)
    started = created
    ran = np.ones(len(frame), dtype=bool)
    if "scheduled_time" in frame.columns:
        sched = pd.to_numeric(frame["scheduled_time"], errors="coerce").to_numpy(dtype=float)
        ran = ~np.isnan(sched)
        started = np.where(ran, sched, created)
    if running.any():  # never deleted: it ran until the trace ends
        deleted[running] = max(np.nanmax(np.r_[created, deleted[~running], started]), 0.0)
    out = pd.DataFrame({"submit_time": created, "duration": deleted - started, "num_gpus": gpus})
    if "gpu_spec" in frame.columns:
        out["gpu_type"] = frame["gpu_spec"]
    keep = ran & (out["num_gpus"] > 0) & (out["duration"] > 0)
    return out[keep].reset_index(drop=True)


def _gpu_type(value: object) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def frame_to_jobs(
    frame: pd.DataFrame,
    elastic_fraction: float | None,
    seed: int,
    elastic_share: float = ELASTIC_SHARE,
) -> list[Job]:
    """Return jobs sorted by submit time, elastic ranges from the trace or by the share rule.

    Without `min_gpus`/`max_gpus` columns, the largest and longest jobs are elastic up to
    `elastic_share` of the GPU-time (min = requested, max = 2x); with `elastic_fraction`
    set, the old model instead: a seeded random fraction of jobs, min half, max twice.
    """
    bad = ((frame["duration"] <= 0) | (frame["num_gpus"] <= 0)).to_numpy()
    if bad.any():
        row = int(bad.nonzero()[0][0])
        raise TraceError(
            f"duration and num_gpus must be positive in every row (data row {row + 1}: "
            f"duration {frame['duration'].iloc[row]:g}, num_gpus {frame['num_gpus'].iloc[row]:g})"
        )
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    submit = frame["submit_time"].to_numpy(dtype=float)
    submit = submit - submit[0] if len(submit) else submit
    duration = frame["duration"].to_numpy(dtype=float)
    n = np.maximum(1, np.ceil(frame["num_gpus"].to_numpy(dtype=float))).astype(int)
    if "min_gpus" in frame.columns and "max_gpus" in frame.columns:
        lo = np.maximum(1, frame["min_gpus"].to_numpy(dtype=float).astype(int))
        hi = np.maximum(lo, frame["max_gpus"].to_numpy(dtype=float).astype(int))
        n = np.minimum(np.maximum(n, lo), hi)
    elif elastic_fraction is not None:
        lo, hi = random_ranges(n, elastic_fraction, np.random.default_rng(seed))
    else:
        lo, hi = ranges_by_share(n, duration, elastic_share)
    types = [_gpu_type(v) for v in frame["gpu_type"]] if "gpu_type" in frame else None
    ckpt = frame["checkpoint"].to_numpy(dtype=float) if "checkpoint" in frame else None
    return [
        Job(
            job_id=i,
            submit_time=float(submit[i]),
            duration=float(duration[i]),
            num_gpus=int(n[i]),
            min_gpus=int(lo[i]),
            max_gpus=int(hi[i]),
            gpu_type=types[i] if types is not None else None,
            checkpoint=bool(ckpt[i]) if ckpt is not None else False,
        )
        for i in range(len(frame))
    ]


def load_trace(
    path: Path,
    elastic_fraction: float | None = None,
    seed: int = 0,
    elastic_share: float = ELASTIC_SHARE,
) -> list[Job]:
    """Return the jobs of a trace file in any supported format (elastic ranges as in
    `frame_to_jobs`: the trace's own, else the share rule, else the old random fraction)."""
    frame = read_csv(path)
    kind = detect_format(frame)
    converted = {"canonical": _canonical, "tiresias": _tiresias, "alibaba": _alibaba}[kind](frame)
    if converted.empty:
        raise TraceError(f"no GPU jobs in {path}")
    return frame_to_jobs(converted, elastic_fraction, seed, elastic_share)


def alibaba_gpu_servers(path: Path, gpus_per_server: int = 8) -> int:
    """Return how many 8-GPU servers hold the GPUs of an openb node list."""
    frame = read_csv(path)
    if "gpu" not in frame.columns:
        raise TraceError(f"missing columns: gpu in {path}")
    return max(1, int(math.ceil(_numeric(frame, "gpu").sum() / gpus_per_server)))
