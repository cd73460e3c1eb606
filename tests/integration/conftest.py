"""Fixtures for tests against the real Kafka broker, ClickHouse server and chdb.

The services are started by `deploy/services.sh start` (the README's test command does it);
their addresses come from the environment or from the env file that script writes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from actions.executors.slurm import Slurm, SlurmError
from analytics.migrations import migrate
from analytics.store import EmbeddedStore, ServerStore, Store
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from trainguard.settings import local_services_env

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Services:
    """Where the real services listen."""

    kafka: str
    clickhouse_host: str
    clickhouse_port: int


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def services() -> Services:
    """Return the service addresses; fail (never skip) when they are not running."""
    env = {**local_services_env(REPO), **os.environ}
    found = Services(
        env.get("TG_KAFKA_BOOTSTRAP", "127.0.0.1:19092"),
        env.get("TG_CLICKHOUSE_HOST", "127.0.0.1"),
        int(env.get("TG_CLICKHOUSE_PORT", "19000")),
    )
    kafka_host, _, kafka_port = found.kafka.rpartition(":")
    missing = [
        name
        for name, ok in (
            (f"Kafka at {found.kafka}", _reachable(kafka_host, int(kafka_port))),
            (
                f"ClickHouse at {found.clickhouse_host}:{found.clickhouse_port}",
                _reachable(found.clickhouse_host, found.clickhouse_port),
            ),
        )
        if not ok
    ]
    if missing:
        pytest.fail(f"{', '.join(missing)} not reachable: run `bash deploy/services.sh start`")
    return found


@pytest.fixture
def unique() -> str:
    """Return a short name unique to this test."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def topics(unique: str) -> Topics:
    """Return topic names of this test only."""
    return Topics(f"it-{unique}.")


@pytest.fixture
def kafka_bus(services: Services, topics: Topics) -> KafkaBus:
    """Return a Kafka bus whose telemetry topics exist (4 partitions each).

    Created explicitly through the admin code (ingest.topics): no client creates topics.
    """
    bus = KafkaBus(services.kafka, topics, linger_ms=5)
    bus.ensure_topics(topics.telemetry(), partitions=4)
    return bus


@pytest.fixture
def server_store(services: Services, unique: str) -> Iterator[ServerStore]:
    """Return a migrated database of this test on the ClickHouse server; drop it after."""
    store = ServerStore(services.clickhouse_host, services.clickhouse_port, f"it_{unique}")
    migrate(store)
    yield store
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


@pytest.fixture
def embedded_store(tmp_path: Path, unique: str) -> Iterator[EmbeddedStore]:
    """Return a migrated chdb database in this test's directory."""
    store = EmbeddedStore(str(tmp_path / "chdb"), f"it_{unique}")
    migrate(store)
    yield store
    store.close()


def wait_for(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    step_s: float = 0.2,
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll until condition() is true, or fail saying what did not happen (and `detail()`:
    a log that tells why)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(step_s)
    said = f"\n{detail()}" if detail is not None else ""
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}{said}")


def count(store: Store, table: str) -> tuple[int, int]:
    """Return (rows, distinct event ids) of a table, without FINAL."""
    frame = store.query_df(
        f"SELECT count() AS n, uniqExact(event_id) AS u FROM `{store.database}`.`{table}`"
    )
    return int(frame.iloc[0, 0]), int(frame.iloc[0, 1])


@pytest.fixture(scope="session")
def slurm() -> Iterator[Slurm]:
    """Return the local Slurm cluster (deploy/slurm.sh); fail (never skip) when it is down."""
    env = {**local_services_env(REPO), **os.environ}
    conf = env.get("TG_SLURM_CONF") or env.get("SLURM_CONF")
    if not conf or not Path(conf).exists():
        pytest.fail("Slurm not configured (no TG_SLURM_CONF): run `bash deploy/services.sh start`")
    cluster = Slurm(conf)
    try:
        up = "UP" in cluster.run(["scontrol", "ping"])
    except SlurmError as exc:
        pytest.fail(f"Slurm at {conf} not answering: {exc}; run `bash deploy/slurm.sh start`")
    if not up:
        pytest.fail(f"slurmctld of {conf} is down: run `bash deploy/slurm.sh start`")
    yield cluster


def process_env(services: Services, topics: Topics, store: Store, **extra: str) -> dict[str, str]:
    """Return the environment of a `trainguard` subprocess on this test's topics and database."""
    return {
        **os.environ,
        "TG_KAFKA_MODE": "kafka",
        "TG_KAFKA_BOOTSTRAP": services.kafka,
        "TG_KAFKA_TOPIC_PREFIX": topics.prefix,
        "TG_CLICKHOUSE_MODE": "server",
        "TG_CLICKHOUSE_HOST": services.clickhouse_host,
        "TG_CLICKHOUSE_PORT": str(services.clickhouse_port),
        "TG_CLICKHOUSE_DATABASE": store.database,
        **extra,
    }


@pytest.fixture
def sleep_job(slurm: Slurm, unique: str) -> Iterator[tuple[str, str]]:
    """Submit a `sleep` batch job; cancel it afterwards; return (job name, job id)."""
    name = f"tg-{unique}"
    job_id = slurm.run(
        ["sbatch", "--parsable", "-o", "/dev/null", "-c", "1", "-J", name, "--wrap", "sleep 600"]
    ).strip()
    wait_for(lambda: slurm.job(job_id).get("JobState") == "RUNNING", 90, f"job {job_id} running")
    yield name, job_id
    subprocess.run(["scancel", job_id], env={"SLURM_CONF": slurm.conf or ""}, check=False)
