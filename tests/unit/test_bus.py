"""The in-process bus: routing, partitions, consumer groups, commits."""

from __future__ import annotations

from ingest.bus import InProcessBus, TopicPartition, Topics
from tests.builders import make_gpu_metrics, make_log, make_step, one_of_each


def test_events_route_to_their_family_topic():
    topics = Topics("x.")
    assert topics.for_event(make_gpu_metrics()) == "x.metrics"
    assert topics.for_event(make_log()) == "x.logs"
    assert topics.for_event(make_step()) == "x.train"
    assert set(topics.telemetry()) == {"x.metrics", "x.logs", "x.train", "x.nccl", "x.jobs"}


def test_same_key_same_partition():
    bus = InProcessBus(partitions=8)
    producer = bus.producer()
    for second in range(20):
        producer.send(make_gpu_metrics(node="node-a", seconds=second))
    ends = bus.end_offsets("tg.metrics")
    assert sorted(ends.values()) == [0] * 7 + [20]


def test_group_members_split_partitions_and_resume_from_commits():
    bus = InProcessBus(partitions=4)
    producer = bus.producer()
    for i in range(40):
        producer.send(make_gpu_metrics(node=f"n{i}"))
    a = bus.consumer("g", ["tg.metrics"])
    b = bus.consumer("g", ["tg.metrics"])
    assert a.assignment().isdisjoint(b.assignment())
    assert len(a.assignment() | b.assignment()) == 4
    got_a = a.poll(1000, 0.1)
    got_b = b.poll(1000, 0.1)
    assert len(got_a) + len(got_b) == 40
    a.commit({r.tp: r.offset + 1 for r in got_a})
    b.close()  # b never committed: its records are redelivered to a
    again = a.poll(1000, 0.1)
    assert sorted((r.partition, r.offset) for r in again) == sorted(
        (r.partition, r.offset) for r in got_b
    )


def test_pause_stops_delivery_until_resume():
    bus = InProcessBus()
    consumer = bus.consumer("g", ["tg.logs"])
    bus.producer().send(make_log())
    consumer.pause()
    assert consumer.poll(10, 0.05) == []
    consumer.resume()
    assert len(consumer.poll(10, 0.05)) == 1


def test_revoke_and_assign_callbacks_fire_on_rebalance():
    bus = InProcessBus(partitions=2)
    revoked: list[set[TopicPartition]] = []
    first = bus.consumer("g", ["tg.jobs"], on_revoke=revoked.append)
    assert len(first.assignment()) == 2
    bus.consumer("g", ["tg.jobs"])
    assert revoked and revoked[-1] == {TopicPartition("tg.jobs", 0), TopicPartition("tg.jobs", 1)}
    assert len(first.assignment()) == 1


def test_commit_ignores_partitions_not_owned():
    bus = InProcessBus(partitions=2)
    consumer = bus.consumer("g", ["tg.train"])
    consumer.commit({TopicPartition("tg.other", 0): 5, TopicPartition("tg.train", 1): 3})
    assert bus.committed("g") == {TopicPartition("tg.train", 1): 3}


def test_every_kind_travels():
    bus = InProcessBus()
    consumer = bus.consumer("g", bus.topics.telemetry())
    producer = bus.producer()
    for event in one_of_each():
        producer.send(event)
    assert len(consumer.poll(100, 0.1)) == len(one_of_each())
