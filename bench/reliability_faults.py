"""Fault runs on the real services: kill or cut off one part of the pipeline mid-stream.

Each run feeds the digital twin's telemetry (several faults of different kinds) through the
real Kafka bus, the real sink into ClickHouse and the real diagnosis worker, injects faults of
the infrastructure itself while it flows, then reports:

- events lost: published events with fewer rows stored than they make (or none);
- events duplicated: events with more rows stored than they make, as a query without FINAL
  sees them (per telemetry table, row counts per event id);
- incidents wrong: incidents stored that an uninterrupted in-memory `Replay` of the same
  events does not give, or gives differently (category, job, top suspect), plus those missing.

Runs:
- `broker_kill`: a private single broker (deploy/kafka.sh in a directory of its own, own
  ports) SIGKILLed mid-stream and restarted, under the in-process sink and worker;
- `diagnose_kill`: `trainguard diagnose` SIGKILLed mid-stream and restarted (shared broker);
- `sink_kill`: `trainguard sink` SIGKILLed mid-batch several times (shared broker);
- `clickhouse_outage`: a private ClickHouse server (deploy/clickhouse.sh in a directory of its
  own) SIGKILLed and restarted, then frozen (SIGSTOP/SIGCONT), under the sink and the worker.

The shared services (deploy/services.sh) are never stopped: every run has its own topics,
database, consumer groups, and private servers where the fault is a server's.

    python -m bench.reliability_faults [--size N] [RUN ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from analytics.columns import ColumnBatch
from analytics.migrations import migrate
from analytics.store import ServerStore, Store, StoreError
from analytics.tables import TELEMETRY_TABLES
from analytics.writer import ClickHouseWriter
from diagnosis.incident_store import load_incidents
from diagnosis.incidents import Incident
from diagnosis.replay import Replay
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import BusError, Consumer, Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import EventBase
from ingest.sink import Sink, SinkSettings
from sim.scenario import parse_scenario
from sim.twin import Twin
from trainguard.settings import local_services_env

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
PARTITIONS = 4


@dataclass(frozen=True)
class FaultRun:
    """What one fault run injected and what it found."""

    name: str
    faults_injected: int
    events_published: int
    events_lost: int
    events_duplicated: int
    incidents_expected: int
    incidents_wrong: int
    seconds: float
    notes: str


class FaultRunError(RuntimeError):
    """The run itself could not be carried out (a service did not start, nothing consumed)."""


# ---------------------------------------------------------------------------- the workload


def scenario(size: int = 1, duration_s: float = 240.0) -> dict[str, Any]:
    """Return a twin scenario of `size` blocks of 8 nodes x 8 GPUs, two 32-GPU jobs each.

    Every block has four faults of different kinds: a straggling GPU (60 s), a hung rank
    (90 s), a GPU falling off the bus (150 s) and a NIC port going down (200 s).
    """
    if size < 1:
        raise ValueError("size must be at least 1")
    jobs: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    for b in range(size):
        first, a, z = 8 * b, f"j{2 * b + 1}", f"j{2 * b + 2}"
        jobs += [
            {"id": a, "tp": 8, "dp": 4, "step_time_s": 2.0, "first_node": first},
            {"id": z, "tp": 8, "dp": 4, "step_time_s": 2.0, "first_node": first + 4},
        ]
        faults += [
            {"kind": "straggler", "node": first + 1, "gpu": 3, "at_s": 60, "slowdown": 1.6},
            {"kind": "hang", "job": z, "rank": 13, "at_s": 90},
            {"kind": "xid79", "node": first + 2, "gpu": 2, "at_s": 150},
            {"kind": "nic_down", "node": first + 6, "nic": 1, "at_s": 200},
        ]
    return {
        "seed": 5,
        "cluster": {"nodes": 8 * size, "gpus_per_node": 8, "nodes_per_rack": 4},
        "jobs": jobs,
        "duration_s": duration_s,
        "host_interval_s": 5,
        "faults": [f for f in faults if f["at_s"] < duration_s],
    }


@dataclass(frozen=True)
class Workload:
    """The twin's events in time order, and the incidents an uninterrupted replay gives."""

    events: list[EventBase]
    faults: int
    expected: dict[str, Incident]


