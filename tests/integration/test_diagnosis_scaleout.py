"""Diagnosis scale-out on the real broker and ClickHouse: N members give one member's incidents.

Each run has topics, consumer groups and a database of its own: the topics come from
`trainguard topics create` (6 partitions each), a twin scenario with four faults of different
kinds is published to them, the real sink stores it, and `trainguard diagnose` members
(subprocesses, TG_DIAGNOSE_SCALE_OUT=true, one group) diagnose it. The incidents (ids,
categories, jobs, top suspects) of 1 member, of 3 members, and of 3 members of which one is
killed with SIGKILL mid-stream must be the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from analytics.migrations import migrate
from analytics.store import ServerStore
from analytics.writer import ClickHouseWriter
from diagnosis.incident_store import load_incidents
from diagnosis.incidents import Incident
from diagnosis.model import Category
from ingest.bus import TopicFamily, Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import EventBase
from ingest.sink import Sink, SinkSettings
from sim.scenario import parse_scenario
from sim.twin import Twin
from tests.integration.conftest import Services, process_env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

PARTITIONS = 6
REPO = Path(__file__).resolve().parents[2]

# Three jobs on ten of twelve nodes: a hang in j1, a GPU off the bus under j2, a NIC port down
# under j3, and a GPU off the bus on a node that runs no job (a node-level incident).
SCENARIO: dict[str, Any] = {
    "seed": 7,
    "cluster": {"nodes": 12, "gpus_per_node": 8, "nodes_per_rack": 4},
    "jobs": [
        {"id": "j1", "tp": 8, "dp": 4, "step_time_s": 2.0},
        {"id": "j2", "tp": 8, "dp": 4, "step_time_s": 2.0},
        {"id": "j3", "tp": 8, "dp": 2, "step_time_s": 2.0},
    ],
    "duration_s": 360,
    "host_interval_s": 5,
    "watchdog_timeout_s": 120,
    "faults": [
        {"kind": "hang", "job": "j1", "rank": 13, "at_s": 100},
        {"kind": "xid79", "node": 5, "gpu": 2, "at_s": 150},
        {"kind": "nic_down", "node": 9, "nic": 1, "at_s": 200},
        {"kind": "xid79", "node": 11, "gpu": 4, "at_s": 250},
    ],
}


@dataclass(frozen=True)
class Seen:
    """What a run's comparison looks at in one incident; `detail` only explains a mismatch."""

    category: Category
    job: str | None
    top: tuple[Any, ...]
    detail: str = field(default="", compare=False)


View = dict[str, Seen]


@pytest.fixture(scope="module")
def events() -> list[EventBase]:
    """Return the scenario's telemetry in time order."""
    found: list[EventBase] = []
    Twin(parse_scenario(SCENARIO), found.append).run()
    return sorted(found, key=lambda e: e.ts)


def _view(incidents: Sequence[Incident]) -> View:
    def top(i: Incident) -> tuple[Any, ...]:
        s = i.suspects[0] if i.suspects else None
        return (s.component, s.node, s.gpu, s.nic, s.rank) if s else ()

    def detail(i: Incident) -> str:
        first = i.evidence[0][:120] if i.evidence else ""
        return f"detected {i.detected_at:%H:%M:%S.%f}, {i.findings} findings, first: {first}"

    return {i.id: Seen(i.category, i.job, top(i), detail(i)) for i in incidents}


class Run:
    """One run's topics, groups, database, sink and diagnose members."""

    def __init__(self, services: Services, tmp: Path) -> None:
        self.unique = uuid.uuid4().hex[:10]
        self.services = services
        self.topics = Topics(f"so-{self.unique}.")
        self.group = f"diag-{self.unique}"
        self.store = ServerStore(
            services.clickhouse_host, services.clickhouse_port, f"so_{self.unique}"
        )
        self.logs = tmp / self.unique
        self.logs.mkdir()
        self.members: list[subprocess.Popen[bytes]] = []
        self.env = process_env(
            services,
            self.topics,
            self.store,
            TG_KAFKA_PARTITIONS=str(PARTITIONS),
            TG_DIAGNOSE_GROUP=self.group,
            TG_DIAGNOSE_SCALE_OUT="true",
            TG_DIAGNOSE_PUBLISH_INTERVAL_S="1",
            PYTHONPATH=str(REPO),
        )

    def create_topics(self) -> None:
        """Create the topics as a deployment does: `trainguard topics create`."""
        done = subprocess.run(
            [sys.executable, "-m", "trainguard", "topics", "create"],
            env=self.env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        self.bus = KafkaBus(self.services.kafka, self.topics, linger_ms=5)

    def publish(self, events: Sequence[EventBase]) -> None:
        """Publish events in time order and wait for the broker's acks."""
        producer = self.bus.producer()
        for event in events:
            producer.send(event)
        producer.flush()
        producer.close()

    def start(self, count: int) -> None:
        """Start `count` members of the group."""
        for _ in range(count):
            index = len(self.members)
            out = (self.logs / f"member-{index}.log").open("wb")
            self.members.append(
                subprocess.Popen(
                    [sys.executable, "-m", "trainguard", "diagnose"],
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: killed with its children
                )
            )

    def kill(self, index: int) -> None:
        """SIGKILL one member and everything it started."""
        member = self.members[index]
        os.killpg(member.pid, signal.SIGKILL)
        member.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM every member still running; SIGKILL what has not stopped in 30 s."""
        for member in self.members:
            if member.poll() is None:
                os.killpg(member.pid, signal.SIGTERM)
        for member in self.members:
            try:
                member.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(member.pid, signal.SIGKILL)
                member.wait(timeout=30)

    def log_tail(self) -> str:
        """Return the end of every member's log."""
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.logs.glob("member-*.log"))
        )

    def alive(self, killed: frozenset[int]) -> None:
        """Fail, with the logs, when a member not killed on purpose has exited."""
        dead = [i for i, m in enumerate(self.members) if i not in killed and m.poll() is not None]
        if dead:
            pytest.fail(f"members {dead} exited:\n{self.log_tail()}")

    def lag(self, group: str, families: Sequence[TopicFamily]) -> int:
        """Return the records of these topics not yet committed by `group`."""
        tps = [
            KafkaTopicPartition(self.topics.topic(f), p)
            for f in families
            for p in range(PARTITIONS)
        ]
        reader = KafkaConsumer(
            bootstrap_servers=self.services.kafka, group_id=group, enable_auto_commit=False
        )
        try:  # never subscribes: reads the group's commits without joining it
            ends = reader.end_offsets(tps)
            return sum(end - (reader.committed(tp) or 0) for tp, end in ends.items())
        finally:
            reader.close()

    def settle(self, killed: frozenset[int] = frozenset(), quiet_s: float = 20.0) -> View:
        """Wait until everything is routed and fed and the incidents stop changing."""
        node = (TopicFamily.METRICS, TopicFamily.LOGS)
        job = (TopicFamily.TRAIN, TopicFamily.NCCL, TopicFamily.JOBS)
        state: dict[str, Any] = {"view": None, "since": time.monotonic()}

        def settled() -> bool:
            self.alive(killed)
            view = _view(load_incidents(self.store))
            if view != state["view"]:
                state["view"], state["since"] = view, time.monotonic()
                return False
            done = self.lag(f"{self.group}.route", node) == 0 and self.lag(self.group, job) == 0
            return done and time.monotonic() - state["since"] >= quiet_s

        wait_for(settled, 420, f"{self.group} to diagnose everything", step_s=2.0)
        return state["view"]  # type: ignore[no-any-return]


