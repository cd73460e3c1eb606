"""The streaming worker on the real broker against poison event times and its own restarts.

Each test drives `DiagnosisWorker` on Kafka topics of its own with the real sink storing the
same telemetry in a ClickHouse database of its own, as `trainguard sink` and `trainguard
diagnose` do in production.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from analytics.incident_tables import INCIDENTS
from analytics.queries import dead_letters
from analytics.store import Store
from analytics.writer import ClickHouseWriter
from bench.reliability_faults import joined
from diagnosis.engine import DiagnosisEngine
from diagnosis.incident_store import (
    load_incidents,
    load_states,
    record_transition,
    save_states,
    transitions,
)
from diagnosis.incidents import Incident
from diagnosis.lifecycle import Transition
from diagnosis.model import Category, IncidentStatus
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import TopicFamily
from ingest.kafka_bus import KafkaBus
from ingest.schema import EventBase, HostMetrics, LogLine, LogSource
from ingest.sink import Sink, SinkSettings
from sim.scenario import parse_scenario
from sim.twin import Twin
from tests.builders import (
    at,
    make_gpu_metrics,
    make_log,
    make_step,
    make_topology,
    nic_down_scenario,
)
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.integration

XID79 = "NVRM: Xid (PCI:0000:61:00): 79, pid=977823, GPU has fallen off the bus."
CUDA = "RuntimeError: CUDA error: an illegal memory access was encountered"

# Two 32-GPU jobs; a straggling GPU in j1 and a GPU falling off the bus under j2, both after
# the first 90 s of telemetry.
SCENARIO: dict[str, Any] = {
    "seed": 5,
    "cluster": {"nodes": 8, "gpus_per_node": 8, "nodes_per_rack": 4},
    "jobs": [
        {"id": "j1", "tp": 8, "dp": 4, "step_time_s": 2.0},
        {"id": "j2", "tp": 8, "dp": 4, "step_time_s": 2.0},
    ],
    "duration_s": 300,
    "host_interval_s": 5,
    "faults": [
        {"kind": "straggler", "node": 1, "gpu": 3, "at_s": 120, "slowdown": 1.6},
        {"kind": "xid79", "node": 5, "gpu": 2, "at_s": 200},
    ],
}


@pytest.fixture
def sink(kafka_bus: KafkaBus, server_store: Store) -> Iterator[Sink]:
    """The real sink on the test's topics, storing into the test's database, in a thread."""
    running = Sink(
        joined(kafka_bus, f"{kafka_bus.topics.prefix}sink"),
        ClickHouseWriter(server_store),
        SinkSettings(batch_seconds=0.2),
    )
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()
    yield running
    stop.set()
    thread.join(timeout=30)
    running.consumer.close()
    assert not thread.is_alive()


def _worker(bus: KafkaBus, store: Store) -> DiagnosisWorker:
    return DiagnosisWorker(
        bus.consumer("diagnose", bus.topics.telemetry()),
        bus.producer(),
        store,
        bus.topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.2, status_poll_s=0),
    )


def _member(bus: KafkaBus, store: Store) -> DiagnosisWorker:
    """A worker told of its assignments, as `trainguard diagnose` wires one."""
    late: list[DiagnosisWorker] = []
    consumer = bus.consumer(
        "diagnose", bus.topics.telemetry(), on_assign=lambda parts: late[0].on_assign(parts)
    )
    worker = DiagnosisWorker(
        consumer,
        bus.producer(),
        store,
        bus.topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.2, status_poll_s=0),
    )
    late.append(worker)
    return worker


def _publish(bus: KafkaBus, events: Sequence[EventBase | tuple[str, bytes, bytes]]) -> None:
    producer = bus.producer()
    for event in events:
        if isinstance(event, tuple):
            producer.send_raw(*event)
        else:
            producer.send(event)
    producer.flush()
    producer.close()


def _read(worker: DiagnosisWorker, records: int, what: str) -> None:
    """Step the worker until it has read `records` more records."""
    target = worker.stats.consumed + records
    wait_for(lambda: worker.step() >= 0 and worker.stats.consumed >= target, 120, what)


def _consume(worker: DiagnosisWorker, records: int, what: str) -> None:
    """Step the worker until it has read `records` more records, then feed everything."""
    _read(worker, records, what)
    worker.drain()


def _stop(worker: DiagnosisWorker) -> None:
    worker.consumer.close()
    worker.producer.close()


def _stored(sink: Sink, records: int) -> None:
    wait_for(lambda: sink.stats.consumed >= records, 60, f"the sink storing {records} records")


def _twin(scenario: dict[str, Any]) -> list[EventBase]:
    events: list[EventBase] = []
    Twin(parse_scenario(scenario), events.append).run()
    return sorted(events, key=lambda e: e.ts)


def _replayed(events: Sequence[EventBase]) -> dict[str, Incident]:
    replay = DiagnosisEngine()
    for event in events:
        replay.feed(event)
    return {i.id: i for i in replay.finish()}


def _view(incidents: dict[str, Incident]) -> dict[str, tuple[Any, ...]]:
    def top(i: Incident) -> tuple[Any, ...]:
        s = i.suspects[0] if i.suspects else None
        return (s.component, s.node, s.gpu, s.rank) if s else ()

    return {k: (i.category, i.job, top(i)) for k, i in incidents.items()}


def test_a_restarted_worker_gives_the_incidents_of_one_that_never_stopped(
    kafka_bus, server_store, sink
):
    events = _twin(SCENARIO)
    start = events[0].ts
    before = [e for e in events if e.ts < start + timedelta(seconds=90)]
    after = events[len(before) :]
    first = _worker(kafka_bus, server_store)
    _publish(kafka_bus, before)
    _consume(first, len(before), "the first 90 s")
    _stop(first)
    _stored(sink, len(before))  # the jobs' topologies are in the store before the restart

    second = _worker(kafka_bus, server_store)
    _publish(kafka_bus, after)
    _consume(second, len(after), "the rest after the restart")
    _stop(second)

    assert second.stats.restored_jobs == 2
    stored = {i.id: i for i in load_incidents(server_store)}
    assert _view(stored) == _view(_replayed(events))
    categories = sorted(i.category for i in stored.values())
    assert categories == [Category.GPU_HARDWARE, Category.STRAGGLER]
    (gpu,) = [i for i in stored.values() if i.category == Category.GPU_HARDWARE]
    assert gpu.job == "j2"


def test_a_worker_restarted_while_the_sink_lags_reads_again_what_is_not_stored(
    kafka_bus, server_store
):
    """The store ends 60 s of events before the committed offsets: those are read again from
    the bus, so the restored detectors see no gap in the jobs' steps (a gap looked like a
    hang) and the incidents are those of a worker that never stopped."""
    events = _twin(SCENARIO)
    start = events[0].ts
    early = [e for e in events if e.ts < start + timedelta(seconds=30)]
    mid = [
        e for e in events if start + timedelta(seconds=30) <= e.ts < start + timedelta(seconds=90)
    ]
    after = events[len(early) + len(mid) :]
    sink = Sink(
        joined(kafka_bus, f"{kafka_bus.topics.prefix}sink"),
        ClickHouseWriter(server_store),
        SinkSettings(batch_seconds=0.2),
    )
    _publish(kafka_bus, early)
    wait_for(lambda: sink.step() >= 0 and sink.stats.consumed >= len(early), 60, "the sink")
    sink.consumer.close()  # the sink stops here: nothing later is stored
    first = _member(kafka_bus, server_store)
    _publish(kafka_bus, mid)
    _consume(first, len(early) + len(mid), "the first 90 s")
    first._commit()
    _stop(first)

    second = _member(kafka_bus, server_store)
    _publish(kafka_bus, after)
    _consume(second, len(mid) + len(after), "the unstored 60 s again, then the rest")
    _stop(second)

    assert second.stats.restored_jobs == 2
    stored = {i.id: i for i in load_incidents(server_store)}
    assert _view(stored) == _view(_replayed(events))


def test_an_incident_the_store_refused_before_a_crash_is_opened_by_the_next_worker(
    kafka_bus, server_store, sink
):
    """Offsets are not committed past evidence whose incident is not stored yet; the next
    worker takes the job back from what the sink stored and opens the incident of it."""
    table = f"`{server_store.database}`.`{INCIDENTS.name}`"
    running = [make_topology("job-1"), make_step("job-1", 1)]
    first = _member(kafka_bus, server_store)
    _publish(kafka_bus, running)
    _consume(first, len(running), "the running job")
    server_store.command(f"DETACH TABLE {table}")  # incidents are refused from here on
    try:
        _publish(kafka_bus, [make_log("n1", 2, seq=1, line=XID79)])
        _consume(first, 1, "the Xid")
        first.publish(force=True)
        assert first.stats.store_errors > 0 and not first.publisher.settled()
        first._commit()
        _stop(first)  # a crash: the incident was never stored
    finally:
        server_store.command(f"ATTACH TABLE {table}")
    assert load_incidents(server_store) == []
    written = len(running) + 1
    wait_for(lambda: sink.stats.events_written >= written, 60, "the sink storing the job")

    second = _member(kafka_bus, server_store)
    _consume(second, 1, "the Xid again")
    _stop(second)
    (incident,) = load_incidents(server_store)
    assert (incident.category, incident.job) == (Category.GPU_HARDWARE, "job-1")


def test_a_state_whose_incident_row_the_store_refused_is_not_restored(kafka_bus, server_store):
    """A revision's state is written before its incident row: a state whose row is missing
    (a quorum refused) must not come back, or the next worker takes it for stored."""
    running = [make_topology("job-1"), make_step("job-1", 1), make_log("n1", 2, seq=1, line=XID79)]
    first = _member(kafka_bus, server_store)
    _publish(kafka_bus, running)
    _consume(first, len(running), "the Xid")
    first.publish(force=True)
    _stop(first)
    (stored,) = load_incidents(server_store)
    (state,) = first.engines.states([stored.id])
    assert [(s.id, s.revision) for s in load_states(server_store, 3600)] == [
        (stored.id, stored.revision)
    ]
    # the state of a next revision, and of a new incident, stored; their rows refused
    save_states(
        server_store,
        [
            state.model_copy(update={"revision": stored.revision + 1}),
            state.model_copy(update={"id": "inc-refused", "revision": 1}),
        ],
    )
    assert [(s.id, s.revision) for s in load_states(server_store, 3600)] == [
        (stored.id, stored.revision)
    ]


def test_an_xid_just_after_a_restart_is_one_incident_of_the_job(kafka_bus, server_store, sink):
    """The job's topology comes back, so the GPU's incident names the job and takes its errors."""
    running = [make_topology("job-1"), make_gpu_metrics("n1", 0)]
    running += [make_step("job-1", s) for s in range(1, 6)]
    first = _worker(kafka_bus, server_store)
    _publish(kafka_bus, running)
    _consume(first, len(running), "the running job")
    _stop(first)
    _stored(sink, len(running))

    second = _worker(kafka_bus, server_store)
    crash = [
        make_log("n1", 10, seq=1, line=XID79),
        *(_train_log("job-1", rank, 10.5, CUDA) for rank in (1, 2, 5)),
    ]
    _publish(kafka_bus, crash)
    _consume(second, len(crash), "the crash")
    _stop(second)

    (incident,) = load_incidents(server_store)
    assert (incident.category, incident.job) == (Category.GPU_HARDWARE, "job-1")
    assert incident.findings == 4


def test_an_incident_open_before_a_restart_takes_the_evidence_after_it(
    kafka_bus, server_store, sink
):
    running = [make_topology("job-1"), make_step("job-1", 1), make_log("n1", 2, seq=1, line=XID79)]
    first = _worker(kafka_bus, server_store)
    _publish(kafka_bus, running)
    _consume(first, len(running), "the Xid")
    _stop(first)
    (opened,) = load_incidents(server_store)

    second = _worker(kafka_bus, server_store)
    later = [_train_log("job-1", rank, 20, CUDA) for rank in (0, 3)]
    _publish(kafka_bus, later)
    _consume(second, len(later), "the ranks' errors")
    _stop(second)

    assert second.stats.restored_incidents == 1
    (incident,) = load_incidents(server_store)
    assert incident.id == opened.id and incident.findings == 3
    assert incident.revision > opened.revision


def test_a_recurrence_after_a_restart_never_reuses_a_resolved_incidents_id(
    kafka_bus, server_store, sink
):
    first = _worker(kafka_bus, server_store)
    _publish(kafka_bus, [make_log("n1", 0, seq=1, line=XID79)])
    _consume(first, 1, "the first Xid")
    _stop(first)
    (old,) = load_incidents(server_store)
    record_transition(
        server_store,
        Transition(
            incident_id=old.id,
            status=IncidentStatus.RESOLVED,
            reason="GPU replaced",
            actor="oncall",
            at=old.detected_at + timedelta(minutes=1),
        ),
    )

    second = _worker(kafka_bus, server_store)
    _publish(kafka_bus, [make_log("n1", 3600, seq=2, line=XID79)])
    _consume(second, 1, "the same fault an hour later")
    _stop(second)

    incidents = {i.id: i for i in load_incidents(server_store)}
    assert len(incidents) == 2
    assert incidents[old.id].status == IncidentStatus.RESOLVED
    assert incidents[old.id].revision == old.revision
    assert [t.status for t in transitions(server_store, old.id)] == [IncidentStatus.RESOLVED]
    (new,) = [i for i in incidents.values() if i.id != old.id]
    assert new.status == IncidentStatus.OPEN and new.detected_at == at(3600)


def test_events_dated_year_1_and_2200_are_refused_and_diagnosis_goes_on(
    kafka_bus, server_store, sink
):
    """Before: year 1 raised OverflowError on every restart; year 2200 stepped for hours."""
    topics = kafka_bus.topics
    year1 = make_gpu_metrics("n2", 0).model_copy(update={"ts": datetime(1, 1, 1, tzinfo=UTC)})
    year2200 = make_step("job-1", 3).model_copy(update={"ts": datetime(2200, 1, 1, tzinfo=UTC)})
    year2100 = HostMetrics(node="n4", ts=datetime(2100, 1, 1, tzinfo=UTC))
    offset = b'{"kind":"log","ts":"0001-01-01T00:00:00+01:00","node":"n3","source":"kernel",'
    poison: list[EventBase | tuple[str, bytes, bytes]] = [
        make_topology("job-1"),
        make_step("job-1", 1),
        year1,
        year2200,
        year2100,
        (topics.topic(TopicFamily.LOGS), b"n3", offset + b'"line":"x"}'),
        make_step("job-1", 2),
    ]
    first = _worker(kafka_bus, server_store)
    _publish(kafka_bus, poison)
    _consume(first, len(poison), "the poison events")
    _stop(first)
    assert first.stats.refused_time == 3 and first.stats.undecodable == 1
    assert first.engine.correlator.incidents() == []

    second = _worker(kafka_bus, server_store)  # a restart reads nothing of them again
    _publish(kafka_bus, [make_log("n1", 30, seq=1, line=XID79)])
    _consume(second, 1, "an Xid after the poison")
    _stop(second)
    (incident,) = load_incidents(server_store)
    assert incident.category == Category.GPU_HARDWARE and incident.detected_at == at(30)

    _stored(sink, len(poison) + 1)  # consumed; its batch's dead letters are written after
    wait_for(lambda: len(dead_letters(server_store)) >= 4, 60, "the sink's 4 dead letters")
    letters = dead_letters(server_store)
    reasons = " | ".join(sorted(letters["reason"]))
    assert len(letters) == 4, reasons
    assert "outside the storable range" in reasons and "ahead of the receiving clock" in reasons
    assert "no UTC equivalent" in reasons


def test_one_source_ahead_of_the_others_moves_no_one_elses_clock(kafka_bus, server_store):
    """A host scrape 20 minutes ahead (a node's fast clock): same incidents, no false hangs.

    Before, the worker's clock was the highest event time seen: every job looked stalled.
    """
    events = _twin(SCENARIO)
    start = events[0].ts
    node = next(e.node for e in events if isinstance(e, HostMetrics))
    ahead = HostMetrics(node=node, ts=start + timedelta(seconds=100 + 1200))
    cut = next(n for n, e in enumerate(events) if e.ts >= start + timedelta(seconds=100))
    stream = [*events[:cut], ahead, *events[cut:]]
    worker = _worker(kafka_bus, server_store)
    for chunk in range(0, len(stream), 2000):  # live: published and read a chunk at a time
        part = stream[chunk : chunk + 2000]
        _publish(kafka_bus, part)
        _read(worker, len(part), "a chunk")
    worker.drain()
    _stop(worker)

    stored = {i.id: i for i in load_incidents(server_store)}
    assert not [i for i in stored.values() if i.category == Category.HANG]
    assert _view(stored) == _view(_replayed(events))


def _train_log(job: str, rank: int, seconds: float, line: str) -> LogLine:
    return LogLine(
        node="n1",
        ts=at(seconds),
        source=LogSource.TRAIN_STDERR,
        line=f"[rank{rank}]: {line}",
        path=f"/var/log/train/{job}.log",
        seq=rank,
        job_id=job,
        rank=rank,
    )


def test_a_worker_restarted_just_before_a_nic_goes_down_sees_it_go_down(
    kafka_bus, server_store, sink
):
    """The worker that comes back reads again from after the port's last "up" sample: it
    takes the ports' last states back from the store, so the port is seen going down (not a
    hang of the job whose collectives stall behind it)."""
    events = _twin(nic_down_scenario())
    cut = events[0].ts + timedelta(seconds=58)
    before = [e for e in events if e.ts < cut]
    after = events[len(before) :]
    first = _member(kafka_bus, server_store)
    _publish(kafka_bus, before)
    _consume(first, len(before), "the first 58 s")
    first._commit()
    _stop(first)
    _stored(sink, len(before))

    second = _member(kafka_bus, server_store)
    _publish(kafka_bus, after)
    _consume(second, len(after), "the rest after the restart")
    _stop(second)

    stored = {i.id: i for i in load_incidents(server_store)}
    assert _view(stored) == _view(_replayed(events))
    (incident,) = stored.values()
    assert incident.category == Category.NETWORK
    assert (incident.suspects[0].node, incident.suspects[0].nic) == ("node-0002", "mlx5_1")
