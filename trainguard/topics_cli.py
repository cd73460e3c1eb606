"""`trainguard topics create|verify|describe`: the explicit Kafka topic admin step.

Services never create topics; this command (and `trainguard migrate`, which runs `create`)
creates them from the topic plan of ingest/topics.py with the TG_KAFKA_* settings:
partitions (flat or sized plan), replication factor, min.insync.replicas, retention.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from trainguard.settings import BusSettings

if TYPE_CHECKING:
    from ingest.topics import TopicSpec


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `topics create`, `topics verify` and `topics describe`."""
    topics = sub.add_parser(
        "topics",
        help="create, verify or describe the Kafka topics",
        description="Create, verify or describe the Kafka topics of the TG_KAFKA_* settings.",
    )
    verbs = topics.add_subparsers(dest="topics_command", required=True)
    verbs.add_parser("create", help="create the missing topics, then verify all").set_defaults(
        func=cmd_topics_create
    )
    verbs.add_parser("verify", help="exit 1 unless every topic is as planned").set_defaults(
        func=cmd_topics_verify
    )
    verbs.add_parser("describe", help="print the planned topics as they are").set_defaults(
        func=cmd_topics_describe
    )


def _kafka_settings() -> BusSettings | None:
    settings = BusSettings()
    if settings.mode != "kafka":
        print(
            "trainguard: TG_KAFKA_MODE=embedded has no Kafka topics (set TG_KAFKA_MODE=kafka)",
            file=sys.stderr,
        )
        return None
    return settings


def create_topics(settings: BusSettings) -> tuple[list[str], list[str]]:
    """Create the planned topics that are missing; return (created, problems left).

    Raises BusError when the replication factor exceeds the live brokers (nothing created)
    or the cluster cannot be reached.
    """
    from ingest.bus import BusError
    from ingest.topics import TopicAdmin

    specs = _plan(settings)
    with TopicAdmin(settings.bootstrap) as admin:
        brokers = admin.brokers()
        if settings.replication_factor > brokers:
            raise BusError(
                f"replication factor {settings.replication_factor} "
                f"(TG_KAFKA_REPLICATION_FACTOR) needs as many brokers; "
                f"{settings.bootstrap} has {brokers} live"
            )
        created = admin.create(specs)
        problems = admin.verify(specs)
    if brokers >= 3 and settings.replication_factor < 3:
        problems.append(
            f"replication factor {settings.replication_factor} on a cluster of {brokers} "
            "brokers: set TG_KAFKA_REPLICATION_FACTOR=3 so a broker can fail"
        )
    return created, problems


def _plan(settings: BusSettings) -> list[TopicSpec]:
    from ingest.bus import Topics
    from ingest.topics import plan_topics

    return plan_topics(
        Topics(settings.topic_prefix),
        replication=settings.replication_factor,
        min_insync=settings.min_insync_replicas,
        partitions=settings.partitions if settings.topic_plan == "flat" else None,
    )


def _report(problems: list[str]) -> int:
    for problem in problems:
        print(f"  differs: {problem}")
    if problems:
        print(
            "trainguard: topics differ from the plan (existing topics are never altered: "
            "fix them with kafka-topics/kafka-configs, or change the TG_KAFKA_* settings)",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_topics_create(args: argparse.Namespace) -> int:
    """Create the missing topics and verify them all."""
    settings = _kafka_settings()
    if settings is None:
        return 2
    created, problems = create_topics(settings)
    total = len(_plan(settings))
    print(
        f"kafka {settings.bootstrap}: created {', '.join(created) or 'nothing'}; "
        f"{total - len(created)} existed"
    )
    return _report(problems)


def cmd_topics_verify(args: argparse.Namespace) -> int:
    """Exit 1 unless every planned topic exists as planned."""
    from ingest.topics import TopicAdmin

    settings = _kafka_settings()
    if settings is None:
        return 2
    with TopicAdmin(settings.bootstrap) as admin:
        problems = admin.verify(_plan(settings))
    if not problems:
        print(f"kafka {settings.bootstrap}: every topic as planned")
    return _report(problems)


def cmd_topics_describe(args: argparse.Namespace) -> int:
    """Print each planned topic as the cluster has it (or that it is missing)."""
    from ingest.topics import TopicAdmin

    settings = _kafka_settings()
    if settings is None:
        return 2
    specs = _plan(settings)
    with TopicAdmin(settings.bootstrap) as admin:
        states = {s.name: s for s in admin.describe(s.name for s in specs)}
    keys = ("retention.ms", "cleanup.policy", "max.message.bytes", "min.insync.replicas")
    for spec in specs:
        state = states.get(spec.name)
        if state is None:
            print(f"{spec.name}: missing")
            continue
        shown = ", ".join(f"{k}={state.configs.get(k)}" for k in keys)
        print(
            f"{state.name}: {state.partitions} partitions, replication {state.replication}, "
            f"smallest ISR {state.min_isr_seen}, offline partitions "
            f"{state.offline_partitions}; {shown}"
        )
    return 0
