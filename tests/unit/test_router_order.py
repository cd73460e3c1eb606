"""The route stage forwards each batch in event-time order (docs/scale-out.md).

A poll returns its records source by source (the in-process bus, like Kafka's fetches, one
partition after another), so without sorting a node's log line could reach the evidence
partition before the same node's earlier host scrape, and a member would read the effect
before its cause.
"""

from __future__ import annotations

from diagnosis.router import EvidenceRouter
from diagnosis.routing import decode_mark, in_process_partition
from ingest.bus import InProcessBus, TopicFamily, Topics
from ingest.schema import decode_event
from tests.builders import at, make_host, make_log


def test_a_batch_is_forwarded_in_event_time_order_across_source_topics() -> None:
    topics = Topics()
    bus = InProcessBus(topics, partitions=2)
    producer = bus.producer()
    # the node's scrape at 200 s and its log lines at 190 s and 209 s; logs sort first by topic
    producer.send(make_host("node-6", 200))
    producer.send(make_log("node-6", 209, seq=1, line="NET/IB : Got completion with error 12"))
    producer.send(make_log("node-6", 190, seq=0, line="NCCL INFO Bootstrap : Using eth0"))
    producer.flush()
    node_topics = [topics.topic(TopicFamily.METRICS), topics.topic(TopicFamily.LOGS)]
    router = EvidenceRouter(
        bus.consumer("route", node_topics),
        bus.consumer("topologies", [topics.topic(TopicFamily.JOBS)]),
        producer,
        topics.evidence,
        2,
        in_process_partition,
    )
    assert router.step() == 3
    evidence = bus.consumer("member", [topics.evidence])
    routed = [
        decode_event(r.value) for r in evidence.poll(100, 1.0) if decode_mark(r.value) is None
    ]
    assert [(e.kind, e.ts) for e in routed] == [
        ("log", at(190)),
        ("host_metrics", at(200)),
        ("log", at(209)),
    ]
