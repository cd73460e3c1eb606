"""`trainguard demo` (live): a simulated cluster where faults keep happening, streamed through
the embedded pipeline (in-process bus, sink, streaming diagnosis, chdb), with the REST API and
the console on loopback until interrupted.

The twin runs in rounds of the demo scenario, each with a few faults of the Llama 3 mix at
random places and times; simulation time is paced at `speed` x real time and starts now, so the
console's clocks read naturally.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from analytics.migrations import migrate
from analytics.store import EmbeddedStore
from api.auth import Role
from api.settings import ApiSettings
from diagnosis.incident_store import load_incidents
from ingest.bus import InProcessBus
from ingest.event_time import UNBOUNDED
from sim.output import BusSink
from sim.scenario import Scenario, load_scenario, parse_scenario
from sim.twin import Twin
from trainguard.settings import BusSettings, DiagnoseSettings, SinkProcessSettings
from trainguard.wiring import build_diagnosis, build_sink, run_in_thread

FAULT_KINDS = ("xid79", "hang", "straggler", "nic_down", "ecc_dbe", "user_error", "gsp_timeout")
FAULTS_PER_ROUND = 3


def round_scenario(base: Scenario, round_no: int, rng: np.random.Generator) -> Scenario:
    """Return the base scenario with this round's seed and faults at random places."""
    data = base.model_dump(mode="json")
    c = base.cluster
    jobs = base.jobs
    duration = base.duration_s
    faults: list[dict[str, Any]] = []
    kinds = rng.choice(FAULT_KINDS, size=FAULTS_PER_ROUND, replace=False)
    times = np.sort(rng.uniform(0.1 * duration, 0.8 * duration, FAULTS_PER_ROUND))
    for kind, at in zip(kinds, times, strict=True):
        node, gpu = int(rng.integers(c.nodes)), int(rng.integers(c.gpus_per_node))
        job = jobs[int(rng.integers(len(jobs)))]
        fault: dict[str, Any] = {"kind": str(kind), "at_s": round(float(at), 1)}
        if kind in ("xid79", "ecc_dbe", "gsp_timeout", "straggler"):
            fault.update(node=node, gpu=gpu)
        elif kind == "nic_down":
            fault.update(node=node, nic=int(rng.integers(c.nics_per_node)))
        elif kind == "hang":
            fault.update(job=job.id, rank=int(rng.integers(job.tp * job.pp * job.dp)))
        else:
            fault.update(job=job.id)
        faults.append(fault)
    data.update(seed=base.seed + round_no, faults=faults)
    return parse_scenario(data)


class Fleet(threading.Thread):
    """Runs twin rounds back to back into the bus until stopped."""

    def __init__(
        self,
        base: Scenario,
        bus: InProcessBus,
        speed: float,
        stop: threading.Event,
        rounds: int | None = None,
    ) -> None:
        super().__init__(name="twin", daemon=True)
        self.base, self.bus, self.speed, self.stop_event = base, bus, speed, stop
        self.rounds = rounds
        self.injected: list[dict[str, Any]] = []
        self.sent = 0

    def run(self) -> None:
        rng = np.random.default_rng(self.base.seed)
        producer = self.bus.producer()
        start = datetime.now(UTC).replace(microsecond=0)
        round_no = 0
        while not self.stop_event.is_set() and (self.rounds is None or round_no < self.rounds):
            scenario = round_scenario(self.base, round_no, rng)
            sink = BusSink(producer, speed=self.speed)
            twin = Twin(scenario, sink, start=start, on_tick=self._tick(sink))
            try:
                truth = twin.run()
            except _Stopped:
                break
            self.injected += [{**f, "round": round_no} for f in truth]
            self.sent += sink.sent
            start += timedelta(seconds=scenario.duration_s)
            round_no += 1

    def _tick(self, sink: BusSink) -> Callable[[float], None]:
        def tick(t: float) -> None:
            if self.stop_event.is_set():
                raise _Stopped
            sink.on_tick(t)

        return tick


class _Stopped(Exception):
    """Raised inside the twin's clock to end a round when the demo stops."""


