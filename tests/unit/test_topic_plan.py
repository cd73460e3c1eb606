"""The topic plan of ingest/topics.py and the bus's topic and acks errors (no broker)."""

from __future__ import annotations

import pytest

from ingest.bus import MissingTopics, Topics
from ingest.kafka_bus import KafkaBus
from ingest.topics import SIZING, plan_topics


def test_sized_plan_follows_the_sizing_table() -> None:
    plan = {s.name: s for s in plan_topics(Topics("x."), replication=3)}
    assert set(plan) == {f"x.{s.suffix}" for s in SIZING}
    assert plan["x.metrics"].partitions == 24 and plan["x.incidents"].partitions == 6
    # co-partitioned by job: one count for train, nccl and jobs
    assert {plan[f"x.{t}"].partitions for t in ("train", "nccl", "jobs")} == {24}
    assert all(s.replication == 3 for s in plan.values())
    assert {s.configs["min.insync.replicas"] for s in plan.values()} == {"2"}
    assert plan["x.jobs"].configs["cleanup.policy"] == "compact,delete"
    assert plan["x.nccl"].configs["max.message.bytes"] == "8388608"


def test_flat_plan_on_one_broker() -> None:
    plan = plan_topics(Topics("tg."), replication=1, min_insync=2, partitions=4)
    assert {s.partitions for s in plan} == {4}
    # min.insync.replicas never exceeds the replicas: one broker takes acks=all writes
    assert {s.configs["min.insync.replicas"] for s in plan} == {"1"}
    assert plan_topics(Topics("tg."), replication=2)[0].configs["min.insync.replicas"] == "2"


@pytest.mark.parametrize("kwargs", [{"replication": 0}, {"min_insync": 0}, {"partitions": 0}])
def test_plan_refuses_bad_sizes(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        plan_topics(Topics(), **kwargs)


def test_missing_topics_names_them_and_the_command() -> None:
    exc = MissingTopics(["tg.metrics", "tg.logs"], "k1:9092", "run `trainguard topics create`")
    assert exc.topics == ["tg.metrics", "tg.logs"]
    assert "tg.metrics, tg.logs" in str(exc) and "k1:9092" in str(exc)
    assert "trainguard topics create" in str(exc)


def test_bus_refuses_unknown_acks() -> None:
    with pytest.raises(ValueError, match="acks"):
        KafkaBus("127.0.0.1:1", acks="2")
    assert KafkaBus("127.0.0.1:1").acks == "all"