@contextmanager
def _run(services: Services, tmp: Path) -> Iterator[Run]:
    """Yield a run with its topics and database, the sink storing into it; clean up after."""
    run = Run(services, tmp)
    migrate(run.store)
    run.create_topics()
    sink = Sink(
        run.bus.consumer(f"sink-{run.unique}", run.topics.telemetry()),
        ClickHouseWriter(run.store),
        SinkSettings(batch_seconds=0.2),
    )
    stop = threading.Event()
    thread = threading.Thread(target=sink.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield run
    finally:
        run.stop()
        stop.set()
        thread.join(timeout=30)
        sink.consumer.close()
        run.store.command(f"DROP DATABASE IF EXISTS `{run.store.database}`")
        run.store.close()
    assert not thread.is_alive()


def _stored(run: Run, count: int) -> None:
    """Wait until the sink has stored `count` events (members restore topologies from it)."""

    def stored() -> bool:
        frame = run.store.query_df(
            f"SELECT count() FROM `{run.store.database}`.job_topology",
        )
        return int(frame.iloc[0, 0]) >= count

    wait_for(stored, 120, f"{count} topologies stored")


def _diagnosed(services: Services, tmp: Path, events: list[EventBase], members: int) -> View:
    with _run(services, tmp) as run:
        run.publish(events)
        _stored(run, 3)
        run.start(members)
        return run.settle()


def _expected_kinds(view: View) -> None:
    """The four faults gave four incidents, each of its kind, one on the node with no job."""
    kinds = sorted((seen.category.value, seen.job or "") for seen in view.values())
    assert kinds == sorted(
        [
            (Category.HANG.value, "j1"),
            (Category.GPU_HARDWARE.value, "j2"),
            (Category.NETWORK.value, "j3"),
            (Category.GPU_HARDWARE.value, ""),
        ]
    ), view


@pytest.fixture(scope="module")
def one(services: Services, tmp_path_factory, events: list[EventBase]) -> View:
    """Return the incidents of one member (the reference the scaled runs must equal)."""
    view = _diagnosed(services, tmp_path_factory.mktemp("one"), events, members=1)
    _expected_kinds(view)
    return view


def test_one_member_finds_each_fault_once(one):
    _expected_kinds(one)


def test_three_members_give_the_incidents_of_one(services, tmp_path, events, one):
    assert _diagnosed(services, tmp_path, events, members=3) == one


def test_a_member_killed_mid_stream_loses_no_incident_and_opens_no_false_one(
    services, tmp_path, events, one
):
    # the first 200 s hold the hang (at 100 s) and the first Xid (at 150 s); the rest comes
    # after the kill
    cut = events[0].ts + timedelta(seconds=200)
    half = sum(1 for e in events if e.ts < cut)
    with _run(services, tmp_path) as run:
        run.publish(events[:half])
        _stored(run, 3)
        run.start(3)
        # mid-stream: the members have diagnosed part of the first half
        wait_for(
            lambda: run.alive(frozenset()) is None and len(load_incidents(run.store)) >= 1,
            240,
            "a first incident from the three members",
            step_s=1.0,
        )
        run.kill(1)
        run.publish(events[half:])
        killed = run.settle(killed=frozenset({1}))
        log = run.log_tail()
    assert killed == one, "\n".join(
        [f"{i}: {s} ({s.detail})" for i, s in sorted(one.items()) if killed.get(i) != s]
        + [f"killed run {i}: {s} ({s.detail})" for i, s in sorted(killed.items()) if i not in one]
        + [log]
    )
    assert "state rebuilt from the store" in log  # the survivors took over (a rebalance)
