"""Several `trainguard act` replicas on one store: every step runs once on Slurm, a replica
killed while its ladder waits is finished by another, and API approvals racing the replicas
execute once; a claim whose holder died is taken over after its lease.

Real Kafka, ClickHouse, Slurm and processes. The replicas sweep every unfinished ladder every
0.3 s (TG_ACT_RECHECK_S), so they contend for every step, not only at a rebalance.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from actions import store as db
from actions.claims import Claims
from actions.model import ActionKind, State
from analytics.migrations import CLAIMS_TABLE
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import (
    action_state,
    cleanup_nodes,
    ladder_ended,
    training_until,
)
from tests.integration.conftest import process_env, wait_for
from tests.integration.replica_helpers import Replicas, consuming_members, running
from trainguard.act_cli import build_engine
from trainguard.settings import ActSettings

pytestmark = pytest.mark.integration


@pytest.fixture
def replicas() -> Iterator[Replicas]:
    """The `trainguard` processes a test starts, stopped (children too) whatever happens."""
    with running() as started:
        yield started


LEASE_S = 4.0


def _env(services, topics, store, slurm, mode: str = "auto") -> dict[str, str]:
    return process_env(
        services,
        topics,
        store,
        TG_ACT_MODE=mode,
        TG_ACT_GROUP=f"act-{topics.prefix}",
        TG_ACT_SLURM_CONF=slurm.conf or "",
        TG_ACT_POLL_S="0.3",
        TG_ACT_RECHECK_S="0.3",
        TG_ACT_LEASE_S=str(LEASE_S),
        TG_ACT_HEARTBEAT_S="0.5",
    )


def _publish(kafka_bus, topics, incidents, times: int = 1) -> None:
    producer = kafka_bus.producer()
    for _ in range(times):  # redeliveries: every replica may see every incident
        for incident in incidents:
            producer.send_raw(
                topics.incidents, incident.id.encode(), incident.model_dump_json().encode()
            )
    producer.flush()


def _failed(store, incident_id: str, kind: ActionKind) -> bool:
    return action_state(store, incident_id, kind) == State.FAILED


def _executing_rows(store, incident_id: str) -> dict[str, int]:
    """Stored `executing` transitions per step kind (one per execution)."""
    frame = store.query_df(
        f"SELECT kind, count() AS n FROM `{store.database}`.`action_state` "
        f"WHERE incident_id = %(i)s AND state = 'executing' GROUP BY kind",
        {"i": incident_id},
    )
    return {str(k): int(n) for k, n in frame.itertuples(index=False)}


def _audited(store, incident_id: str, event: str) -> list[str]:
    events = db.audit_events(store, incident_id=incident_id)
    return events[events["event"] == event]["kind"].tolist()


def _logs(tmp_path, store, incident_id: str) -> str:
    """The replicas' log tails and the ladder's audit trail: why a wait failed."""
    logs = "".join(
        f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(tmp_path.glob("act-*.log"))
    )
    audit = db.audit_events(store, incident_id=incident_id)
    return f"{logs}\n--- audit\n{audit.to_string()}"


def _contended_keys(store) -> int:
    return int(
        store.query_df(
            f"SELECT count() FROM (SELECT key FROM `{store.database}`.`{CLAIMS_TABLE}` "
            f"GROUP BY key HAVING count() > 1)"
        ).iloc[0, 0]
    )


def test_three_replicas_run_every_step_of_a_storm_once(
    services,
    topics,
    kafka_bus,
    server_store,
    slurm,
    tmp_path,
    replicas: Replicas,
):
    nodes = [f"node-017{i}" for i in range(1, 5)]
    cleanup_nodes(slurm, nodes)
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=3)
    now = datetime.now(UTC)
    incidents = [
        make_incident(60 + i, node=node, job="no-such-job", at=now) for i, node in enumerate(nodes)
    ]
    env = _env(services, topics, server_store, slurm)
    for i in range(3):
        replicas.start(["act"], env, tmp_path / f"act-{i}.log")
    try:
        # published once every replica consumes: the first to join would own every partition
        # and could end every ladder before the others swept one (no race to assert)
        wait_for(
            lambda: consuming_members(services.kafka, env["TG_ACT_GROUP"]) == 3,
            120,
            "three replicas consuming incidents",
        )
        _publish(kafka_bus, topics, incidents, times=3)
        for incident in incidents:
            wait_for(
                functools.partial(_failed, server_store, incident.id, ActionKind.RESTART_JOB),
                120,
                f"the ladder of {incident.id} to end (restart of an unknown job fails)",
            )
        drained = {node: slurm.node(node) for node in nodes}
    finally:
        replicas.stop_all()
        cleanup_nodes(slurm, nodes)
    logs = "".join(p.read_text()[-1500:] for p in tmp_path.glob("act-*.log"))
    for incident, node in zip(incidents, nodes, strict=True):
        state = drained[node]
        assert state.drained and state.reason.startswith(f"trainguard:{incident.id}:"), state
        executed = _executing_rows(server_store, incident.id)
        assert executed == {"isolate_node": 1, "request_capacity": 1, "restart_job": 1}, logs
        audited = _audited(server_store, incident.id, "executing")
        assert sorted(audited) == ["isolate_node", "request_capacity", "restart_job"], logs
        planned = _audited(server_store, incident.id, "planned")
        assert len(planned) == len(set(planned)), f"two ladders for {incident.id}: {planned}"
    assert _contended_keys(server_store) > 0, "the replicas never raced for a step"


def _sleep_job(slurm, name: str) -> str:
    argv = ["sbatch", "--parsable", "-o", "/dev/null", "-c", "1", "-x", "node-[0001-0200]"]
    return slurm.run([*argv, "-J", name, "--wrap", "sleep 600"]).strip()


def test_a_replica_killed_while_its_ladder_waits_is_finished_without_repeating_a_step(
    services,
    topics,
    kafka_bus,
    server_store,
    slurm,
    unique,
    tmp_path,
    replicas: Replicas,
):
    """The replica that began the wait on the restarted job's progress is killed; the other
    checks the wait again (a read of the world, unclaimed) and finishes the ladder."""
    node = "node-0176"
    cleanup_nodes(slurm, [node])
    name = f"tg-{unique}"
    job_id = _sleep_job(slurm, name)
    try:
        wait_for(lambda: slurm.job(job_id).get("JobState") == "RUNNING", 90, "job running")
        kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=2)
        incident = make_incident(70, node=node, job=name, at=datetime.now(UTC))
        _publish(kafka_bus, topics, [incident], times=2)
        env = _env(services, topics, server_store, slurm)
        procs = [replicas.start(["act"], env, tmp_path / f"act-{i}.log") for i in range(2)]
        logs = functools.partial(_logs, tmp_path, server_store, incident.id)
        wait_for(
            lambda: (
                action_state(server_store, incident.id, ActionKind.VERIFY_PROGRESS) == State.WAITING
            ),
            120,
            "the ladder waiting on training progress",
            detail=logs,
        )
        verify = next(
            a
            for a in db.load_actions(server_store, incident_id=incident.id)
            if a.plan.kind == ActionKind.VERIFY_PROGRESS
        )
        holder = Claims(server_store).holder(f"{verify.plan.action_id}:executing")
        assert holder is not None
        victim = next(p for p in procs if f":{p.pid}:" in holder.replica)
        replicas.kill(victim)  # SIGKILL the replica that began the wait
        # the restarted job trains again: its steps land in train_steps while it runs
        wait_for(
            training_until(server_store, name, lambda: ladder_ended(server_store, incident.id)),
            120,
            "the survivor to finish the ladder",
            step_s=1.0,
            detail=logs,
        )
        restarts = slurm.job(job_id)["Restarts"]
    finally:
        replicas.stop_all()
        slurm.run(["scancel", job_id])
        cleanup_nodes(slurm, [node])
    assert action_state(server_store, incident.id, ActionKind.VERIFY_PROGRESS) == State.DONE
    assert restarts == "1", "the job was requeued once, not twice"
    executed = _audited(server_store, incident.id, "executing")
    for kind in ("isolate_node", "request_capacity", "restart_job", "verify_progress"):
        assert executed.count(kind) == 1, (kind, executed)
    assert action_state(server_store, incident.id, ActionKind.REBOOT_NODE) == State.DONE
    assert _audited(server_store, incident.id, "reconciled") == []  # nothing was cut short


def test_approvals_racing_the_replicas_execute_once(
    services,
    topics,
    kafka_bus,
    server_store,
    slurm,
    tmp_path,
    replicas: Replicas,
    monkeypatch,
):
    node = "node-0177"
    cleanup_nodes(slurm, [node])
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=2)
    incident = make_incident(80, node=node, job="no-such-job", at=datetime.now(UTC))
    _publish(kafka_bus, topics, [incident], times=2)
    env = _env(services, topics, server_store, slurm, mode="approve")
    for i in range(2):
        replicas.start(["act"], env, tmp_path / f"act-{i}.log")
    # three API instances (each an engine with its own replica name) approve at once
    monkeypatch.setenv("TG_ACT_MODE", "approve")
    monkeypatch.setenv("TG_ACT_SLURM_CONF", slurm.conf or "")
    apis = [build_engine(ActSettings(), server_store, None, replica="api") for _ in range(3)]
    outcomes: list[str] = []
    try:
        wait_for(
            lambda: (
                action_state(server_store, incident.id, ActionKind.ISOLATE_NODE)
                == State.AWAITING_APPROVAL
            ),
            90,
            "the drain to wait for approval",
        )
        action_id = next(
            a.plan.action_id
            for a in db.load_actions(server_store, incident_id=incident.id)
            if a.plan.kind == ActionKind.ISOLATE_NODE
        )
        start = threading.Barrier(len(apis))

        def approve(engine) -> None:
            start.wait()
            try:
                engine.approve(action_id, "operator")
                outcomes.append("approved")
            except LookupError:
                outcomes.append("refused")

        threads = [threading.Thread(target=approve, args=(e,)) for e in apis]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        wait_for(
            lambda: action_state(server_store, incident.id, ActionKind.ISOLATE_NODE) == State.DONE,
            60,
            "the approved drain to be done",
        )
        drained = slurm.node(node)
    finally:
        replicas.stop_all()
        for engine in apis:
            assert engine.claims is not None
            engine.claims.stop()
        cleanup_nodes(slurm, [node])
    assert sorted(outcomes) == ["approved", "refused", "refused"]
    assert drained.drained and drained.reason.startswith(f"trainguard:{incident.id}:")
    assert _audited(server_store, incident.id, "executing").count("isolate_node") == 1
    assert _executing_rows(server_store, incident.id).get("isolate_node") == 1
    approved = db.audit_events(server_store, action_id=action_id)
    assert (approved["event"] == "approved").sum() == 1


def test_a_replica_resumes_its_own_claim_unless_another_took_it_over(server_store):
    """A move that failed part-way (its next state refused by a shard below its quorum) is
    taken up again by its own replica; never after another replica took it over."""
    a = Claims(server_store, "r-a", lease_s=1.0, heartbeat_s=0.2)
    b = Claims(server_store, "r-b", lease_s=1.0, heartbeat_s=0.2)
    try:
        assert a.acquire("act-x:executing")
        assert a.acquire("act-x:executing")  # its own, the move failed: it goes on
        assert not b.acquire("act-x:executing")  # a is alive
        a.stop()
        time.sleep(1.3)  # a's lease lapses
        assert b.acquire("act-x:executing")  # taken over through the successor key
        a.beat()  # a comes back (a paused process)
        assert not a.acquire("act-x:executing")  # b took it over: a never goes on
    finally:
        a.stop()
        b.stop()