def workload(size: int = 1, duration_s: float = 240.0) -> Workload:
    """Simulate the scenario, dated a day ago (inside every receiver's event-time window)."""
    data = scenario(size, duration_s)
    start = (datetime.now(UTC) - timedelta(days=1)).replace(second=0, microsecond=0)
    events: list[EventBase] = []
    Twin(parse_scenario(data), events.append, start=start).run()
    events.sort(key=lambda e: e.ts)
    replay = Replay()
    for event in events:
        replay.feed(event)
    expected = {i.id: i for i in replay.finish()}
    return Workload(events, len(data["faults"]), expected)


def chunks(events: Sequence[EventBase], size: int) -> Iterator[Sequence[EventBase]]:
    """Yield consecutive slices of at most `size` events."""
    for i in range(0, len(events), size):
        yield events[i : i + size]


# ---------------------------------------------------------------------------- the checks


def expected_rows(events: Sequence[EventBase]) -> dict[str, Counter[str]]:
    """Return, per telemetry table, the rows each event id makes (the writer's own mapping)."""
    batch = ColumnBatch()
    for event in events:
        batch.add_event(event, ("", 0, 0))
    out: dict[str, Counter[str]] = {}
    for table, rows in batch.rows.items():
        # every row ends with (event_id, topic, partition, offset)
        out[table] = Counter(str(r[-4]) for r in rows)
    return out


@dataclass(frozen=True)
class StorageCheck:
    """Events missing or stored more than once, as plain queries (no FINAL) see them."""

    lost: int
    duplicated: int
    unknown_ids: int
    dead_letters: int
    detail: str


def check_storage(store: Store, events: Sequence[EventBase]) -> StorageCheck:
    """Compare the rows stored per (table, event id) with those each published event makes."""
    expected = expected_rows(events)
    published = {e.id for e in events}
    lost: set[str] = set()
    twice: set[str] = set()
    unknown: set[str] = set()
    lines = []
    db = store.database
    for table in TELEMETRY_TABLES:
        want = expected.get(table.name, Counter())
        frame = store.query_df(
            f"SELECT event_id, count() AS n FROM `{db}`.`{table.name}` GROUP BY event_id"
        )
        got = Counter({str(k): int(n) for k, n in frame.itertuples(index=False)})
        for event_id, n in want.items():
            if got.get(event_id, 0) < n:
                lost.add(event_id)
            elif got[event_id] > n:
                twice.add(event_id)
        unknown |= {k for k in got if k not in want and k not in published}
        twice |= {k for k in got if k not in want and k in published}
        rows, distinct = sum(got.values()), len(got)
        if want or got:
            lines.append(
                f"{table.name}: {rows} rows / {distinct} ids stored, "
                f"{sum(want.values())} / {len(want)} published"
            )
    letters = store.query_df(f"SELECT count() AS n FROM `{db}`.dead_letter")
    dead = _first(letters)
    return StorageCheck(len(lost), len(twice), len(unknown), dead, "; ".join(lines))


def _first(frame: pd.DataFrame) -> int:
    """Return the first cell of a one-number query as an int."""
    return int(frame.to_numpy()[0, 0])


def stored_rows(store: Store) -> int:
    """Return the rows of every telemetry table together (no FINAL); -1 if unreadable."""
    union = " + ".join(
        f"(SELECT count() FROM `{store.database}`.`{t.name}`)" for t in TELEMETRY_TABLES
    )
    try:
        return _first(store.query_df(f"SELECT {union} AS n"))
    except StoreError:
        return -1


def _view(incidents: dict[str, Incident]) -> dict[str, tuple[Any, ...]]:
    def top(i: Incident) -> tuple[Any, ...]:
        s = i.suspects[0] if i.suspects else None
        return (s.component, s.node, s.gpu, s.rank) if s else ()

    return {k: (str(i.category), i.job, top(i)) for k, i in incidents.items()}


def check_incidents(store: Store, expected: dict[str, Incident]) -> tuple[int, str]:
    """Return (incidents wrong, what differs): extra, missing or different from the replay."""
    stored = _view({i.id: i for i in load_incidents(store)})
    want = _view(expected)
    wrong = []
    for key in sorted(set(stored) | set(want)):
        if stored.get(key) != want.get(key):
            wrong.append(f"{key}: stored {stored.get(key)} expected {want.get(key)}")
    return len(wrong), "; ".join(wrong)


