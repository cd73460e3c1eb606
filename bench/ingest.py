"""Ingest benchmark: one sink process (Kafka -> ClickHouse server) vs raw inserts, plus chdb.

Prints JSON and writes bench/results/ingest.json. A "sample" is one metric value of one GPU
(a 10,000-GPU fleet scraped at 1 Hz with 30 fields is 300,000 samples/s). Run with the local
services up (`bash deploy/services.sh start`):

    python -m bench.ingest [--nodes 1250] [--seconds 40]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

from analytics.columns import ColumnBatch
from analytics.migrations import migrate
from analytics.store import EmbeddedStore, ServerStore, Store, query_scalar
from analytics.tables import GPU_METRICS
from ingest.bus import InProcessBus, Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import GPU_METRIC_FIELDS, GpuMetrics, encode_event
from sim.scenario import parse_scenario
from sim.twin import Twin
from trainguard.settings import SinkProcessSettings, local_services_env
from trainguard.wiring import build_sink

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "ingest.json"


def _env() -> dict[str, str]:
    return {**local_services_env(REPO), **os.environ}


def make_scrapes(nodes: int, seconds: int) -> list[GpuMetrics]:
    """Return `seconds` GPU scrapes of a `nodes`-node twin cluster running one job."""
    scenario = parse_scenario(
        {
            "seed": 5,
            "cluster": {"nodes": nodes, "gpus_per_node": 8},
            "jobs": [{"id": "bench", "tp": 8, "dp": nodes, "step_time_s": 4.0}],
            "duration_s": seconds - 1,
            "host_interval_s": 3600,
        }
    )
    scrapes: list[GpuMetrics] = []
    Twin(scenario, lambda e: scrapes.append(e) if isinstance(e, GpuMetrics) else None).run()
    return scrapes


def samples_in(events: list[GpuMetrics]) -> int:
    """Count non-null metric values (the unit of the target)."""
    return sum(
        1 for e in events for g in e.gpus for n in GPU_METRIC_FIELDS if getattr(g, n) is not None
    )


def gpu_rows(store: Store) -> int:
    """Return the row count of gpu_metrics."""
    return int(query_scalar(store, f"SELECT count() FROM `{store.database}`.gpu_metrics"))


def raw_insert_rate(store: Store, events: list[GpuMetrics], batch_records: int) -> float:
    """Insert the same rows straight into ClickHouse in sink-sized blocks; return rows/s."""
    types = {c.name: c.type for c in GPU_METRICS.columns}
    blocks = []
    for first in range(0, len(events), batch_records):
        batch = ColumnBatch()
        for i, event in enumerate(events[first : first + batch_records], start=first):
            batch.add_event(event, ("raw", 0, i))
        blocks.append(batch.columns(GPU_METRICS))
    rows = sum(len(b["ts"]) for b in blocks)
    began = time.perf_counter()
    for block in blocks:
        store.insert("gpu_metrics", block, types)
    return rows / (time.perf_counter() - began)


def sink_process_rate(
    env: dict[str, str],
    bus: KafkaBus,
    store: ServerStore,
    host: str,
    port: int,
    expected_rows: int,
    batch_records: int,
    extra_env: dict[str, str] | None = None,
) -> dict[str, float]:
    """Run `trainguard sink` pinned to one core; return its steady rows/s, CPU and memory.

    `extra_env` overrides the child's settings (another TG_SINK_GROUP to read the topics
    again, TG_SINK_FAST_DECODE). `cpu_s` is the process's CPU time (all threads) from its
    first fetch to its last row stored.
    """
    topics = bus.topics
    metrics_port = _free_port()
    child_env = {
        **env,
        "TG_KAFKA_MODE": "kafka",
        "TG_KAFKA_BOOTSTRAP": bus.bootstrap,
        "TG_KAFKA_TOPIC_PREFIX": topics.prefix,
        "TG_CLICKHOUSE_MODE": "server",
        "TG_CLICKHOUSE_HOST": host,
        "TG_CLICKHOUSE_PORT": str(port),
        "TG_CLICKHOUSE_DATABASE": store.database,
        "TG_SINK_GROUP": f"bench-{topics.prefix}",
        "TG_SINK_BATCH_RECORDS": str(batch_records),
        "TG_SINK_METRICS_PORT": str(metrics_port),
        **(extra_env or {}),
    }
    core = max(os.sched_getaffinity(0))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainguard", "sink"],
        cwd=REPO,
        env=child_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )
    first_seen: float | None = None
    cpu_first = cpu_last = 0.0
    peak_kib = 0
    try:
        while True:
            now = time.perf_counter()
            peak_kib = max(peak_kib, _vm_hwm_kib(proc.pid))
            if first_seen is None and _consumed(metrics_port) > 0:
                first_seen = now  # the sink fetched its first records: the clock starts
                cpu_first = process_cpu_s(proc.pid)
            if first_seen is not None and gpu_rows(store) >= expected_rows:
                now = time.perf_counter()
                cpu_last = process_cpu_s(proc.pid)
                break
            if proc.poll() is not None or now - started > 600:
                stderr = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"sink did not finish: {stderr[-2000:]}")
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert first_seen is not None
    steady = expected_rows / max(now - first_seen, 1e-9)
    return {
        "rows_per_s": steady,
        "wall_s_including_startup": now - started,
        "peak_rss_mib": peak_kib / 1024,
        "core": core,
        "cpu_s": cpu_last - cpu_first,
    }


def process_cpu_s(pid: int) -> float:
    """Return a process's user + system CPU seconds, all threads (/proc/PID/stat); 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _consumed(port: int) -> float:
    """Read trainguard_sink_records_consumed_total from the sink's /metrics (0 until it serves)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("trainguard_sink_records_consumed_total "):
                    return float(line.split()[1])
    except OSError:
        return 0.0
    return 0.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _vm_hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def embedded_rate(events: list[GpuMetrics]) -> float:
    """Drain the events through the in-process bus and sink into chdb; return rows/s."""
    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddedStore(tmp, "bench")
        bus = InProcessBus()
        sink = build_sink(bus, store, SinkProcessSettings(batch_seconds=0.2))
        producer = bus.producer()
        for event in events:
            producer.send(event)
        began = time.perf_counter()
        while sink.stats.consumed < len(events):
            sink.step()
        rate = sink.stats.rows_written / (time.perf_counter() - began)
        store.close()
        return rate


def main() -> None:
    """Run every measurement and write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1250, help="8-GPU nodes (1250 = 10,000 GPUs)")
    parser.add_argument("--seconds", type=int, default=48, help="scrapes per node")
    parser.add_argument("--batch-records", type=int, default=5_000, help="records per sink batch")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    env = _env()
    log = lambda msg: print(f"[bench] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    log(f"generating {args.nodes} nodes x {args.seconds} scrapes")
    events = make_scrapes(args.nodes, args.seconds)
    rows = sum(len(e.gpus) for e in events)
    per_row = samples_in(events) / rows
    host, port = (
        env.get("TG_CLICKHOUSE_HOST", "127.0.0.1"),
        int(env.get("TG_CLICKHOUSE_PORT", "19000")),
    )
    tag = uuid.uuid4().hex[:8]
    topics = Topics(f"bench-{tag}.")
    bus = KafkaBus(env.get("TG_KAFKA_BOOTSTRAP", "127.0.0.1:19092"), topics)
    bus.ensure_topics(topics.telemetry(), partitions=4)
    log(f"producing {len(events):,} messages ({rows:,} GPU rows) to Kafka")
    producer = bus.producer()
    payload = 0
    for event in events:
        raw = encode_event(event)
        payload += len(raw)
        producer.send_raw(topics.for_event(event), event.key.encode(), raw)
    producer.flush(120)
    producer.close()
    sink_store = ServerStore(host, port, f"bench_sink_{tag}")
    raw_store = ServerStore(host, port, f"bench_raw_{tag}")
    try:
        migrate(raw_store)
        migrate(sink_store)
        log("raw inserts")
        raw_rate = raw_insert_rate(raw_store, events, args.batch_records)
        log("sink process")
        sink = sink_process_rate(env, bus, sink_store, host, port, rows, args.batch_records)
        log("embedded mode")
        embedded = embedded_rate(events[: max(1, len(events) // 4)])
        version = ".".join(map(str, sink_store.version()))
    finally:
        for store in (sink_store, raw_store):
            store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    sink_samples = round(sink["rows_per_s"] * per_row)
    ratio = round(sink["rows_per_s"] / raw_rate, 3)
    result: dict[str, object] = {
        "measured": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "clickhouse_server": version,
            "sink_pinned_to_core": sink["core"],
        },
        "workload": {
            "nodes": args.nodes,
            "gpus": args.nodes * 8,
            "scrapes_per_node": args.seconds,
            "messages": len(events),
            "gpu_rows": rows,
            "samples_per_row": round(per_row, 2),
            "json_bytes_per_message": round(payload / len(events)),
            "batch_records": args.batch_records,
        },
        "sink_samples_per_s": sink_samples,
        "sink_rows_per_s": round(sink["rows_per_s"]),
        "raw_insert_samples_per_s": round(raw_rate * per_row),
        "raw_insert_rows_per_s": round(raw_rate),
        "sink_to_raw_ratio": ratio,
        "embedded_samples_per_s": round(embedded * per_row),
        "sink_wall_s_including_startup": round(sink["wall_s_including_startup"], 2),
        "sink_peak_rss_mib": round(sink["peak_rss_mib"], 1),
        "bench_process_peak_rss_mib": round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
        ),
        "targets": {"sink_samples_per_s": 300_000, "sink_to_raw_ratio": 0.4},
    }
    result["meets_targets"] = {
        "sink_samples_per_s": sink_samples >= 300_000,
        "sink_to_raw_ratio": ratio >= 0.4,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
