"""The whole topology of deploy/cluster.sh under failures: 3 Kafka brokers, ClickHouse 2 shards
x 2 replicas, 2 sinks, 3 diagnose members, 2 act replicas on the real Slurm, 2 API instances.

A twin scenario with four faults of different kinds (a straggling GPU, a hung rank, a GPU off
the bus, a NIC down) is streamed through it while one broker, one ClickHouse replica, one
sink, one diagnose member and one act replica are SIGKILLed and started again. Then: every
event is stored exactly once, the incidents are those of a single-process replay of the same
events (ids, categories, top suspects), every remediation step ran once on Slurm (slurmctld's
own log), and no other process died.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from actions import store as db
from actions.claims import Claims
from actions.executors.slurm import Slurm, SlurmError
from actions.model import ISOLATING, State
from analytics.store import ServerStore, StoreError
from analytics.tables import TELEMETRY_TABLES
from bench.fault_rig import (
    Workload,
    check_incidents,
    check_storage,
    chunks,
    wait_stored,
    wait_until,
    workload,
)
from bench.fault_services import Publisher, rows_of
from diagnosis.incident_store import load_incidents
from ingest.bus import Topics
from ingest.schema import decode_event
from tests.integration.actions_helpers import cleanup_nodes
from tests.integration.cluster_helpers import (
    CLICKHOUSE,
    MEMBERS,
    SERVICES,
    LocalCluster,
    drains_since,
    slurmctld_log,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

SLICES = 12


@pytest.fixture
def cluster(slurm: Slurm, tmp_path: Path) -> Iterator[LocalCluster]:
    """A started deploy/cluster.sh cluster of its own; stopped (every process) whatever happens."""
    started = LocalCluster(
        {
            "TG_SLURM_CONF": slurm.conf or "",
            "TG_KAFKA_PARTITIONS": "6",
            "TG_SINK_BATCH_SECONDS": "0.3",
            "TG_SINK_SESSION_TIMEOUT_S": "6",
            "TG_DIAGNOSE_PUBLISH_INTERVAL_S": "0",
            "TG_ACT_MODE": "auto",
            "TG_ACT_POLL_S": "0.3",
            "TG_ACT_RECHECK_S": "0.5",
            "TG_ACT_LEASE_S": "4",
            "TG_ACT_HEARTBEAT_S": "0.5",
        }
    )
    try:
        started.run("start", timeout_s=420)
        yield started
    finally:
        try:
            started.run("stop", timeout_s=240)
        finally:
            alive = {m: p for m, p in started.pids().items() if p is not None}
            started.remove(keep_logs=tmp_path / "cluster-logs")
        assert not alive, f"processes left after stop: {alive}"


class Later:
    """Restarts run in threads while the stream goes on; their errors fail the test."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def after(self, delay_s: float, what: Callable[[], None], name: str) -> None:
        def run() -> None:
            time.sleep(delay_s)
            try:
                what()
            except Exception as exc:  # noqa: BLE001 - reported by join()
                self.errors.append(f"{name}: {exc}")

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> list[str]:
        for thread in self.threads:
            thread.join(timeout=300)
        return self.errors + [f"{t.name} still running" for t in self.threads if t.is_alive()]


def _scenario_nodes(work: Workload, slurm: Slurm) -> list[str]:
    """The twin's nodes that Slurm knows (node-0000 is not one of its test nodes)."""
    names = sorted({str(n) for n in (getattr(e, "node", None) for e in work.events) if n})
    known = []
    for name in names:
        try:
            slurm.node(name)
        except SlurmError:
            continue
        known.append(name)
    return known


def _actions(store: ServerStore) -> list[db.StoredAction]:
    return db.load_actions(store)


def _holder_replica(store: ServerStore) -> str | None:
    """Return the replica id claiming the step being executed now, if any."""
    claims = Claims(store)
    for action in _actions(store):
        if action.state in (State.EXECUTING, State.WAITING):
            holder = claims.holder(f"{action.plan.action_id}:executing")
            if holder is not None:
                return holder.replica
    return None