def wait_until(condition: Callable[[], bool], timeout_s: float, step_s: float = 0.2) -> bool:
    """Poll until condition() is true; return whether it became true in time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return condition()


def wait_stored(store: Store, rows: int, timeout_s: float, stall_s: float = 20.0) -> bool:
    """Wait for `rows` telemetry rows stored, then a little longer (late duplicates show).

    Give up early when nothing more was stored for `stall_s` (rows lost for good).
    """
    deadline = time.monotonic() + timeout_s
    seen, moved = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = stored_rows(store)
        if now >= rows:
            break
        if now != seen:
            seen, moved = now, time.monotonic()
        elif time.monotonic() - moved >= stall_s:
            break
        time.sleep(0.25)
    time.sleep(1.5)
    return stored_rows(store) >= rows


# ---------------------------------------------------------------------------- services


def shared_services() -> tuple[str, str, int]:
    """Return (Kafka bootstrap, ClickHouse host, ClickHouse port) of deploy/services.sh."""
    env = {**local_services_env(REPO), **os.environ}
    return (
        env.get("TG_KAFKA_BOOTSTRAP", "127.0.0.1:19092"),
        env.get("TG_CLICKHOUSE_HOST", "127.0.0.1"),
        int(env.get("TG_CLICKHOUSE_PORT", "19000")),
    )


def free_port() -> int:
    """Return a loopback TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _signal(pid: int | None, sig: signal.Signals) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int, timeout_s: float) -> bool:
    def dead() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie (its parent shell has not reaped it) is dead too
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
        except (OSError, IndexError):
            return True

    return wait_until(dead, timeout_s, 0.05)


class _DeployedServer:
    """A server started by a deploy/ script in a services directory of its own."""

    script = ""
    subdir = ""
    pidfile = ""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = {**os.environ, "TG_SERVICES_DIR": str(root), **env}
        self.log = root / f"{self.subdir}-deploy.log"

    def _run(self, command: str, timeout_s: float) -> None:
        with self.log.open("ab") as out:
            done = subprocess.run(
                ["bash", str(DEPLOY / self.script), command],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise FaultRunError(f"{self.script} {command} failed ({done.returncode}):\n{tail}")

    @property
    def pid(self) -> int | None:
        return _pid(self.root / self.subdir / self.pidfile)

    def start(self, after_s: float = 0.0, timeout_s: float = 180) -> None:
        """Start it (`after_s` from now) and wait until it answers."""
        time.sleep(after_s)
        self._run("start", timeout_s)

    def kill(self) -> None:
        """SIGKILL the server (no shutdown of any kind) and wait until it is gone."""
        pid = self.pid
        if not _signal(pid, signal.SIGKILL):
            raise FaultRunError(f"{self.script}: no server to kill")
        assert pid is not None
        _gone(pid, 30)

    def stop(self) -> None:
        """Stop it whatever its state (SIGCONT first, in case it is frozen)."""
        _signal(self.pid, signal.SIGCONT)
        try:
            self._run("stop", 120)
        except (FaultRunError, subprocess.TimeoutExpired):
            _signal(self.pid, signal.SIGKILL)


class PrivateKafka(_DeployedServer):
    """A single KRaft broker of deploy/kafka.sh with its own ports, data and small heap.

    The jars the shared broker resolved are linked in, so no Maven run is needed.
    """

    script, subdir, pidfile = "kafka.sh", "kafka", "kafka.pid"

    def __init__(self, root: Path, heap_mb: int = 256) -> None:
        self.port = free_port()
        cport = free_port()
        while cport == self.port:
            cport = free_port()
        super().__init__(
            root,
            {
                "TG_KAFKA_PORT": str(self.port),
                "TG_KAFKA_CONTROLLER_PORT": str(cport),
                "TG_KAFKA_HEAP_MB": str(heap_mb),
                "TG_PYTHON": sys.executable,
            },
        )
        (root / "kafka").mkdir(parents=True, exist_ok=True)
        shared = Path(os.environ.get("TG_SERVICES_DIR", DEPLOY / ".local")) / "kafka"
        for libs in shared.glob("libs-*"):
            if (libs / ".complete").exists():
                (root / "kafka" / libs.name).symlink_to(libs.resolve())

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


class PrivateClickHouse(_DeployedServer):
    """A ClickHouse server of deploy/clickhouse.sh with its own ports and data."""

    script, subdir, pidfile = "clickhouse.sh", "clickhouse", "clickhouse.pid"

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        http = free_port()
        while http == self.port:
            http = free_port()
        super().__init__(
            root, {"TG_CLICKHOUSE_PORT": str(self.port), "TG_CLICKHOUSE_HTTP_PORT": str(http)}
        )


def joined(bus: KafkaBus, group: str, attempts: int = 6) -> Consumer:
    """Return a group member owning every telemetry partition before anything is read.

    A group joined right after its topics were created can be assigned nothing for minutes
    (the topics' metadata has not reached the client yet): rejoin under a new name.
    """
    names = bus.topics.telemetry()
    for attempt in range(attempts):
        consumer = bus.consumer(f"{group}-{attempt}", names)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if consumer.poll(1, 0.2):
                raise FaultRunError(f"{group}: records read before anything was published")
            if len(consumer.assignment()) == PARTITIONS * len(names):
                return consumer
        consumer.close()
    raise FaultRunError(f"no partitions assigned to {group} after {attempts} joins")


class Publisher:
    """One long-lived producer, as an agent has: publishes slices and waits for their acks.

    A slice the producer reports as not delivered (a broker down past the delivery timeout)
    is sent again whole, as an agent re-sends what it could not deliver: the sink drops the
    re-sent ids it has stored. `resent` counts the events sent again.
    """

    def __init__(self, bus: KafkaBus, flush_timeout_s: float = 180) -> None:
        self.producer = bus.producer()
        self.flush_timeout_s = flush_timeout_s
        self.resent = 0

    def publish(self, events: Sequence[EventBase]) -> None:
        for attempt in range(5):
            try:
                for event in events:
                    self.producer.send(event)
                self.producer.flush(self.flush_timeout_s)
                return
            except BusError as exc:
                log.warning("publish attempt %d failed (%s); re-sending the slice", attempt, exc)
                self.resent += len(events)
                time.sleep(1)
        raise FaultRunError(f"{len(events)} events not delivered after 5 attempts")

    def close(self) -> None:
        with suppress(BusError):
            self.producer.close()


def publish(bus: KafkaBus, events: Sequence[EventBase]) -> int:
    """Publish events with a producer of their own; return the events re-sent."""
    publisher = Publisher(bus)
    try:
        publisher.publish(events)
    finally:
        publisher.close()
    return publisher.resent


class SinkThread:
    """The real sink (`Sink` + `ClickHouseWriter`) in a thread of this process."""

    def __init__(self, consumer: Consumer, store: Store, settings: SinkSettings) -> None:
        self.sink = Sink(consumer, ClickHouseWriter(store), settings)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="sink", daemon=True)
        self.error: BaseException | None = None
        self.thread.start()

    def _run(self) -> None:
        try:
            self.sink.run(self.stop_event)
        except BaseException as exc:  # noqa: BLE001 - reported by the run
            self.error = exc
            log.exception("sink thread died")

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=60)
        with suppress(BusError):
            self.sink.consumer.close()


