"""A store filled the way production fills it: twin telemetry through the sink and the
streaming diagnosis worker (xid79 on node-0001 GPU 2 of job j1; rank 13 of job j2 hangs)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from analytics.store import Store
from analytics.writer import ClickHouseWriter
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import InProcessBus, Topics
from ingest.sink import Sink, SinkSettings
from sim.output import BusSink
from sim.scenario import parse_scenario
from sim.twin import Twin

SCENARIO: dict[str, Any] = {
    "seed": 11,
    "cluster": {"nodes": 8, "gpus_per_node": 8, "nodes_per_rack": 4},
    "jobs": [
        {"id": "j1", "tp": 8, "dp": 4, "step_time_s": 2.0},
        {"id": "j2", "tp": 8, "dp": 4, "step_time_s": 2.0},
    ],
    "duration_s": 180,
    "host_interval_s": 5,
    "faults": [
        {"kind": "xid79", "node": 1, "gpu": 2, "at_s": 60},
        {"kind": "hang", "job": "j2", "rank": 13, "at_s": 90},
    ],
}


def populate(store: Store, scenario: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run the twin through the sink and diagnosis into the store; return the truth."""
    bus = InProcessBus(Topics("api."), partitions=2)
    producer = bus.producer()
    to_bus = BusSink(producer, speed=None)
    truth = Twin(parse_scenario(scenario or SCENARIO), to_bus).run()
    sink = Sink(
        bus.consumer("sink", bus.topics.telemetry()),
        ClickHouseWriter(store),
        SinkSettings(batch_seconds=0.2),
    )
    worker = DiagnosisWorker(
        bus.consumer("diagnose", bus.topics.telemetry()),
        bus.producer(),
        store,
        bus.topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.1),
    )
    stop = threading.Event()
    thread = threading.Thread(target=sink.run, args=(stop,), daemon=True)
    thread.start()
    while worker.stats.consumed < to_bus.sent:
        worker.step()
    worker.drain()
    while sink.stats.consumed < to_bus.sent and thread.is_alive():
        stop.wait(0.1)
    stop.set()
    thread.join(timeout=30)
    return truth


def engine_for(
    store: Store, approve: bool = True, webhook_hosts: tuple[str, ...] = ("127.0.0.1",)
) -> tuple[Any, Any]:
    """Return an action engine over the store (in-memory cluster backend) and its scheduler.

    The twin's telemetry is dated in the past, so the incident TTL is lifted.
    """
    from actions.executors.scheduler import LyraCapacity
    from scheduler.service import Scheduler
    from trainguard.act_cli import build_engine
    from trainguard.settings import ActSettings

    scheduler = Scheduler(training_servers=2, inference_servers=4, standbys=1)
    settings = ActSettings(
        mode="approve" if approve else "auto",
        executor="local",
        fleet_nodes=8,
        incident_ttl_s=10**9,
        webhook_hosts=list(webhook_hosts),
    )
    return build_engine(settings, store, None, capacity=LyraCapacity(scheduler)), scheduler


def act_on_incidents(engine: Any, store: Store) -> None:
    """Hand every stored incident to the engine, as `trainguard act` would."""
    from diagnosis.incident_store import load_incidents

    for incident in load_incidents(store):
        engine.handle(incident)


def api_context(store: Store, generation_file: Path | None = None) -> Any:
    """Return an API context over a populated store, with an engine that has acted on it
    (and a write generation shared through `generation_file`, as `trainguard api` workers)."""
    from api.auth import TokenBook
    from api.context import ApiContext
    from api.generation import Generation

    engine, scheduler = engine_for(store)
    act_on_incidents(engine, store)
    return ApiContext(
        store=store,
        tokens=TokenBook(store),
        checks={"clickhouse": lambda: None},
        engine=engine,
        deliverer=engine.dispatcher.deliverer,
        scheduler=scheduler,
        generation=Generation(generation_file),
    )
