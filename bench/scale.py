"""Scale benchmark: diagnosis members at full telemetry rate, and the sink's cost.

Diagnosis: the twin runs one job (4,096 GPUs by default: tp 8, pp 16, dp 32) at full
telemetry rate (1 s GPU scrapes, every collective of every rank); its emission model gives the
job's events/s; the same model, counted on a short twin run of the job to keep in real time
(--rate-gpus, 16,384 GPUs), gives that job's rate. In each run 1, 2, ... members of
`trainguard diagnose` join one consumer group on fresh topics and database, the records are
sent, and the members read them all; each member's
CPU time is read from /proc. Throughput is CPU-normalised (events per CPU second): the
machine's cores are shared, so wall time says more about the neighbours than about diagnosis.

Sink: the same GPU rows inserted raw (clickhouse-driver, columns ready) and through `trainguard
sink` with the pydantic decoder (before) and the msgspec fast path (TG_SINK_FAST_DECODE),
interleaved and repeated in one run; medians are reported.

From the measured figures it derives the members, cores and partitions for 200,000 GPUs.
Prints progress on stderr and writes bench/results/scale.json. Needs the dev services
(`bash deploy/services.sh start`, then `. deploy/.local/env`):

    python -m bench.scale [--quick] [--gpus 4096] [--seconds 18] [--rate-gpus 16384]
        [--members 1,2,3,4] [--repeats 1] [--sink-repeats 2]
        [--skip-sink | --skip-diagnosis] [--keep bench/results/scale.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import signal
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analytics.migrations import migrate
from analytics.store import ServerStore
from bench.ingest import make_scrapes, raw_insert_rate, sink_process_rate
from bench.scale_diagnosis import Workload, job_scenario, job_workload, produce, run_members
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import encode_event
from trainguard.settings import local_services_env

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "scale.json"
FLEET_GPUS = 200_000
HEADROOM = 0.5  # members planned at half their measured throughput: catch-up after an outage


def log(msg: str) -> None:
    """Print one progress line."""
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def diagnosis_section(args: argparse.Namespace, env: dict[str, str], tag: str) -> dict[str, Any]:
    """Measure the job's emission rate and 1..N members' throughput."""
    scenario = job_scenario(args.gpus, args.seconds, args.step_time_s)
    log(f"twin: {args.gpus:,} GPUs for {args.seconds} s at full telemetry rate")
    base = Topics(f"scale-{tag}.")
    work = job_workload(scenario, base)
    rates = work.rates()
    records, total = work.records, len(work.records)
    log(f"twin: {total:,} events (steady state {rates['all']:,.0f}/s)")
    target = target_job(args, work)
    runs = []
    for rep in range(args.repeats):
        for n in args.members:
            run_tag = f"{tag}-{n}-{rep}"
            topics = Topics(f"scale-{run_tag}.")
            bus = KafkaBus(env["TG_KAFKA_BOOTSTRAP"], topics)
            bus.ensure_topics(
                [*topics.telemetry(), topics.incidents, topics.actions],
                partitions=args.partitions,
            )
            # the same records, on this run's topics
            moved = [(topics.prefix + t.removeprefix(base.prefix), k, v) for t, k, v in records]
            database = f"bench_scale_{run_tag.replace('-', '_')}"
            store = ServerStore(env["TG_CLICKHOUSE_HOST"], int(env["TG_CLICKHOUSE_PORT"]), database)
            child = {
                **env,
                "TG_KAFKA_MODE": "kafka",
                "TG_CLICKHOUSE_MODE": "server",
                "TG_CLICKHOUSE_DATABASE": database,
            }
            try:
                migrate(store)
                before = _load()
                log(f"run {rep + 1}/{args.repeats}: {n} member(s), load {before}")
                run = run_members(child, bus, moved, n, f"scale-{run_tag}", log)
                runs.append({"repeat": rep, "loadavg_before": before, **run})
            finally:
                store.command(f"DROP DATABASE IF EXISTS `{database}`")
                store.close()
    return {
        "job": {
            "gpus": args.gpus,
            "layout": {k: scenario.jobs[0].model_dump()[k] for k in ("tp", "pp", "dp")},
            "step_time_s": args.step_time_s,
            "simulated_s": args.seconds,
            "metrics_interval_s": scenario.metrics_interval_s,
            "host_interval_s": scenario.host_interval_s,
            "events": total,
            "events_by_kind": dict(work.kinds),
            "twin_cpu_s": round(work.twin_cpu_s, 1),
        },
        "emission_events_per_s": {k: round(v, 2) for k, v in rates.items()},
        "target_job": target,
        "partitions_per_topic": args.partitions,
        "runs": runs,
        "scaling": scaling(runs, args.members, target["emission_events_per_s"]["all"]),
    }


def target_job(args: argparse.Namespace, work: Workload) -> dict[str, Any]:
    """Return the emission model of the job to keep in real time (--rate-gpus).

    The twin runs that job only through its first steps (its collectives per step are
    counted); the healthy step time, where it ran no healthy step, is the diagnosed job's
    (same nominal step time; a bigger job's is a little longer, so its rate is overstated).
    """
    if args.rate_gpus == args.gpus:
        rates, gpus, seconds, cpu = work.rates(), args.gpus, args.seconds, work.twin_cpu_s
    else:
        scenario = job_scenario(args.rate_gpus, args.rate_seconds, args.step_time_s)
        log(f"twin: emission model of {args.rate_gpus:,} GPUs ({args.rate_seconds} s)")
        model = job_workload(scenario, None)
        rates, gpus, seconds = model.rates(work.healthy_step_s()), args.rate_gpus, args.rate_seconds
        cpu = model.twin_cpu_s
        log(f"twin: {args.rate_gpus:,} GPUs emit {rates['all']:,.0f} events/s")
    return {
        "gpus": gpus,
        "simulated_s": seconds,
        "twin_cpu_s": round(cpu, 1),
        "emission_events_per_s": {k: round(v, 2) for k, v in rates.items()},
    }


def scaling(runs: list[dict[str, Any]], members: list[int], job_rate: float) -> dict[str, Any]:
    """Summarise per member count: median events per CPU second, relative to one member."""
    by_n: dict[int, float] = {}
    for n in members:
        values = [
            r["events_per_cpu_s"] for r in runs if r["members"] == n and r["events_per_cpu_s"]
        ]
        by_n[n] = statistics.median(values) if values else 0.0
    base = by_n.get(1) or by_n[members[0]]
    relative = {str(n): round(v / base, 3) if base else None for n, v in by_n.items()}
    spread = min(v for v in relative.values() if v is not None) if base else 0.0
    return {
        "events_per_cpu_s_median": {str(n): round(v) for n, v in by_n.items()},
        "per_core_relative_to_first": relative,
        "per_core_within_20pct": bool(spread is not None and spread >= 0.8),
        "one_member_real_time_factor": round(base / job_rate, 3) if job_rate else None,
        "one_member_keeps_job_in_real_time": base >= job_rate,
    }


def fleet_plan(diag: dict[str, Any], sink: dict[str, Any]) -> dict[str, Any]:
    """Derive members, cores and partitions for FLEET_GPUS from the measured figures."""
    target = diag["target_job"]
    rates = target["emission_events_per_s"]
    per_gpu = rates["all"] / target["gpus"]
    fleet_rate = per_gpu * FLEET_GPUS
    per_core = min([v for v in diag["scaling"]["events_per_cpu_s_median"].values() if v > 0] or [0])
    members = math.ceil(fleet_rate / (per_core * HEADROOM)) if per_core else None
    gpu_rows_per_s = FLEET_GPUS / diag["job"]["metrics_interval_s"]
    sink_rows = sink["fast"]["rows_per_cpu_s_median"]
    sinks = math.ceil(gpu_rows_per_s / (sink_rows * HEADROOM)) if sink_rows else None
    partitions = 1 << max(0, (2 * (members or 1) - 1).bit_length())
    largest_job_rate = rates["collective"] + rates["train_step"]
    return {
        "gpus": FLEET_GPUS,
        "events_per_s": round(fleet_rate),
        "events_per_gpu_s": round(per_gpu, 3),
        "diagnosis_events_per_cpu_s_used": per_core,
        "headroom": HEADROOM,
        "diagnosis_members": members,
        "diagnosis_cores": members,
        "sink_gpu_rows_per_s": round(gpu_rows_per_s),
        "sink_rows_per_cpu_s_used": sink_rows,
        "sink_processes": sinks,
        "sink_cores": sinks,
        "partitions_per_telemetry_topic": partitions,
        "job_keyed_events_per_s_of_the_target_job": round(largest_job_rate),
        "notes": (
            "members = fleet events/s / (measured events per CPU second x headroom), one core "
            "each; partitions: the next power of two >= 2 x members, so the group can double "
            "without re-partitioning. Job-keyed telemetry (collectives, steps) of one job is "
            "one partition: one member must keep up with the largest job's job-keyed rate "
            "unless diagnosis re-partitions it (issue 18 item 3)."
        ),
    }


def sink_section(args: argparse.Namespace, env: dict[str, str], tag: str) -> dict[str, Any]:
    """Raw inserts vs `trainguard sink` with the pydantic and the fast decoder, interleaved."""
    events = make_scrapes(args.sink_nodes, args.sink_seconds)
    rows = sum(len(e.gpus) for e in events)
    topics = Topics(f"scale-sink-{tag}.")
    bus = KafkaBus(env["TG_KAFKA_BOOTSTRAP"], topics)
    bus.ensure_topics(topics.telemetry(), partitions=4)
    log(f"sink: producing {len(events):,} GPU scrapes ({rows:,} rows)")
    produce(bus, [(topics.for_event(e), e.key.encode(), encode_event(e)) for e in events])
    host, port = env["TG_CLICKHOUSE_HOST"], int(env["TG_CLICKHOUSE_PORT"])
    samples: dict[str, list[dict[str, float]]] = {"raw": [], "pydantic": [], "fast": []}
    for rep in range(args.sink_repeats):
        for name in ("raw", "pydantic", "fast"):
            store = ServerStore(host, port, f"bench_scale_sink_{tag}_{name}_{rep}")
            try:
                migrate(store)
                log(f"sink run {rep + 1}/{args.sink_repeats}: {name}, load {_load()}")
                if name == "raw":
                    began = time.thread_time()
                    rate = raw_insert_rate(store, events, args.batch_records)
                    cpu = time.thread_time() - began
                    samples[name].append({"rows_per_s": rate, "cpu_s": cpu})
                else:
                    extra = {
                        "TG_SINK_GROUP": f"scale-sink-{tag}-{name}-{rep}",
                        "TG_SINK_FAST_DECODE": str(name == "fast").lower(),
                    }
                    run = sink_process_rate(
                        env, bus, store, host, port, rows, args.batch_records, extra
                    )
                    samples[name].append(run)
            finally:
                store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
                store.close()
    out: dict[str, Any] = {
        "workload": {
            "nodes": args.sink_nodes,
            "scrapes_per_node": args.sink_seconds,
            "gpu_rows": rows,
            "batch_records": args.batch_records,
        }
    }
    for name, runs in samples.items():
        out[name] = {
            "rows_per_s": [round(r["rows_per_s"]) for r in runs],
            "rows_per_s_median": round(statistics.median(r["rows_per_s"] for r in runs)),
            "rows_per_cpu_s_median": round(
                statistics.median(rows / r["cpu_s"] for r in runs if r["cpu_s"] > 0)
            )
            if any(r["cpu_s"] > 0 for r in runs)
            else None,
        }
    raw = out["raw"]["rows_per_s_median"]
    out["sink_to_raw_ratio"] = {
        "pydantic": round(out["pydantic"]["rows_per_s_median"] / raw, 3),
        "fast": round(out["fast"]["rows_per_s_median"] / raw, 3),
        "per_repeat_fast": [
            round(f["rows_per_s"] / r["rows_per_s"], 3)
            for f, r in zip(samples["fast"], samples["raw"], strict=True)
        ],
        "per_repeat_pydantic": [
            round(p["rows_per_s"] / r["rows_per_s"], 3)
            for p, r in zip(samples["pydantic"], samples["raw"], strict=True)
        ],
        "target": 0.4,
    }
    out["raw"]["cpu_note"] = "raw CPU is the inserting thread's (client side), not the server's"
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line (--quick: a small run for the smoke test)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one repeat (smoke test)")
    p.add_argument("--gpus", type=int, default=4_096, help="GPUs of the job diagnosed")
    p.add_argument(
        "--seconds", type=int, default=18, help="simulated seconds (the first ~15 s warm up)"
    )
    p.add_argument("--rate-gpus", type=int, default=16_384, help="GPUs of the job to keep up with")
    p.add_argument("--rate-seconds", type=int, default=7, help="its twin run (one full step)")
    p.add_argument("--step-time-s", type=float, default=2.5)
    p.add_argument("--members", default="1,2,3,4", help="member counts to run")
    p.add_argument("--partitions", type=int, default=8, help="partitions per telemetry topic")
    p.add_argument("--repeats", type=int, default=1, help="diagnosis runs per member count")
    p.add_argument("--sink-repeats", type=int, default=2, help="raw/pydantic/fast rounds")
    p.add_argument("--sink-nodes", type=int, default=500)
    p.add_argument("--sink-seconds", type=int, default=24)
    p.add_argument("--batch-records", type=int, default=5_000)
    p.add_argument("--skip-diagnosis", action="store_true")
    p.add_argument("--skip-sink", action="store_true")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument(
        "--keep",
        type=Path,
        help="copy the skipped sections from this earlier result (each keeps its own command)",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.gpus, args.seconds, args.repeats, args.sink_repeats = 256, 20, 1, 1
        args.rate_gpus, args.rate_seconds = 512, 7
        args.members, args.partitions = "1,2", 4
        args.sink_nodes, args.sink_seconds, args.batch_records = 50, 4, 100
    args.members = [int(n) for n in str(args.members).split(",")]
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the sections and write the JSON result."""
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the sink and diagnose processes started are stopped
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))
    env = {**local_services_env(REPO), **os.environ}
    for key in ("TG_KAFKA_BOOTSTRAP", "TG_CLICKHOUSE_HOST", "TG_CLICKHOUSE_PORT"):
        if key not in env:
            sys.exit(f"bench.scale: {key} not set (start the services, source deploy/.local/env)")
    tag = uuid.uuid4().hex[:8]
    began = datetime.now(UTC)
    load_before = _load()
    probe = ServerStore(env["TG_CLICKHOUSE_HOST"], int(env["TG_CLICKHOUSE_PORT"]), "default")
    version = ".".join(map(str, probe.version()))
    probe.close()
    result: dict[str, Any] = {
        "measured": began.strftime("%Y-%m-%d"),
        "started_utc": began.isoformat(timespec="seconds"),
        "command": "python -m bench.scale " + shlex.join(sys.argv[1:] if argv is None else argv),
        "quick": args.quick,
        "machine": {
            "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "clickhouse_server": version,
            "loadavg_before": load_before,
            "note": "a shared machine: figures are CPU-normalised; wall rates depend on load",
        },
    }
    kept = json.loads(args.keep.read_text()) if args.keep else {}
    for name, skip, run in (
        ("sink", args.skip_sink, sink_section),
        ("diagnosis", args.skip_diagnosis, diagnosis_section),
    ):
        if skip:
            if name in kept:
                result[name] = kept[name]  # with the command and date it was measured with
            continue
        section_began = datetime.now(UTC)
        result[name] = {
            "command": result["command"],
            "started_utc": section_began.isoformat(timespec="seconds"),
            "loadavg_before": _load(),
            **run(args, env, tag),
            "loadavg_after": _load(),
        }
    if "sink" in result and "diagnosis" in result:
        result["fleet_plan"] = fleet_plan(result["diagnosis"], result["sink"])
    result["machine"]["loadavg_after"] = _load()
    result["duration_s"] = round((datetime.now(UTC) - began).total_seconds())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {args.out}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