class WorkerThread:
    """The real diagnosis worker stepping in a thread; drained when stopped."""

    def __init__(self, worker: DiagnosisWorker) -> None:
        self.worker = worker
        self.stop_event = threading.Event()
        self.caught_up = False  # the last poll read nothing and every partition was at its end
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="diagnose", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stop_event.is_set():
                read = self.worker.step()
                owned = self.worker.consumer.assignment()
                self.caught_up = (
                    read == 0 and bool(owned) and owned <= self.worker.consumer.caught_up()
                )
            self.worker.drain()
        except BaseException as exc:  # noqa: BLE001 - reported by the run
            self.error = exc
            log.exception("diagnosis thread died")

    def done(self, published: int) -> bool:
        return self.worker.stats.consumed >= published and self.caught_up

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=120)
        with suppress(BusError):
            self.worker.consumer.close()
        with suppress(BusError):
            self.worker.producer.close()


def _worker(bus: KafkaBus, store: Store, group: str) -> DiagnosisWorker:
    return DiagnosisWorker(
        joined(bus, group),
        bus.producer(),
        store,
        bus.topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.2, status_poll_s=0),
    )


@contextmanager
def _database(host: str, port: int, name: str, keep: bool = False) -> Iterator[ServerStore]:
    store = ServerStore(host, port, name)
    migrate(store)
    try:
        yield store
    finally:
        if not keep:
            with suppress(StoreError):
                store.command(f"DROP DATABASE IF EXISTS `{name}`")
        store.close()


def _tmpdir(stack: ExitStack, name: str) -> Path:
    # short and plain: deploy/ scripts write it into configs (A-Z a-z 0-9 . _ / + @ - only)
    path = Path(tempfile.mkdtemp(prefix=f"tg-{name}-", dir="/tmp"))
    stack.callback(shutil.rmtree, path, True)
    return path


