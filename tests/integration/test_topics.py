"""The topic admin step against the real broker, and that nothing else creates a topic.

The broker may allow auto-creation (a broker started before deploy/kafka.sh turned it off):
these tests show TrainGuard's clients create nothing even then.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from analytics.store import ServerStore
from ingest.bus import BusError, MissingTopics, TopicFamily, Topics
from ingest.kafka_bus import KafkaBus
from ingest.topics import SIZING, TopicAdmin, plan_topics
from tests.builders import make_step
from tests.integration.conftest import Services, process_env, wait_for

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_topics(services: Services, topics: Topics) -> Iterator[Topics]:
    """This test's topic names (none exist); delete whatever was created afterwards."""
    yield topics
    with TopicAdmin(services.kafka) as admin:
        ours = [t for t in admin.existing() if t.startswith(topics.prefix)]
    if ours:
        client = KafkaAdminClient(bootstrap_servers=services.kafka)
        try:
            client.delete_topics(ours)
        finally:
            client.close()


def _ours(services: Services, topics: Topics) -> set[str]:
    with TopicAdmin(services.kafka) as admin:
        return {t for t in admin.existing() if t.startswith(topics.prefix)}


def _trainguard(
    env: dict[str, str], *args: str, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainguard", *args],
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def test_topics_create_verify_describe(
    services: Services, fresh_topics: Topics, server_store: ServerStore
) -> None:
    env = process_env(services, fresh_topics, server_store, TG_KAFKA_PARTITIONS="2")
    planned = {f"{fresh_topics.prefix}{s.suffix}" for s in SIZING}

    missing = _trainguard(env, "topics", "verify")
    assert missing.returncode == 1
    assert f"{fresh_topics.prefix}metrics: missing" in missing.stdout
    assert "trainguard topics create" in missing.stdout

    too_many = _trainguard(env | {"TG_KAFKA_REPLICATION_FACTOR": "3"}, "topics", "create")
    assert too_many.returncode == 1
    assert "replication factor 3" in too_many.stderr and "has 1 live" in too_many.stderr
    assert _ours(services, fresh_topics) == set()

    created = _trainguard(env, "topics", "create")
    assert created.returncode == 0, created.stderr
    assert _ours(services, fresh_topics) == planned
    again = _trainguard(env, "topics", "create")
    assert again.returncode == 0 and f"created nothing; {len(SIZING)} existed" in again.stdout
    assert _trainguard(env, "topics", "verify").returncode == 0

    described = _trainguard(env, "topics", "describe")
    jobs = next(line for line in described.stdout.splitlines() if "jobs:" in line)
    assert "2 partitions, replication 1" in jobs
    assert "cleanup.policy=compact,delete" in jobs and "min.insync.replicas=1" in jobs

    # a topic that differs from the plan is reported, never altered
    drift = _trainguard(env | {"TG_KAFKA_PARTITIONS": "3"}, "topics", "verify")
    assert drift.returncode == 1
    assert f"{fresh_topics.prefix}train: 2 partitions, planned 3" in drift.stdout


def test_migrate_creates_the_topics(
    services: Services, fresh_topics: Topics, server_store: ServerStore
) -> None:
    env = process_env(services, fresh_topics, server_store)
    done = _trainguard(env, "migrate")
    assert done.returncode == 0, done.stderr
    assert _ours(services, fresh_topics) == {f"{fresh_topics.prefix}{s.suffix}" for s in SIZING}
    embedded = _trainguard(
        process_env(services, Topics("never-made."), server_store, TG_KAFKA_MODE="embedded"),
        "migrate",
    )
    assert embedded.returncode == 0 and "kafka" not in embedded.stdout


def test_a_service_on_a_missing_topic_fails_fast(
    services: Services, fresh_topics: Topics, server_store: ServerStore
) -> None:
    env = process_env(services, fresh_topics, server_store)
    done = _trainguard(env, "sink", timeout_s=120)  # a hang would time out here
    assert done.returncode == 1
    assert f"{fresh_topics.prefix}metrics" in done.stderr
    assert "trainguard topics create" in done.stderr
    assert _ours(services, fresh_topics) == set()


def test_clients_never_create_topics(services: Services, fresh_topics: Topics) -> None:
    bus = KafkaBus(services.kafka, fresh_topics, linger_ms=5)
    train = fresh_topics.topic(TopicFamily.TRAIN)

    with pytest.raises(MissingTopics) as consumer_error:
        bus.consumer("never", [train, fresh_topics.incidents])
    assert consumer_error.value.topics == [train, fresh_topics.incidents]

    producer = bus.producer()
    try:
        with pytest.raises(MissingTopics, match="trainguard topics create") as producer_error:
            producer.send(make_step())
        assert producer_error.value.topics == [train]
        assert _ours(services, fresh_topics) == set()

        # once the admin step made it, the same producer delivers to it (it looks a missing
        # topic up again every few seconds, not on every record)
        bus.ensure_topics([train], partitions=1)

        def delivered() -> bool:
            try:
                producer.send(make_step())
            except MissingTopics:
                return False
            producer.flush()
            return True

        wait_for(delivered, 30, "a send to the created topic", step_s=1)
    finally:
        producer.close()
    assert _ours(services, fresh_topics) == {train}


def test_create_waits_until_the_brokers_list_what_it_created(
    services: Services, fresh_topics: Topics
) -> None:
    """A verify right after `create` must not find a topic missing (on a cluster, the other
    brokers list a new topic a moment after the controller answers); a topic that never
    appears is an error after the wait, not a silent success."""
    with TopicAdmin(services.kafka) as admin:
        specs = plan_topics(fresh_topics, partitions=2)[:2]
        created = admin.create(specs)
        assert sorted(created) == sorted(s.name for s in specs)
        assert admin.verify(specs) == []
        never = plan_topics(Topics(fresh_topics.prefix + "never."), partitions=2)[:1]
        with pytest.raises(BusError, match="do not read as planned after"):
            admin._until_settled(never, timeout_s=0.5)
