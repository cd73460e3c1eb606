"""A real torch.distributed job (gloo, 4 CPU ranks) reports through the integration to Kafka.

Its topology and steps arrive; rank 3 then stops before a TP all-reduce and the diagnosis
worker, fed from the same topics, opens a hang incident naming rank 3 within 60 s.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from diagnosis.model import Category
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import TopicFamily
from ingest.schema import CommKind, JobTopology, TrainStep, decode_event
from tests.integration.conftest import REPO, wait_for

pytestmark = pytest.mark.integration

STALL_RANK, STALL_STEP = 3, 25


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _joined(bus, group: str, names: list[str]):
    """Return a group member that owns every partition before anything is produced.

    A group joined right after its topics were created can be assigned nothing (the topics'
    metadata has not reached the client yet) and would wait minutes for a refresh: rejoin.
    """
    for attempt in range(6):
        consumer = bus.consumer(f"{bus.topics.prefix}{group}{attempt}", names)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            assert consumer.poll(1, 0.2) == []  # nothing is produced before the job starts
            if len(consumer.assignment()) == 4 * len(names):
                return consumer
        consumer.close()
    pytest.fail(f"no partitions assigned to {group} for {names}")


def test_torch_job_reports_topology_steps_and_a_hung_rank(
    kafka_bus, server_store, unique, tmp_path
):
    kafka_bus.ensure_topics([kafka_bus.topics.incidents], 4)
    job = f"torch-{unique}"
    argv = [
        sys.executable,
        "-m",
        "tests.integration.torch_job",
        "--bootstrap",
        kafka_bus.bootstrap,
        "--prefix",
        kafka_bus.topics.prefix,
        "--job",
        job,
        "--port",
        str(_free_port()),
        "--stall-rank",
        str(STALL_RANK),
        "--stall-step",
        str(STALL_STEP),
    ]
    env = {**os.environ, "TORCH_FR_BUFFER_SIZE": "2000", "OMP_NUM_THREADS": "1"}
    topics = kafka_bus.topics
    reader = _joined(
        kafka_bus, "reader", [topics.topic(TopicFamily.JOBS), topics.topic(TopicFamily.TRAIN)]
    )
    worker = DiagnosisWorker(
        _joined(kafka_bus, "diagnose", topics.telemetry()),
        kafka_bus.producer(),
        server_store,
        topics,
        settings=WorkerSettings(publish_interval_s=0, poll_timeout_s=0.2),
    )
    seen: dict[str, list] = {"job_topology": [], "train_step": []}
    log = (tmp_path / "job.log").open("w")
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT
    )

    def read() -> bool:
        for r in reader.poll(1000, 0.1):
            e = decode_event(r.value)
            seen[e.kind].append(e)
        worker.step()
        job_steps = [s for s in seen["train_step"] if s.rank is None]
        return bool(seen["job_topology"]) and len(job_steps) >= STALL_STEP - 1

    try:
        try:
            wait_for(read, 120, "topology and steps from the torch job")
        except BaseException:
            print((tmp_path / "job.log").read_text()[-4000:], seen["train_step"][-1:])
            raise
        (topo,) = seen["job_topology"]
        assert isinstance(topo, JobTopology) and topo.job_id == job and topo.world_size == 4
        assert {p.rank: p.gpu for p in topo.ranks} == {0: 0, 1: 1, 2: 2, 3: 3}
        groups = {
            c.kind: sorted(sorted(x.ranks) for x in topo.communicators if x.kind == c.kind)
            for c in topo.communicators
        }
        assert groups[CommKind.TP] == [[0, 1], [2, 3]]
        assert groups[CommKind.DP] == [[0, 2], [1, 3]]
        assert groups[CommKind.WORLD] == [[0, 1, 2, 3]]
        assert (topo.layout.tp, topo.layout.dp) == (2, 2)
        steps = [s for s in seen["train_step"] if isinstance(s, TrainStep) and s.rank is None]
        assert {s.rank for s in seen["train_step"]} == {None, 1, 2, 3}  # rank 0: the job's
        assert steps and steps[0].loss is not None and steps[0].grad_norm is not None
        assert max(s.step for s in steps) == STALL_STEP - 1
        stalled_at = time.monotonic()

        def hang_named() -> bool:
            worker.step()
            return any(
                i.category == Category.HANG and i.suspects and i.suspects[0].rank == STALL_RANK
                for i in worker.engine.correlator.incidents()
            )

        wait_for(hang_named, 60, f"a hang incident naming rank {STALL_RANK}")
        assert time.monotonic() - stalled_at < 60
        (hang,) = [i for i in worker.engine.correlator.incidents() if i.category == Category.HANG]
        assert hang.job == job and hang.suspects[0].node == topo.ranks[STALL_RANK].node
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        reader.close()
        worker.consumer.close()