def _finish(
    name: str,
    faults: int,
    work: Workload,
    store: Store,
    t0: float,
    notes: list[str],
    check_diagnosis: bool = True,
) -> FaultRun:
    storage = check_storage(store, work.events)
    notes.append(storage.detail)
    if storage.unknown_ids:
        notes.append(f"{storage.unknown_ids} stored ids never published")
    if storage.dead_letters:
        notes.append(f"{storage.dead_letters} dead letters")
    wrong, expected = 0, 0
    if check_diagnosis:
        expected = len(work.expected)
        wrong, detail = check_incidents(store, work.expected)
        if detail:
            notes.append(f"incidents differing: {detail}")
    return FaultRun(
        name=name,
        faults_injected=faults,
        events_published=len(work.events),
        events_lost=storage.lost,
        events_duplicated=storage.duplicated + storage.unknown_ids,
        incidents_expected=expected,
        incidents_wrong=wrong,
        seconds=round(time.monotonic() - t0, 1),
        notes=" | ".join(n for n in notes if n),
    )


# ---------------------------------------------------------------------------- the runs


def broker_kill(
    size: int = 1,
    duration_s: float = 240.0,
    kills: int = 1,
    down_s: float = 3.0,
    clickhouse: tuple[str, int] | None = None,
) -> FaultRun:
    """SIGKILL a private Kafka broker mid-stream (`kills` times) and restart it `down_s` later.

    The in-process sink (into a database of its own on the shared ClickHouse) and diagnosis
    worker read from that broker throughout; the publisher keeps publishing while it is down.
    """
    t0 = time.monotonic()
    work = workload(size, duration_s)
    host, port = clickhouse or shared_services()[1:]
    topics = Topics(f"fr-{uuid.uuid4().hex[:8]}.")
    notes: list[str] = []
    with ExitStack() as stack:
        kafka = PrivateKafka(_tmpdir(stack, "kafka"))
        stack.callback(kafka.stop)
        kafka.start()
        bus = KafkaBus(kafka.bootstrap, topics, linger_ms=5)
        bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=PARTITIONS)
        name = f"fr_broker_{uuid.uuid4().hex[:8]}"
        store = stack.enter_context(_database(host, port, name))
        sink_store = stack.enter_context(_closing(ServerStore(host, port, name)))
        worker_store = stack.enter_context(_closing(ServerStore(host, port, name)))
        sink = SinkThread(joined(bus, "sink"), sink_store, SinkSettings(batch_seconds=0.2))
        stack.callback(sink.stop)
        diag = WorkerThread(_worker(bus, worker_store, "diagnose"))
        stack.callback(diag.stop)

        parts = list(chunks(work.events, 400))
        at = {max(1, round(len(parts) * (k + 1) / (kills + 2))) for k in range(kills)}
        publisher = Publisher(bus)
        stack.callback(publisher.close)
        killed = 0
        restarts: list[threading.Thread] = []
        for i, part in enumerate(parts):
            if i in at:
                for restart in restarts:
                    restart.join(timeout=180)  # the previous restart is over
                kafka.kill()
                killed += 1
                restart = threading.Thread(target=kafka.start, args=(down_s,), daemon=True)
                restart.start()
                restarts.append(restart)
            publisher.publish(part)
            time.sleep(0.05)  # a live stream: the consumers are mid-read when the broker dies
        for restart in restarts:
            restart.join(timeout=180)
        rows = sum(sum(c.values()) for c in expected_rows(work.events).values())
        # a member whose coordinator was the killed broker may take a session timeout and a
        # rebalance to consume again: a minute without progress is a stall, not less
        stored = wait_stored(store, rows, 240, stall_s=60)
        diagnosed = wait_until(lambda: diag.done(len(work.events)), 180)
        diag.stop()
        sink.stop()
        notes += [
            f"broker killed {killed}x mid-stream, down {down_s:g} s + restart",
            f"{publisher.resent} events re-sent by the publisher" if publisher.resent else "",
            "" if stored else "sink never caught up",
            "" if diagnosed else "worker never caught up",
            f"sink: {sink.sink.stats.commit_failures} commit failures, "
            f"{sink.sink.stats.duplicates} duplicates dropped",
            f"worker: consumed {diag.worker.stats.consumed}, fed {diag.worker.stats.fed}, "
            f"late {diag.worker.stats.late}, bus errors {diag.worker.stats.bus_errors}",
        ]
        for thread in (sink, diag):
            if thread.error is not None:
                notes.append(f"{type(thread).__name__} died: {thread.error!r}")
        return _finish("broker_kill", killed, work, store, t0, notes)
    raise AssertionError("unreachable")  # pragma: no cover (ExitStack does not swallow)


