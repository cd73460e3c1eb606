"""Diagnosis CPU per event, offline: bench.scale's job workload through one in-process worker.

The twin runs bench.scale's job (4,096 GPUs, tp 8 pp 16 dp 32, 1 s GPU scrapes, every
collective) and its events are encoded as the bus carries them; they are put on the in-process
bus and read by one `DiagnosisWorker`, which runs the per-record path of `trainguard diagnose`
(decode, admission, dedup, reordering, feeding the engine and its detectors) with no Kafka and
no ClickHouse: the store refuses reads (nothing to restore) and takes incident writes without
keeping them. The figure is the worker's CPU time from its first poll to the end of its
drain, per event read; bench.scale measures the same work in a real member, plus the Kafka
client's share.

Side by side in one run, each repeated: the process as `trainguard diagnose` runs it now
(GPU scrapes through the fast decoder, the garbage collector tuned once built), the same with
every record through pydantic (TG_DIAGNOSE_FAST_DECODE=false), and both with Python's default
collector thresholds (as the process ran before). `--profile N` prints cProfile's top N
functions by own time for the current configuration.

    python -m bench.diagnosis_cpu [--gpus 4096] [--seconds 18] [--repeats 3] [--profile 30]
        [--out bench/results/diagnosis_cpu.json]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from analytics.store import StoreUnavailable
from bench.scale_diagnosis import job_scenario, job_workload
from diagnosis.incidents import Incident
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import InProcessBus, Topics
from trainguard.cli import tune_gc_for_batches

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "diagnosis_cpu.json"
PARTITIONS = 8  # bench.scale's partitions per topic
DEFAULT_GC = (700, 10, 10)  # Python's thresholds
CONFIGS = {  # name: (fast GPU-scrape decoding, collector tuned); default-GC runs first
    "pydantic_default_gc": (False, False),
    "fast_default_gc": (True, False),
    "pydantic": (False, True),
    "current": (True, True),
}
Records = Sequence[tuple[str, bytes, bytes]]


class WriteOnlyStore:
    """A store that takes incident writes and keeps nothing: the worker restores nothing."""

    database = "diagnosis_cpu"
    cluster = ""

    def version(self) -> tuple[int, ...]:
        """Return a version new enough for every statement."""
        return (24, 1)

    def command(self, sql: str, params: Mapping[str, Any] | None = None) -> None:
        """Do nothing."""

    def query_df(self, sql: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Refuse every read (the worker then starts from nothing and goes on)."""
        raise StoreUnavailable("write-only store: nothing to read")

    def insert(
        self, table: str, columns: Mapping[str, Sequence[Any]], types: Mapping[str, str]
    ) -> None:
        """Drop the rows."""

    def running_inserts(self) -> set[str]:
        """Return no running insert."""
        return set()

    def close(self) -> None:
        """Nothing to release."""


def worker_on(records: Records, topics: Topics, fast_decode: bool = True) -> DiagnosisWorker:
    """Return a worker whose bus holds `records`, as one `trainguard diagnose` member reads."""
    bus = InProcessBus(topics, partitions=PARTITIONS)
    for topic, key, value in records:
        bus.append(topic, key, value)
    consumer = bus.consumer(f"{topics.prefix}diagnose", topics.telemetry())
    settings = WorkerSettings(poll_timeout_s=0.0, restore_timeout_s=0.0, fast_decode=fast_decode)
    return DiagnosisWorker(consumer, bus.producer(), WriteOnlyStore(), topics, settings=settings)


def run_worker(worker: DiagnosisWorker, total: int) -> float:
    """Read every record, feed everything and publish; return the CPU seconds it took."""
    began = time.process_time()
    while worker.stats.consumed < total:
        worker.step()
    worker.drain()
    return time.process_time() - began


def incidents(worker: DiagnosisWorker) -> list[Incident]:
    """Return every incident the worker's diagnosis holds, by id."""
    found = [i for r in worker.engines.by_cluster.values() for i in r.correlator.incidents()]
    return sorted(found, key=lambda i: i.id)


def profile(records: Records, topics: Topics, top: int) -> str:
    """Return cProfile's top functions by own time for one worker run."""
    worker = worker_on(records, topics)
    profiler = cProfile.Profile()
    profiler.enable()
    run_worker(worker, len(records))
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def collector(tuned: bool) -> None:
    """Tune the garbage collector as `trainguard diagnose` does, or restore Python's defaults."""
    if tuned:
        tune_gc_for_batches()
    else:
        gc.unfreeze()
        gc.set_threshold(*DEFAULT_GC)


def measure(records: Records, topics: Topics, repeats: int, fast_decode: bool) -> dict[str, Any]:
    """Run a fresh worker over the records `repeats` times; return CPU per event."""
    cpu: list[float] = []
    found: list[str] = []
    for _ in range(repeats):
        worker = worker_on(records, topics, fast_decode)
        cpu.append(run_worker(worker, len(records)))
        assert worker.stats.fed == len(records), worker.stats
        found = [f"{i.id} {i.category}" for i in incidents(worker)]
    median = statistics.median(cpu)
    return {
        "events": len(records),
        "cpu_s": [round(c, 3) for c in cpu],
        "cpu_s_median": round(median, 3),
        "events_per_cpu_s": round(len(records) / median),
        "us_per_event": round(1e6 * median / len(records), 1),
        "incidents": found,
    }


def main() -> None:
    """Measure (and optionally profile) the worker's CPU per event; write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--gpus", type=int, default=4096)
    parser.add_argument("--seconds", type=int, default=18)
    parser.add_argument("--step-time", type=float, default=2.5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions")
    parser.add_argument("--out", type=Path, help=f"write the results (e.g. {RESULTS})")
    args = parser.parse_args()
    topics = Topics("cpu.")
    scenario = job_scenario(args.gpus, args.seconds, args.step_time)
    work = job_workload(scenario, topics)
    print(f"{len(work.records):,} records: {dict(work.kinds)}", file=sys.stderr)
    runs: dict[str, Any] = {}
    for name, (fast, tuned) in CONFIGS.items():
        collector(tuned)
        runs[name] = measure(work.records, topics, args.repeats, fast)
        print(f"{name}: {runs[name]['events_per_cpu_s']:,} events per CPU s", file=sys.stderr)
    if args.profile:
        print(profile(work.records, topics, args.profile))
    result = {
        "command": "python -m bench.diagnosis_cpu " + " ".join(sys.argv[1:]),
        "measured_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "job": {"gpus": args.gpus, "simulated_s": args.seconds, "kinds": dict(work.kinds)},
        "configurations": {n: {"fast_decode": f, "gc_tuned": t} for n, (f, t) in CONFIGS.items()},
        "runs": runs,
    }
    print(json.dumps(runs, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
