"""Build the bus, the store and the sink from settings (the composition root)."""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass

from analytics.migrations import migrate
from analytics.store import EmbeddedStore, ServerStore, Store
from analytics.writer import ClickHouseWriter
from diagnosis.fabric import Fabric
from diagnosis.router import EvidenceRouter, RouterSettings
from diagnosis.routing import (
    Membership,
    PartitionOf,
    RouteProgress,
    in_process_partition,
    kafka_partition,
    source_names,
)
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import (
    Bus,
    Consumer,
    InProcessBus,
    RebalanceCallback,
    TopicFamily,
    TopicPartition,
)
from ingest.event_time import EventTimePolicy
from ingest.kafka_bus import KafkaBus
from ingest.sink import Sink, SinkSettings
from ingest.topics import TopicAdmin
from trainguard.buses import build_bus as build_bus  # re-exported: the one composition root
from trainguard.settings import (
    ClusterSettings,
    DiagnoseSettings,
    EventTimeSettings,
    SinkProcessSettings,
    StoreSettings,
)

log = logging.getLogger(__name__)


def build_store(settings: StoreSettings) -> Store:
    """Connect to the configured store (no I/O until the first statement)."""
    if settings.mode == "embedded":
        settings.path.mkdir(parents=True, exist_ok=True)
        return EmbeddedStore(str(settings.path), settings.database)
    return ServerStore(
        settings.host,
        settings.port,
        settings.database,
        settings.user,
        settings.password.get_secret_value(),
        connections=settings.connections,
        cluster=settings.cluster,
        insert_quorum=settings.insert_quorum,
    )


def build_sink(
    bus: Bus,
    store: Store,
    settings: SinkProcessSettings,
    event_time: EventTimePolicy | None = None,
) -> Sink:
    """Migrate the store and return a sink subscribed to every telemetry topic.

    `event_time` is the admission policy (default: TG_EVENT_*); the diagnosis worker of the
    same deployment must get the same one, so that what one refuses the other refuses too.
    """
    migrate(store)
    writer = ClickHouseWriter(store)
    sink_settings = SinkSettings(
        batch_records=settings.batch_records,
        batch_seconds=settings.batch_seconds,
        retry_max_s=settings.retry_max_s,
        event_time=event_time or EventTimeSettings().policy(),
        cluster=ClusterSettings().cluster,
        fast_decode=settings.fast_decode,
    )
    late = _Rebalance()
    consumer: Consumer
    if isinstance(bus, KafkaBus):
        consumer = bus.consumer(
            settings.group,
            bus.topics.telemetry(),
            on_assign=late.on_assign,
            on_revoke=late.on_revoke,
            instance_id=settings.instance_id,
            session_timeout_s=settings.session_timeout_s,
        )
    else:
        consumer = bus.consumer(
            settings.group,
            bus.topics.telemetry(),
            on_assign=late.on_assign,
            on_revoke=late.on_revoke,
        )
    sink = Sink(consumer, writer, sink_settings)
    late.assign_to, late.revoke_to = sink.on_assign, sink.on_revoke
    return sink


def run_in_thread(sink: Sink, stop: threading.Event) -> threading.Thread:
    """Run a sink in a daemon thread until stop is set."""
    thread = threading.Thread(target=sink.run, args=(stop,), name="sink", daemon=True)
    thread.start()
    return thread


def build_diagnosis(
    bus: Bus,
    store: Store,
    settings: DiagnoseSettings,
    event_time: EventTimePolicy | None = None,
) -> DiagnosisWorker:
    """Migrate the store and return a diagnosis worker on every telemetry topic.

    `event_time` is the admission policy (default: TG_EVENT_*), the sink's.
    """
    migrate(store)
    fabric = Fabric.from_json(settings.fabric.read_bytes()) if settings.fabric else None
    worker_settings = WorkerSettings(
        lateness_s=settings.lateness_s,
        publish_interval_s=settings.publish_interval_s,
        fast_decode=settings.fast_decode,
        event_time=event_time or EventTimeSettings().policy(),
        cluster=ClusterSettings().cluster,
    )
    if settings.scale_out:
        return _diagnosis_member(bus, store, settings, worker_settings, fabric)
    consumer: Consumer
    if isinstance(bus, KafkaBus):
        consumer = bus.consumer(
            settings.group, bus.topics.telemetry(), instance_id=settings.instance_id
        )
    else:
        consumer = bus.consumer(settings.group, bus.topics.telemetry())
    return DiagnosisWorker(
        consumer, bus.producer(), store, bus.topics, fabric=fabric, settings=worker_settings
    )


# ---------------------------------------------------------------- diagnosis scale-out

_NODE_FAMILIES = (TopicFamily.METRICS, TopicFamily.LOGS)
_JOB_FAMILIES = (TopicFamily.TRAIN, TopicFamily.NCCL, TopicFamily.JOBS)


