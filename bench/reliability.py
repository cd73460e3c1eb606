"""Reliability benchmark: the wire fuzzer at scale plus the kill and outage runs.

Writes bench/results/reliability.json: inputs tried (valid and hostile, by flaw), faults
injected, events lost, events duplicated (visible to a plain query), hostile records not
dead-lettered, incidents wrong. Run with the local services up
(`bash deploy/services.sh start`):

    python -m bench.reliability [--examples 200] [--batch 40] [--no-faults]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from analytics.migrations import migrate
from analytics.store import ServerStore
from bench.fuzz_wire import Input, batches
from bench.reliability_fuzz import Audit, FuzzRig
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from trainguard.settings import local_services_env

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "reliability.json"


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def fuzz(env: dict[str, str], examples: int, batch: int) -> Audit:
    """Publish `examples` generated batches through the sink and diagnosis; audit after each."""
    tag = uuid.uuid4().hex[:8]
    topics = Topics(f"bench-fuzz-{tag}.")
    bus = KafkaBus(env.get("TG_KAFKA_BOOTSTRAP", "127.0.0.1:19092"), topics)
    bus.ensure_topics(topics.telemetry(), partitions=4)
    host = env.get("TG_CLICKHOUSE_HOST", "127.0.0.1")
    store = ServerStore(host, int(env.get("TG_CLICKHOUSE_PORT", "19000")), f"bench_fuzz_{tag}")
    migrate(store)
    audits: list[Audit] = []
    try:
        with FuzzRig(bus, store) as rig:

            @settings(
                max_examples=examples,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(batches(datetime.now(UTC), batch))
            def run(records: list[Input]) -> None:
                rig.publish(records)
                rig.settle()
                audit = rig.audit()
                audits.append(audit)
                _log(
                    f"batch {len(audits)}: {audit.published:,} published, "
                    f"{'clean' if audit.clean else 'NOT CLEAN'}"
                )
                assert audit.clean, audit

            run()
    finally:
        store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
        store.close()
    return audits[-1]


def faults(size: int) -> list[dict[str, Any]]:
    """Run every kill and outage run of bench.reliability_faults, if present."""
    try:
        from bench import reliability_faults
    except ImportError:
        _log("no fault runs (bench/reliability_faults.py missing)")
        return []
    runs = []
    for name in reliability_faults.RUNS:
        _log(f"fault run {name}")
        run = reliability_faults.RUNS[name](size)
        runs.append(asdict(run))
        _log(f"  {run}")
    return runs


def main() -> None:
    """Run the fuzzer and the fault runs and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="generated batches")
    parser.add_argument("--batch", type=int, default=40, help="most valid events in a batch")
    parser.add_argument("--size", type=int, default=2, help="size factor of the fault runs")
    parser.add_argument("--no-faults", action="store_true", help="fuzz only")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    env = {**local_services_env(REPO), **os.environ}
    began = time.monotonic()
    audit = fuzz(env, args.examples, args.batch)
    fuzz_s = time.monotonic() - began
    runs = [] if args.no_faults else faults(args.size)
    result: dict[str, Any] = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": " ".join(["python -m bench.reliability", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "fuzz": {
            "batches": args.examples,
            "inputs_tried": audit.published,
            "valid_events": audit.valid,
            "hostile_records": audit.hostile,
            "hostile_by_flaw": dict(sorted(audit.flaws.items())),
            "events_lost": audit.lost,
            "events_duplicated": audit.duplicated,
            "hostile_not_dead_lettered": audit.not_dead_lettered,
            "hostile_dead_lettered_twice": audit.dead_lettered_twice,
            "diagnosis_poison": audit.poison,
            "loops_dead": audit.loops_dead,
            "seconds": round(fuzz_s, 1),
        },
        "fault_runs": runs,
        "totals": {
            "inputs_tried": audit.published + sum(r["events_published"] for r in runs),
            "faults_injected": sum(r["faults_injected"] for r in runs),
            "events_lost": audit.lost + sum(r["events_lost"] for r in runs),
            "events_duplicated": audit.duplicated + sum(r["events_duplicated"] for r in runs),
            "incidents_wrong": sum(r["incidents_wrong"] for r in runs),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
