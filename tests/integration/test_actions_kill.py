"""`trainguard act` killed (SIGKILL) in the middle of a ladder and started again: every side
effect happens exactly once (real Kafka, real ClickHouse, real Slurm, real processes)."""

from __future__ import annotations

import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from actions import store as db
from actions.model import ActionKind, State
from tests.actions_builders import make_incident
from tests.integration.actions_helpers import (
    action_state,
    cleanup_nodes,
    ladder_ended,
    training_until,
)
from tests.integration.conftest import REPO, process_env, wait_for

pytestmark = pytest.mark.integration


def _act(services, topics, store, slurm, log_path) -> subprocess.Popen[bytes]:
    env = process_env(
        services,
        topics,
        store,
        TG_ACT_MODE="auto",
        TG_ACT_GROUP=f"act-{topics.prefix}",
        TG_ACT_SLURM_CONF=slurm.conf or "",
        TG_ACT_POLL_S="0.5",
        TG_ACT_RECHECK_S="0.5",
    )
    log = open(log_path, "ab")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        [sys.executable, "-m", "trainguard", "act"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _tail(path: Path) -> str:
    """Return the end of the act processes' log (why a wait timed out)."""
    return "--- act log\n" + path.read_text(errors="replace")[-4000:]


def _executions(store, incident_id: str, kind: str) -> int:
    events = db.audit_events(store, incident_id=incident_id)
    return int(((events["event"] == "executing") & (events["kind"] == kind)).sum())


def test_sigkill_mid_ladder_then_restart_does_every_side_effect_once(
    services, topics, kafka_bus, server_store, slurm, unique, tmp_path
):
    node = "node-0031"
    cleanup_nodes(slurm, [node])
    name = f"tg-{unique}"
    # on the node with a slurmd, not on one of the daemon-less test nodes
    argv = [
        "sbatch",
        "--parsable",
        "-o",
        "/dev/null",
        "-c",
        "1",
        "-x",
        "node-[0001-0200]",
        "-J",
        name,
    ]
    job_id = slurm.run([*argv, "--wrap", "sleep 600"]).strip()
    log_path = tmp_path / "act.log"
    proc = None
    try:
        wait_for(lambda: slurm.job(job_id).get("JobState") == "RUNNING", 90, "job running")
        kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=2)
        incident = make_incident(7, node=node, job=name, at=datetime.now(UTC))
        producer = kafka_bus.producer()
        producer.send_raw(
            topics.incidents, incident.id.encode(), incident.model_dump_json().encode()
        )
        producer.flush()
        proc = _act(services, topics, server_store, slurm, log_path)
        # the ladder reaches "verify progress", which waits for new training steps: kill it there
        wait_for(
            lambda: (
                action_state(server_store, incident.id, ActionKind.VERIFY_PROGRESS) == State.WAITING
            ),
            120,
            "the ladder waiting on training progress",
            detail=lambda: _tail(log_path),
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert slurm.node(node).ours and slurm.job(job_id)["Restarts"] == "1"
        # a new engine process; the incident is redelivered too
        producer.send_raw(
            topics.incidents, incident.id.encode(), incident.model_dump_json().encode()
        )
        producer.flush()
        proc = _act(services, topics, server_store, slurm, log_path)
        # the restarted job trains again: its steps land in train_steps while it runs
        wait_for(
            training_until(server_store, name, lambda: ladder_ended(server_store, incident.id)),
            120,
            "the ladder to finish after the restart",
            step_s=1.0,
            detail=lambda: _tail(log_path),
        )
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        slurm.run(["scancel", job_id])
        cleanup_nodes(slurm, [node])
    assert action_state(server_store, incident.id, ActionKind.VERIFY_PROGRESS) == State.DONE
    assert slurm.job(job_id)["Restarts"] == "1", "the job was requeued once, not twice"
    events = db.audit_events(server_store, incident_id=incident.id)
    executing = events[events["event"] == "executing"]["kind"].tolist()
    # the wait on progress is checked again by the new process, never begun twice
    for kind in ("isolate_node", "request_capacity", "restart_job", "verify_progress"):
        assert executing.count(kind) == 1, (kind, executing, log_path.read_text()[-2000:])