@dataclass(frozen=True)
class ScaleOutPlan:
    """The partitions diagnosis scale-out works with (docs/scale-out.md)."""

    partitions: int  # of the co-partitioned job topics and the evidence topic
    sources: frozenset[str]  # every partition of the node topics, as route marks name them
    partition_of: PartitionOf


def scale_out_plan(bus: Bus) -> ScaleOutPlan:
    """Read the topics' partition counts; raise ValueError unless they are co-partitioned."""
    topics = bus.topics
    job_topics = [*(topics.topic(f) for f in _JOB_FAMILIES), topics.evidence]
    node_topics = [topics.topic(f) for f in _NODE_FAMILIES]
    if isinstance(bus, InProcessBus):
        counts = {t: bus.partitions for t in [*job_topics, *node_topics]}
        partition_of: PartitionOf = in_process_partition
    elif isinstance(bus, KafkaBus):
        bus.require_topics([*job_topics, *node_topics])
        with TopicAdmin(bus.bootstrap, bus.client_id) as admin:
            counts = {s.name: s.partitions for s in admin.describe([*job_topics, *node_topics])}
        partition_of = kafka_partition
    else:
        raise ValueError(f"diagnosis scale-out needs Kafka or the in-process bus, not {bus!r}")
    sizes = {counts[t] for t in job_topics}
    if len(sizes) != 1:
        shown = ", ".join(f"{t}: {counts[t]}" for t in job_topics)
        raise ValueError(
            f"diagnosis scale-out needs one partition count on {shown}; recreate them "
            "with `trainguard topics create` from one plan"
        )
    return ScaleOutPlan(
        sizes.pop(), source_names({t: counts[t] for t in node_topics}), partition_of
    )


def _diagnosis_member(
    bus: Bus,
    store: Store,
    settings: DiagnoseSettings,
    worker_settings: WorkerSettings,
    fabric: Fabric | None,
) -> DiagnosisWorker:
    """Return a scale-out member's worker: job topics plus the evidence topic, co-partitioned."""
    plan = scale_out_plan(bus)
    topics = bus.topics
    membership = Membership(
        evidence_topic=topics.evidence,
        jobs_topic=topics.topic(TopicFamily.JOBS),
        partitions=plan.partitions,
        partition_of=plan.partition_of,
        progress=RouteProgress(plan.sources),
    )
    reads = [*(topics.topic(f) for f in _JOB_FAMILIES), topics.evidence]
    late = _Rebalance()
    consumer: Consumer
    if isinstance(bus, KafkaBus):
        # the range assignor (kafka-python's first) gives a member the same partition numbers
        # in every topic of equal size: a job's evidence meets in one member
        consumer = bus.consumer(
            settings.group,
            reads,
            on_assign=late.on_assign,
            on_revoke=late.on_revoke,
            instance_id=settings.instance_id,
        )
    else:
        consumer = bus.consumer(
            settings.group, reads, on_assign=late.on_assign, on_revoke=late.on_revoke
        )
    worker = DiagnosisWorker(
        consumer,
        bus.producer(),
        store,
        topics,
        fabric=fabric,
        settings=worker_settings,
        membership=membership,
    )
    late.assign_to, late.revoke_to = worker.on_assign, worker.on_revoke
    return worker


def build_router(bus: Bus, settings: DiagnoseSettings) -> EvidenceRouter:
    """Return a scale-out member's route stage (group `<group>.route`, docs/scale-out.md)."""
    plan = scale_out_plan(bus)
    topics = bus.topics
    node_topics = [topics.topic(f) for f in _NODE_FAMILIES]
    late = _Rebalance()
    # every member reads every topology: a group of its own, never committed
    reader_group = f"{settings.group}.topologies.{uuid.uuid4().hex[:12]}"
    jobs = [topics.topic(TopicFamily.JOBS)]
    consumer: Consumer
    if isinstance(bus, KafkaBus):
        consumer = bus.consumer(
            f"{settings.group}.route",
            node_topics,
            on_revoke=late.on_revoke,
            instance_id=f"{settings.instance_id}.route" if settings.instance_id else None,
        )
    else:
        consumer = bus.consumer(f"{settings.group}.route", node_topics, on_revoke=late.on_revoke)
    router = EvidenceRouter(
        consumer,
        bus.consumer(reader_group, jobs),
        bus.producer(),
        topics.evidence,
        plan.partitions,
        plan.partition_of,
        RouterSettings(cluster=ClusterSettings().cluster),
    )
    late.revoke_to = router.on_revoke
    return router


@dataclass
class _Rebalance:
    """A consumer's rebalance callbacks, forwarded to the object built after it (its owner
    needs the consumer to be built); a rebalance before that has nothing to forward to."""

    assign_to: RebalanceCallback | None = None
    revoke_to: RebalanceCallback | None = None

    def on_assign(self, partitions: set[TopicPartition]) -> None:
        if self.assign_to is not None:
            self.assign_to(partitions)

    def on_revoke(self, partitions: set[TopicPartition]) -> None:
        if self.revoke_to is not None:
            self.revoke_to(partitions)
