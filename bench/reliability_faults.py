"""Fault runs on the real services: kill or cut off one part of the pipeline mid-stream.

Each run feeds the digital twin's telemetry (several faults of different kinds) through the
real Kafka bus, the real sink into ClickHouse and the real diagnosis worker, injects faults of
the infrastructure itself while it flows, then reports:

- events lost: published events with fewer rows stored than they make (or none);
- events duplicated: events with more rows stored than they make, as a query without FINAL
  sees them (per telemetry table, row counts per event id);
- incidents wrong: incidents stored that an uninterrupted in-memory `DiagnosisEngine` of the same
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
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict

from analytics.store import ServerStore
from bench.fault_rig import (
    PARTITIONS,
    FaultRun,
    FaultRunError,
    chunks,
    expected_rows,
    stored_rows,
    wait_stored,
    wait_until,
    workload,
)
from bench.fault_services import (
    Child,
    PrivateClickHouse,
    PrivateKafka,
    Publisher,
    SinkThread,
    WorkerThread,
    closing,
    count_rows,
    database,
    finish,
    free_port,
    joined,
    metric,
    process_env,
    publish,
    rows_of,
    send_signal,
    settled,
    shared_services,
    tmpdir,
    worker_on,
)
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from ingest.sink import SinkSettings

log = logging.getLogger(__name__)


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
        kafka = PrivateKafka(tmpdir(stack, "kafka"))
        stack.callback(kafka.stop)
        kafka.start()
        bus = KafkaBus(kafka.bootstrap, topics, linger_ms=5)
        bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=PARTITIONS)
        name = f"fr_broker_{uuid.uuid4().hex[:8]}"
        store = stack.enter_context(database(host, port, name))
        sink_store = stack.enter_context(closing(ServerStore(host, port, name)))
        worker_store = stack.enter_context(closing(ServerStore(host, port, name)))
        sink = SinkThread(joined(bus, "sink"), sink_store, SinkSettings(batch_seconds=0.2))
        stack.callback(sink.stop)
        diag = WorkerThread(worker_on(bus, worker_store, "diagnose"))
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
        return finish("broker_kill", killed, work, store, t0, notes)
    raise AssertionError("unreachable")  # pragma: no cover (ExitStack does not swallow)


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
        logs = tmpdir(stack, "diag")
        bus = KafkaBus(bootstrap, topics, linger_ms=5)
        bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=PARTITIONS)
        store = stack.enter_context(database(host, port, name))
        sink_store = stack.enter_context(closing(ServerStore(host, port, name)))
        sink = SinkThread(joined(bus, "sink"), sink_store, SinkSettings(batch_seconds=0.2))
        stack.callback(sink.stop)
        metrics = free_port()
        env = process_env(
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
            return metric(metrics, "trainguard_diagnose_records_consumed_total") or 0.0

        def fed() -> float:
            return metric(metrics, "trainguard_diagnose_events_fed_total") or 0.0

        cut = int(len(work.events) * kill_at)
        before, after = work.events[:cut], work.events[cut:]
        first = start()
        publish(bus, before)
        if not wait_until(lambda: fed() >= 0.9 * cut or not first.alive(), 120):
            raise FaultRunError(f"diagnose fed {fed():.0f} of {cut}:\n{first.tail()}")
        opened_name = "trainguard_diagnose_incidents_opened_total"
        wait_until(lambda: (metric(metrics, opened_name) or 0) >= 1, 10)
        # killed with incidents open (stored) and records read but not yet fed or committed
        unfed = consumed() - fed()
        opened = metric(metrics, opened_name) or 0.0
        first.kill()
        topologies = wait_until(lambda: count_rows(store, "job_topology") >= 2 * size, 60)
        wait_stored(store, rows_of(work.events[:cut]), 60)
        second = start()
        publish(bus, after)
        total = len(work.events)
        # the restart re-reads what was not committed: it reads at least the rest
        done = wait_until(lambda: consumed() >= total - cut, 180, 0.5) and settled(metrics)
        restored = [
            metric(metrics, f"trainguard_diagnose_restored_{n}") for n in ("jobs", "incidents")
        ]
        second.stop()
        stored = wait_stored(store, rows_of(work.events), 120)
        sink.stop()
        notes += [
            f"diagnose SIGKILLed after publishing {cut} of {total} events, with {opened:.0f} "
            f"incidents opened and {unfed:.0f} records read but not fed",
            f"the restart restored {restored[0]} jobs and {restored[1]} incidents",
            "" if topologies else "topologies not stored before the restart",
            "" if done else f"restarted worker never caught up:\n{second.tail()}",
            "" if stored else "sink never caught up",
        ]
        return finish("diagnose_kill", 1, work, store, t0, notes)
    raise AssertionError("unreachable")  # pragma: no cover


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
        logs = tmpdir(stack, "sink")
        bus = KafkaBus(bootstrap, topics, linger_ms=5)
        bus.ensure_topics(topics.telemetry(), partitions=PARTITIONS)
        joined(bus, "probe").close()  # the topics' metadata is everywhere before a sink joins
        store = stack.enter_context(database(host, port, name))
        publish(bus, work.events)
        env = process_env(
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
        total = rows_of(work.events)
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
        return finish("sink_kill", kills, work, store, t0, notes, check_diagnosis=False)
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
        server = PrivateClickHouse(tmpdir(stack, "ch"))
        stack.callback(server.stop)
        server.start()
        bus = KafkaBus(bootstrap, topics, linger_ms=5)
        bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=PARTITIONS)
        name = "fr_outage"
        store = stack.enter_context(database("127.0.0.1", server.port, name, keep=True))
        sink_store = stack.enter_context(closing(ServerStore("127.0.0.1", server.port, name)))
        worker_store = stack.enter_context(closing(ServerStore("127.0.0.1", server.port, name)))
        settings = SinkSettings(batch_seconds=0.2, retry_initial_s=0.2, retry_max_s=1.0)
        sink = SinkThread(joined(bus, "sink"), sink_store, settings)
        stack.callback(sink.stop)
        diag = WorkerThread(worker_on(bus, worker_store, "diagnose"))
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
                send_signal(server.pid, signal.SIGSTOP)
                faults += 1
                threading.Timer(frozen_s, send_signal, (server.pid, signal.SIGCONT)).start()
            publisher.publish(part)
            time.sleep(0.05)
        stored = wait_stored(store, rows_of(work.events), 180)
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
        return finish("clickhouse_outage", faults, work, store, t0, notes)
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
