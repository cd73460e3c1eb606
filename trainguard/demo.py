"""`trainguard demo`: the embedded pipeline (in-process bus, sink, chdb) on a simulated fleet."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from analytics.fleet import gpu_health_summary
from analytics.queries import table_counts
from analytics.store import EmbeddedStore
from ingest.bus import InProcessBus
from sim.fleet import Fleet, FleetSpec
from trainguard.settings import SinkProcessSettings
from trainguard.wiring import build_sink, run_in_thread


def _progress(done: int, total: int, events: int, started: float) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    rate = events / max(time.monotonic() - started, 1e-9)
    sys.stdout.write(
        f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} s simulated,"
        f" {events:,} events ({rate:,.0f}/s)"
    )
    sys.stdout.flush()


def run_demo(nodes: int, seconds: int, data_dir: str) -> int:
    """Simulate `nodes` nodes for `seconds` seconds through the whole ingest path."""
    if nodes < 1 or seconds < 1:
        print("demo: --nodes and --seconds must be >= 1", file=sys.stderr)
        return 2
    path = Path(data_dir)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    store = EmbeddedStore(str(path), "demo")
    bus = InProcessBus()
    sink = build_sink(bus, store, SinkProcessSettings(batch_seconds=0.5))
    stop = threading.Event()
    thread = run_in_thread(sink, stop)
    producer = bus.producer()
    fleet = Fleet(FleetSpec(nodes=nodes))
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=seconds)
    print(
        f"TrainGuard demo: {nodes} nodes x 8 GPUs, {seconds} s of telemetry -> "
        f"in-process bus -> sink -> embedded ClickHouse at {path}/"
    )
    began, sent = time.monotonic(), 0
    for tick, batch in enumerate(fleet.run(start, seconds), start=1):
        for event in batch:
            producer.send(event)
        sent += len(batch)
        if tick % 5 == 0 or tick == seconds:
            _progress(tick, seconds, sent, began)
    while sink.stats.consumed < sent and thread.is_alive():
        time.sleep(0.1)
    stop.set()
    thread.join(timeout=30)
    print(
        f"\n  stored {sink.stats.events_written:,} events as {sink.stats.rows_written:,} rows in "
        f"{time.monotonic() - began:.1f} s; dead letters: {sink.stats.dead_letters}"
    )
    for table, count in table_counts(store).items():
        print(f"    {table:<14} {count:>10,} rows")
    print("\nHottest GPUs over the window:")
    print(
        gpu_health_summary(store, start, start + timedelta(seconds=seconds), limit=5).to_string(
            index=False
        )
    )
    store.close()
    return 0 if sink.stats.events_written == sent else 1