def _ladders_settled(store: ServerStore, quiet_s: float = 8.0) -> Callable[[], bool]:
    seen: list[tuple[float, frozenset[tuple[str, State]]]] = []

    def check() -> bool:
        now = frozenset((a.plan.action_id, a.state) for a in _actions(store))
        if not seen or seen[-1][1] != now:
            seen.append((time.monotonic(), now))
            return False
        busy = any(state in (State.EXECUTING, State.WAITING) for _, state in now)
        return bool(now) and not busy and time.monotonic() - seen[-1][0] >= quiet_s

    return check


def _replica_rows(cluster: LocalCluster) -> str:
    """Return each replica's own row count per telemetry table (a lagging replica shows)."""
    counts = []
    for server in CLICKHOUSE:
        store = cluster.store(server)
        try:
            sizes = [
                str(store.query_df(f"SELECT count() FROM trainguard.`{t.name}_local`").iloc[0, 0])
                for t in TELEMETRY_TABLES
            ]
            counts.append(f"{server} {'/'.join(sizes)}")
        except StoreError as exc:
            counts.append(f"{server} unreadable ({exc})")
        finally:
            store.close()
    return f"rows per replica ({'/'.join(t.name for t in TELEMETRY_TABLES)}): " + "; ".join(counts)


def _where(cluster: LocalCluster, ids: frozenset[str]) -> str:
    """Return the Kafka positions of lost events, as offset ranges per partition."""
    if not ids:
        return "none lost"
    reader = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
    at: dict[tuple[str, int], list[int]] = {}
    try:
        parts = [
            KafkaTopicPartition(topic, p)
            for topic in Topics().telemetry()
            for p in reader.partitions_for_topic(topic) or ()
        ]
        if not parts:
            return "lost (telemetry topics not readable)"
        reader.assign(parts)
        reader.seek_to_beginning(*parts)
        ends = reader.end_offsets(parts)
        while any(reader.position(tp) < ends[tp] for tp in parts):
            for tp, records in reader.poll(timeout_ms=1000).items():
                for record in records:
                    if decode_event(record.value).id in ids:
                        at.setdefault((tp.topic, tp.partition), []).append(record.offset)
    finally:
        reader.close()
    return "lost at " + "; ".join(
        f"{t}/{p} offsets {min(o)}-{max(o)} ({len(o)} records)" for (t, p), o in sorted(at.items())
    )


def _step(t0: float, what: str) -> None:
    print(f"[{time.monotonic() - t0:6.1f} s] {what}", flush=True)