def run_live(
    scenario_path: Path,
    data_dir: str,
    speed: float,
    stop: threading.Event,
    api: ApiSettings,
    on_ready: Callable[[str, str], None] | None = None,
) -> int:
    """Run the live demo until `stop` is set; return the exit status."""
    import uvicorn

    from actions.consumer import consume
    from api.app import create_app
    from api.server import server_options
    from trainguard.api_cli import build_context
    from trainguard.console_cli import start_console

    base = load_scenario(scenario_path)
    path = Path(data_dir)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    store = EmbeddedStore(str(path), "demo")
    migrate(store)
    bus = InProcessBus()
    # simulation time runs ahead of the wall clock at speed > 1: no lead bound in the demo
    sink = build_sink(bus, store, SinkProcessSettings(batch_seconds=0.5), event_time=UNBOUNDED)
    worker = build_diagnosis(
        bus, store, DiagnoseSettings(publish_interval_s=2.0), event_time=UNBOUNDED
    )
    threads = [run_in_thread(sink, stop)]
    diag = threading.Thread(target=worker.run, args=(stop,), name="diagnose", daemon=True)
    diag.start()
    engine, scheduler, publisher = _engine(store, bus, base)
    act_consumer = bus.consumer("trainguard-act", [bus.topics.incidents])
    act = threading.Thread(
        target=consume, args=(engine, act_consumer, stop, 1.0), name="act", daemon=True
    )
    act.start()
    context = build_context(store, api, BusSettings(), engine=engine, scheduler=scheduler)
    token = context.tokens.create("demo-admin", Role.ADMIN)
    server = uvicorn.Server(uvicorn.Config(create_app(context), **server_options(api)))
    web = threading.Thread(target=server.run, name="api", daemon=True)
    web.start()
    fleet = Fleet(base, bus, speed, stop)
    fleet.start()
    url = f"http://{api.host}:{api.port}"
    wait_port(api.host, api.port)
    console, console_url = start_console(url, token)
    if on_ready is not None:
        on_ready(url, token)
    gpus = base.cluster.nodes * base.cluster.gpus_per_node
    print(
        f"TrainGuard live demo: {gpus} GPUs, {len(base.jobs)} jobs, faults every few minutes, "
        f"{speed:g}x real time; data in {path}/\n"
        f"  console   {console_url}\n"
        f"  REST API  {url}/docs   (token: {token})\n"
        "  actions   approve mode: risky steps wait for an operator (POST /v1/actions/ID/approve)\n"
        "  Ctrl-C to stop",
        flush=True,
    )
    shown: set[str] = set()
    try:
        while not stop.wait(5.0):
            publisher.flush()  # a throttled change of the scheduler's state
            for inc in reversed(load_incidents(store, limit=20)):
                if inc.id not in shown:
                    shown.add(inc.id)
                    at = inc.detected_at.strftime("%H:%M:%S")
                    print(f"  {at} {inc.severity.value:<8} {inc.summary[:110]}", flush=True)
    finally:
        stop.set()
        console.terminate()
        console.wait(timeout=30)
        server.should_exit = True
        web.join(timeout=10)
        for thread in (*threads, diag, act):
            thread.join(timeout=30)
        store.close()
    print()
    return 0


def _engine(store: EmbeddedStore, bus: InProcessBus, base: Scenario) -> tuple[Any, Any, Any]:
    """Return the demo's action engine (approve mode, in-memory cluster), scheduler, publisher.

    The scheduler stores its state on every change (throttled), so an API or console in
    another process reads it from ClickHouse.
    """
    from actions.executors.scheduler import LyraCapacity
    from scheduler.service import Scheduler
    from scheduler.state_store import SnapshotPublisher
    from trainguard.act_cli import build_engine
    from trainguard.settings import ActSettings

    scheduler = Scheduler(training_servers=4, inference_servers=8, standbys=2)
    publisher = SnapshotPublisher(store, source="demo")
    scheduler.on_change = publisher.changed
    scheduler.loan(3)  # the night's idle inference servers, lent to training
    settings = ActSettings(mode="approve", executor="local", fleet_nodes=base.cluster.nodes)
    engine = build_engine(settings, store, bus, capacity=LyraCapacity(scheduler))
    return engine, scheduler, publisher


def wait_port(host: str, port: int, timeout_s: float = 30.0) -> bool:
    """Return whether something accepts connections on host:port within the timeout."""
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((host, port)) == 0:
                return True
        time.sleep(0.2)
    return False
