"""Build the event bus from settings: the node agent's only wiring (no store, no diagnosis).

Kept apart from trainguard.wiring, whose imports need the server extra (ClickHouse client,
pandas, networkx), so that `trainguard agent` runs with the agent extra alone.
"""

from __future__ import annotations

from ingest.bus import Bus, InProcessBus, Topics
from trainguard.settings import BusSettings


def build_bus(settings: BusSettings) -> Bus:
    """Return the configured bus. Kafka topics are never created here: they come from
    `trainguard topics create`; a consumer of a missing topic, or a producer's first record
    for one, raises MissingTopics."""
    topics = Topics(settings.topic_prefix)
    if settings.mode == "embedded":
        return InProcessBus(topics, settings.partitions)
    from ingest.kafka_bus import KafkaBus  # kafka-python: the agent and server extras

    return KafkaBus(
        settings.bootstrap,
        topics,
        max_message_bytes=settings.max_message_bytes,
        acks=settings.acks,
    )