def test_the_cluster_survives_a_crash_of_every_kind(cluster: LocalCluster, slurm: Slurm) -> None:
    t0 = time.monotonic()
    work = workload(1, 240.0, start=datetime.now(UTC) - timedelta(minutes=10))
    nodes = _scenario_nodes(work, slurm)
    cleanup_nodes(slurm, nodes)
    slurm_log = slurmctld_log(slurm.conf or "")
    offset = slurm_log.stat().st_size
    before = {m: p for m, p in cluster.pids().items() if p is not None}
    members = [m for m in MEMBERS if not m.startswith("diagnose")]
    assert set(members) <= set(before), before
    diagnose = sorted(m for m in before if m.startswith("diagnose"))
    store = cluster.store("s1r1")
    killed: list[str] = []
    later = Later()

    def crash(member: str, restart_after_s: float) -> None:
        cluster.run("kill", member, timeout_s=60)
        killed.append(member)
        _step(t0, f"killed {member}")
        later.after(restart_after_s, lambda: cluster.run("start", member), f"restart {member}")

    _step(t0, f"publishing {len(work.events)} events, {len(work.expected)} incidents expected")
    publisher = Publisher(cluster.bus())
    slice_size = -(-len(work.events) // SLICES)
    try:
        for i, part in enumerate(chunks(work.events, slice_size)):
            publisher.publish(part)
            if i == 2:
                crash("kafka2", 10)
            elif i == 4:
                crash("sink1", 5)
                crash(diagnose[-1], 5)
            elif i == 6:
                crash("s2r2", 10)
            time.sleep(1.0)
    finally:
        publisher.close()
    _step(t0, "published")
    # the act replica is killed while it holds a step of a ladder (act1 if none is seen)
    wait_until(lambda: _holder_replica(store) is not None, 120, 0.1)
    holder = _holder_replica(store) or ""
    victim = next((m for m in ("act1", "act2") if f":{cluster.pid(m)}:" in holder), "act1")
    crash(victim, 3)
    restart_errors = later.join()
    _step(t0, "restarts done")

    stored = wait_stored(store, rows_of(work.events), 240, stall_s=60)
    _step(t0, f"stored: {stored}")
    incidents_in = wait_until(lambda: len(load_incidents(store)) >= len(work.expected), 90, 1)
    _step(t0, f"incidents in: {incidents_in}")
    settled = wait_until(_ladders_settled(store), 150, 1)
    _step(t0, f"ladders settled: {settled}")
    after = cluster.pids()
    up = cluster.status_ok()
    logs = "\n".join(cluster.log_tail(m) for m in SERVICES if m in before)
    actions = _actions(store)
    ours = set(work.expected) | {a.plan.incident_id for a in actions}
    drains = [d for d in drains_since(slurm_log, offset) if d[1] in ours]
    cleanup_nodes(slurm, nodes)
    problems: list[str] = []  # every check runs; the test fails with all that differ

    def check(ok: bool, what: str) -> None:
        if not ok:
            problems.append(what)

    # the injected crashes happened, and the restarts of what was killed worked
    check(len(killed) == 5 and not restart_errors, f"crashes {killed}, restarts: {restart_errors}")
    # no process needed a manual restart: every one not killed is the same process as at start
    died = [m for m in before if m not in killed and after[m] != before[m]]
    check(not died, f"died on their own: {died}")
    check(up, "deploy/cluster.sh status: not every member up")

    # every event stored exactly once
    storage = check_storage(store, work.events)
    check(stored, f"not every row stored: {storage.detail}; {_replica_rows(cluster)}")
    exact = (storage.lost, storage.duplicated, storage.unknown_ids, storage.dead_letters)
    check(
        exact == (0, 0, 0, 0),
        f"lost/twice/unknown/dead letters {exact}: {storage.detail}; "
        f"{_where(cluster, storage.lost_ids)}",
    )

    # every takeover read the jobs and incidents back (the restore queries work on the cluster)
    unrestored = [
        m
        for m in SERVICES
        if m.startswith("diagnose")
        and cluster.log(m).exists()
        and "starting without restored" in cluster.log(m).read_text(errors="replace")
    ]
    check(not unrestored, f"restores that gave up: {unrestored}")

    # the incidents of a single-process run: ids, categories, jobs, top suspects
    wrong, detail = check_incidents(store, work.expected)
    check(incidents_in and wrong == 0, f"incidents differ from the replay: {detail}")

    # every remediation step ran once: one `executing` per step, plus at most one per takeover
    # of a step whose replica died (the survivor reconciles it: checks its effect first)
    moving = [(a.plan.incident_id, a.plan.kind.value, a.state.value) for a in actions]
    check(settled, f"ladders still moving: {moving}")
    isolated = [a for a in actions if a.plan.kind in ISOLATING and a.state == State.DONE]
    check(bool(isolated), f"no isolation ran: {[(a.plan.kind, a.state) for a in actions]}")
    for incident_id in sorted({a.plan.incident_id for a in actions}):
        audit = db.audit_events(store, incident_id=incident_id)
        executing = Counter(audit[audit["event"] == "executing"]["kind"])
        reconciled = Counter(audit[audit["event"] == "reconciled"]["kind"])
        planned = audit[audit["event"] == "planned"]["kind"].tolist()
        check(len(planned) == len(set(planned)), f"two ladders for {incident_id}: {planned}")
        for kind, n in executing.items():
            check(
                1 <= n <= 1 + reconciled[kind],
                f"{incident_id} {kind}: executing {n} times, reconciled {reconciled[kind]}",
            )
    # ...and on Slurm (slurmctld's log): no node drained twice for one incident, and the node
    # of every isolation that ran is drained (by it, or already by another incident of the run)
    twice = [drain for drain, n in Counter(drains).items() if n > 1]
    check(not twice, f"drained twice: {twice}")
    drained = {node for node, _ in drains}
    for action in isolated:
        node = action.plan.target.node
        check(node in drained, f"{node} ({action.plan.incident_id}) never drained: {drains}")
    _step(t0, f"checked: {len(problems)} problem(s); drains {drains}; killed {killed}")
    assert not problems, "\n".join(problems) + "\n" + logs