@contextmanager
def _closing(store: ServerStore) -> Iterator[ServerStore]:
    try:
        yield store
    finally:
        store.close()


def _process_env(
    bootstrap: str, topics: Topics, host: str, port: int, database: str, **extra: str
) -> dict[str, str]:
    return {
        **os.environ,
        "TG_KAFKA_MODE": "kafka",
        "TG_KAFKA_BOOTSTRAP": bootstrap,
        "TG_KAFKA_TOPIC_PREFIX": topics.prefix,
        "TG_CLICKHOUSE_MODE": "server",
        "TG_CLICKHOUSE_HOST": host,
        "TG_CLICKHOUSE_PORT": str(port),
        "TG_CLICKHOUSE_DATABASE": database,
        **extra,
    }


class Child:
    """A `trainguard` subprocess of this run, logging to a file; killed when the run ends."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "trainguard", *args],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM (a clean stop), SIGKILL if it does not end in time."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def _metric(port: int, name: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def diagnose_kill(
    size: int = 1,
    duration_s: float = 240.0,
    kill_at: float = 0.6,
    services: tuple[str, str, int] | None = None,
) -> FaultRun:
    """SIGKILL `trainguard diagnose` mid-stream, restart it, compare incidents with the replay.

    The real sink (in this process) stores the same telemetry, so the restarted worker takes
    the jobs' topologies and the open incidents back from the store. Shared broker, topics and
    a database of this run's own.
    """
    t0 = time.monotonic()
    work = workload(size, duration_s)
    bootstrap, host, port = services or shared_services()
    topics = Topics(f"fr-{uuid.uuid4().hex[:8]}.")
    name = f"fr_diag_{uuid.uuid4().hex[:8]}"
    notes: list[str] = []
    with ExitStack() as stack:
        logs = _tmpdir(stack, "diag")
        bus = KafkaBus(bootstrap, topics, linger_ms=5)
        bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=PARTITIONS)
        store = stack.enter_context(_database(host, port, name))
        sink_store = stack.enter_context(_closing(ServerStore(host, port, name)))
        sink = SinkThread(joined(bus, "sink"), sink_store, SinkSettings(batch_seconds=0.2))
        stack.callback(sink.stop)
        metrics = free_port()
        env = _process_env(
            bootstrap,
            topics,
            host,
            port,
            name,
            TG_DIAGNOSE_GROUP=f"diagnose-{topics.prefix}",
            TG_DIAGNOSE_PUBLISH_INTERVAL_S="0",
            TG_DIAGNOSE_METRICS_PORT=str(metrics),
        )

        def start() -> Child:
            child = Child(["diagnose"], env, logs / "diagnose.log")
            stack.callback(child.kill)
            return child

        def consumed() -> float:
            return _metric(metrics, "trainguard_diagnose_consumed") or 0.0

        def fed() -> float:
            return _metric(metrics, "trainguard_diagnose_fed") or 0.0

        cut = int(len(work.events) * kill_at)
        before, after = work.events[:cut], work.events[cut:]
        first = start()
        publish(bus, before)
        if not wait_until(lambda: fed() >= 0.9 * cut or not first.alive(), 120):
            raise FaultRunError(f"diagnose fed {fed():.0f} of {cut}:\n{first.tail()}")
        wait_until(lambda: (_metric(metrics, "trainguard_diagnose_incidents") or 0) >= 1, 10)
        # killed with incidents open (stored) and records read but not yet fed or committed
        unfed = consumed() - fed()
        opened = _metric(metrics, "trainguard_diagnose_incidents") or 0.0
        first.kill()
        topologies = wait_until(lambda: _count(store, "job_topology") >= 2 * size, 60)
        wait_stored(store, _rows(work.events[:cut]), 60)
        second = start()
        publish(bus, after)
        total = len(work.events)
        # the restart re-reads what was not committed: it reads at least the rest
        done = wait_until(lambda: consumed() >= total - cut, 180, 0.5) and _settled(metrics)
        restored = [
            _metric(metrics, f"trainguard_diagnose_restored_{n}") for n in ("jobs", "incidents")
        ]
        second.stop()
        stored = wait_stored(store, _rows(work.events), 120)
        sink.stop()
        notes += [
            f"diagnose SIGKILLed after publishing {cut} of {total} events, with {opened:.0f} "
            f"incidents opened and {unfed:.0f} records read but not fed",
            f"the restart restored {restored[0]} jobs and {restored[1]} incidents",
            "" if topologies else "topologies not stored before the restart",
            "" if done else f"restarted worker never caught up:\n{second.tail()}",
            "" if stored else "sink never caught up",
        ]
        return _finish("diagnose_kill", 1, work, store, t0, notes)
    raise AssertionError("unreachable")  # pragma: no cover


def _settled(metrics_port: int, quiet_s: float = 4.0, timeout_s: float = 120) -> bool:
    """Wait until the worker reads and feeds nothing more for `quiet_s` (its stream's end).

    Events ahead of the time the sources agree on stay buffered until more arrive: a live
    worker never feeds the very end of a stream, so fed need not reach consumed.
    """
    names = ("trainguard_diagnose_consumed", "trainguard_diagnose_fed")
    last: tuple[float | None, ...] = ()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = tuple(_metric(metrics_port, n) for n in names)
        if now == last and None not in now:
            return True
        last = now
        time.sleep(quiet_s)
    return False


def _count(store: Store, table: str) -> int:
    try:
        frame = store.query_df(f"SELECT count() AS n FROM `{store.database}`.`{table}`")
    except StoreError:
        return -1
    return _first(frame)


def _rows(events: Sequence[EventBase]) -> int:
    return sum(sum(c.values()) for c in expected_rows(events).values())


def sink_kill(
    size: int = 1,
    duration_s: float = 240.0,
    kill_at: Sequence[float] = (0.15, 0.4, 0.65, 0.85),
    services: tuple[str, str, int] | None = None,
) -> FaultRun:
    """SIGKILL `trainguard sink` mid-batch at each fraction of the rows stored; restart it.

    All of the twin's events are published first (shared broker, topics of this run); sinks
    in the same group with a static instance id store them into a database of this run's own.
    No diagnosis runs here (the worker reads Kafka, not the sink): incidents are not checked.
    """
    t0 = time.monotonic()
    work = workload(size, duration_s)
    bootstrap, host, port = services or shared_services()
    topics = Topics(f"fr-{uuid.uuid4().hex[:8]}.")
    name = f"fr_sink_{uuid.uuid4().hex[:8]}"
    notes: list[str] = []
    with ExitStack() as stack:
        logs = _tmpdir(stack, "sink")
        bus = KafkaBus(bootstrap, topics, linger_ms=5)
        bus.ensure_topics(topics.telemetry(), partitions=PARTITIONS)
        joined(bus, "probe").close()  # the topics' metadata is everywhere before a sink joins
        store = stack.enter_context(_database(host, port, name))
        publish(bus, work.events)
        env = _process_env(
            bootstrap,
            topics,
            host,
            port,
            name,
            TG_SINK_GROUP=f"sink-{topics.prefix}",
            TG_SINK_INSTANCE_ID="sink-0",
            TG_SINK_BATCH_RECORDS="1500",
            TG_SINK_BATCH_SECONDS="0.3",
        )
        total = _rows(work.events)
        kills = 0
        for fraction in kill_at:
            child = Child(["sink"], env, logs / "sink.log")
            stack.callback(child.kill)
            reached = wait_until(
                lambda f=fraction, c=child: stored_rows(store) >= f * total or not c.alive(),  # type: ignore[misc]
                120,
                0.05,
            )
            if not child.alive():
                raise FaultRunError(f"sink exited:\n{child.tail()}")
            if not reached:
                raise FaultRunError(f"sink stored under {fraction:.0%} in 120 s:\n{child.tail()}")
            child.kill()
            kills += 1
        last = Child(["sink"], env, logs / "sink.log")
        stack.callback(last.kill)
        stored = wait_stored(store, total, 120)
        last.stop()
        notes += [
            f"sink SIGKILLed {kills}x mid-batch at {', '.join(f'{f:.0%}' for f in kill_at)} "
            "of the rows",
            "" if stored else f"sink never caught up:\n{last.tail()}",
            "incidents not checked (no diagnosis in this run)",
        ]
        return _finish("sink_kill", kills, work, store, t0, notes, check_diagnosis=False)
    raise AssertionError("unreachable")  # pragma: no cover


def clickhouse_outage(
    size: int = 1,
    duration_s: float = 240.0,
    down_s: float = 3.0,
    frozen_s: float = 4.0,
    kafka: str | None = None,
) -> FaultRun:
    """SIGKILL a private ClickHouse server mid-stream and restart it; later freeze it a while.

    The in-process sink and diagnosis worker (shared broker, topics of this run) store into
    that server; the publisher keeps publishing throughout. The shared server is not touched.
    """
    t0 = time.monotonic()
    work = workload(size, duration_s)
    bootstrap = kafka or shared_services()[0]
    topics = Topics(f"fr-{uuid.uuid4().hex[:8]}.")
    notes: list[str] = []
    with ExitStack() as stack:
        server = PrivateClickHouse(_tmpdir(stack, "ch"))
        stack.callback(server.stop)
        server.start()
        bus = KafkaBus(bootstrap, topics, linger_ms=5)
        bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=PARTITIONS)
        name = "fr_outage"
        store = stack.enter_context(_database("127.0.0.1", server.port, name, keep=True))
        sink_store = stack.enter_context(_closing(ServerStore("127.0.0.1", server.port, name)))
        worker_store = stack.enter_context(_closing(ServerStore("127.0.0.1", server.port, name)))
        settings = SinkSettings(batch_seconds=0.2, retry_initial_s=0.2, retry_max_s=1.0)
        sink = SinkThread(joined(bus, "sink"), sink_store, settings)
        stack.callback(sink.stop)
        diag = WorkerThread(_worker(bus, worker_store, "diagnose"))
        stack.callback(diag.stop)

        parts = list(chunks(work.events, 400))
        kill_at, freeze_at = len(parts) // 3, (2 * len(parts)) // 3
        publisher = Publisher(bus)
        stack.callback(publisher.close)
        restart = threading.Thread()
        faults = 0
        for i, part in enumerate(parts):
            if i == kill_at:
                server.kill()
                faults += 1
                restart = threading.Thread(target=server.start, args=(down_s,), daemon=True)
                restart.start()  # published on meanwhile: the sink's backlog grows
            elif i == freeze_at:
                if restart.is_alive():
                    restart.join(timeout=180)
                _signal(server.pid, signal.SIGSTOP)
                faults += 1
                threading.Timer(frozen_s, _signal, (server.pid, signal.SIGCONT)).start()
            publisher.publish(part)
            time.sleep(0.05)
        stored = wait_stored(store, _rows(work.events), 180)
        diagnosed = wait_until(lambda: diag.done(len(work.events)), 180)
        diag.stop()
        sink.stop()
        stats = sink.sink.stats
        notes += [
            f"ClickHouse SIGKILLed (down {down_s:g} s + restart) at 1/3, "
            f"SIGSTOPped {frozen_s:g} s at 2/3 of the stream",
            f"sink: {stats.write_retries} write retries, {stats.duplicates} duplicates dropped",
            f"worker: {diag.worker.stats.store_errors} store errors",
            "" if stored else "sink never caught up",
            "" if diagnosed else "worker never caught up",
        ]
        for thread in (sink, diag):
            if thread.error is not None:
                notes.append(f"{type(thread).__name__} died: {thread.error!r}")
        return _finish("clickhouse_outage", faults, work, store, t0, notes)
    raise AssertionError("unreachable")  # pragma: no cover


RUNS: dict[str, Callable[..., FaultRun]] = {
    "broker_kill": broker_kill,
    "diagnose_kill": diagnose_kill,
    "sink_kill": sink_kill,
    "clickhouse_outage": clickhouse_outage,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen fault runs (all by default) and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("runs", nargs="*", metavar="RUN", help=f"of {', '.join(RUNS)} (all)")
    parser.add_argument("--size", type=int, default=1, help="blocks of 8 nodes and 2 jobs")
    parser.add_argument("--duration", type=float, default=240.0, help="simulated seconds")
    args = parser.parse_args(argv)
    unknown = [r for r in args.runs if r not in RUNS]
    if unknown:
        parser.error(f"unknown runs {unknown}: choose from {list(RUNS)}")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    failed = 0
    for name in args.runs or list(RUNS):
        run = RUNS[name](size=args.size, duration_s=args.duration)
        print(json.dumps(asdict(run)), flush=True)
        failed += bool(run.events_lost or run.events_duplicated or run.incidents_wrong)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
