"""What the fault runs start and stop: private Kafka and ClickHouse servers from deploy/, the
sink and the diagnosis worker in threads, `trainguard` child processes, and their plumbing.
"""

from __future__ import annotations

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
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from analytics.migrations import migrate
from analytics.store import ServerStore, Store, StoreError
from analytics.writer import ClickHouseWriter
from bench.fault_rig import (
    DEPLOY,
    PARTITIONS,
    REPO,
    FaultRun,
    FaultRunError,
    Workload,
    check_incidents,
    check_storage,
    expected_rows,
    first_value,
    wait_until,
)
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import BusError, Consumer, Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import EventBase
from ingest.sink import Sink, SinkSettings
from trainguard.settings import local_services_env

log = logging.getLogger(__name__)

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


def send_signal(pid: int | None, sig: signal.Signals) -> bool:
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
        if not send_signal(pid, signal.SIGKILL):
            raise FaultRunError(f"{self.script}: no server to kill")
        assert pid is not None
        _gone(pid, 30)

    def stop(self) -> None:
        """Stop it whatever its state (SIGCONT first, in case it is frozen)."""
        send_signal(self.pid, signal.SIGCONT)
        try:
            self._run("stop", 120)
        except (FaultRunError, subprocess.TimeoutExpired):
            send_signal(self.pid, signal.SIGKILL)


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


def worker_on(bus: KafkaBus, store: Store, group: str) -> DiagnosisWorker:
    return DiagnosisWorker(
        joined(bus, group),
        bus.producer(),
        store,
        bus.topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.2, status_poll_s=0),
    )


@contextmanager
def database(host: str, port: int, name: str, keep: bool = False) -> Iterator[ServerStore]:
    store = ServerStore(host, port, name)
    migrate(store)
    try:
        yield store
    finally:
        if not keep:
            with suppress(StoreError):
                store.command(f"DROP DATABASE IF EXISTS `{name}`")
        store.close()


def tmpdir(stack: ExitStack, name: str) -> Path:
    # short and plain: deploy/ scripts write it into configs (A-Z a-z 0-9 . _ / + @ - only)
    path = Path(tempfile.mkdtemp(prefix=f"tg-{name}-", dir="/tmp"))
    stack.callback(shutil.rmtree, path, True)
    return path


def finish(
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


@contextmanager
def closing(store: ServerStore) -> Iterator[ServerStore]:
    try:
        yield store
    finally:
        store.close()


def process_env(
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


def metric(port: int, name: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    return None


def settled(metrics_port: int, quiet_s: float = 4.0, timeout_s: float = 120) -> bool:
    """Wait until the worker reads and feeds nothing more for `quiet_s` (its stream's end).

    Events ahead of the time the sources agree on stay buffered until more arrive: a live
    worker never feeds the very end of a stream, so fed need not reach consumed.
    """
    names = ("trainguard_diagnose_records_consumed_total", "trainguard_diagnose_events_fed_total")
    last: tuple[float | None, ...] = ()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = tuple(metric(metrics_port, n) for n in names)
        if now == last and None not in now:
            return True
        last = now
        time.sleep(quiet_s)
    return False


def count_rows(store: Store, table: str) -> int:
    try:
        frame = store.query_df(f"SELECT count() AS n FROM `{store.database}`.`{table}`")
    except StoreError:
        return -1
    return first_value(frame)


def rows_of(events: Sequence[EventBase]) -> int:
    return sum(sum(c.values()) for c in expected_rows(events).values())
