"""`trainguard demo`: the digital twin streamed through the embedded pipeline into chdb, then
diagnosed, with the injected ground truth printed alongside for comparison."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path

from analytics import evidence
from analytics.fleet import gpu_health_summary
from analytics.queries import table_counts
from analytics.store import EmbeddedStore, Store
from diagnosis.incidents import Incident
from diagnosis.replay import diagnose_dir
from ingest.bus import InProcessBus
from ingest.schema import EventBase
from sim.output import FileSink
from sim.scenario import load_scenario
from sim.twin import Twin
from trainguard.settings import SinkProcessSettings
from trainguard.wiring import build_sink, run_in_thread

DEMO_SCENARIO = Path(str(resources.files("sim") / "scenarios" / "demo.yaml"))  # package data


def run_demo(scenario_path: Path, data_dir: str) -> int:
    """Simulate the scenario, stream it through the bus and sink, and show what was stored."""
    scenario = load_scenario(scenario_path)
    path = Path(data_dir)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    store = EmbeddedStore(str(path), "demo")
    bus = InProcessBus()
    sink = build_sink(bus, store, SinkProcessSettings(batch_seconds=0.5))
    stop = threading.Event()
    thread = run_in_thread(sink, stop)
    producer = bus.producer()
    gpus = scenario.cluster.nodes * scenario.cluster.gpus_per_node
    print(
        f"TrainGuard demo: {scenario_path.name}: {gpus} GPUs, {len(scenario.jobs)} jobs, "
        f"{scenario.duration_s:.0f} s simulated -> in-process bus -> sink -> chdb at {path}/"
    )
    began = time.monotonic()

    def progress(t: float) -> None:
        if int(t) % 30 == 0:
            sys.stdout.write(
                f"\r  simulated {t:5.0f}/{scenario.duration_s:.0f} s, "
                f"{producer.sent:,} events sent, {sink.stats.events_written:,} stored"
            )
            sys.stdout.flush()

    recording = path / "recording"
    with FileSink(recording) as files:

        def emit(event: EventBase) -> None:
            producer.send(event)
            files(event)

        twin = Twin(scenario, emit, on_tick=progress)
        truth = twin.run()
        files.write_inventory(twin.hw.inventory(twin.node_names))
    while sink.stats.consumed < producer.sent and thread.is_alive():
        time.sleep(0.1)
    stop.set()
    thread.join(timeout=60)
    print(
        f"\n  stored {sink.stats.events_written:,} events as {sink.stats.rows_written:,} rows "
        f"in {time.monotonic() - began:.1f} s; dead letters: {sink.stats.dead_letters}"
    )
    for table, count in table_counts(store).items():
        print(f"    {table:<14} {count:>10,} rows")
    _evidence(store, twin.start, twin.start + timedelta(seconds=scenario.duration_s))
    _incidents(diagnose_dir(recording), twin.start)
    print("\nInjected (ground truth: never read by diagnosis, printed here to compare):")
    for fault in truth:
        effects = ", ".join(f"{e['effect']}@{e['at_s']:.0f}s" for e in fault["effects"]) or "-"
        where = {
            k: v
            for k, v in fault["component"].items()
            if k in ("node", "gpu", "nic", "job", "rank")
        }
        print(f"  {fault['kind']:<10} at {fault['onset_s']:5.0f} s  {where}  effects: {effects}")
    store.close()
    return 0 if sink.stats.consumed >= producer.sent else 1


def _incidents(incidents: list[Incident], start: datetime) -> None:
    print(
        f"\nTrainGuard's diagnosis (trainguard diagnose on the same telemetry): "
        f"{len(incidents)} incident(s)"
    )
    for inc in incidents:
        top = inc.suspects[0] if inc.suspects else None
        where = (
            "-"
            if top is None
            else ", ".join(
                f"{k}={v}"
                for k, v in top.model_dump().items()
                if k in ("node", "gpu", "nic", "switch", "rank") and v is not None
            )
        )
        at = (inc.detected_at - start).total_seconds()
        print(
            f"  {inc.category.value:<13} at {at:5.0f} s  blame {inc.blame.value:<14} "
            f"top suspect: {where or inc.job}  -> {inc.action.value}"
        )


def _evidence(store: Store, start: datetime, end: datetime) -> None:
    print("\nWhat the telemetry shows (queries over the stored events):")
    sections = {
        "kernel Xid lines by node": evidence.xid_lines_by_node(store),
        "GPUs with NVML errors": evidence.gpus_with_nvml_errors(store),
        "NIC ports seen DOWN": evidence.nic_ports_down(store),
        "collectives started and never completed": evidence.stalled_collectives(store, 5),
        "step time by job": evidence.step_times_by_job(store),
        "hottest GPUs": gpu_health_summary(store, start, end, limit=3),
    }
    for title, frame in sections.items():
        print(f"  {title}:")
        text = frame.to_string(index=False) if len(frame) else "(none)"
        print("    " + text.replace("\n", "\n    "))
