"""Build the bus, the store and the sink from settings (the composition root)."""

from __future__ import annotations

import logging
import threading

from analytics.migrations import migrate
from analytics.store import EmbeddedStore, ServerStore, Store
from analytics.writer import ClickHouseWriter
from diagnosis.fabric import Fabric
from diagnosis.worker import DiagnosisWorker, WorkerSettings
from ingest.bus import Bus, Consumer, TopicPartition
from ingest.event_time import EventTimePolicy
from ingest.kafka_bus import KafkaBus
from ingest.sink import Sink, SinkSettings
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
    holder: list[Sink] = []

    def on_revoke(partitions: set[TopicPartition]) -> None:
        if holder:
            holder[0].on_revoke(partitions)

    consumer: Consumer
    if isinstance(bus, KafkaBus):
        consumer = bus.consumer(
            settings.group,
            bus.topics.telemetry(),
            on_revoke=on_revoke,
            instance_id=settings.instance_id,
            session_timeout_s=settings.session_timeout_s,
        )
    else:
        consumer = bus.consumer(settings.group, bus.topics.telemetry(), on_revoke=on_revoke)
    sink = Sink(consumer, writer, sink_settings)
    holder.append(sink)
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
    consumer: Consumer
    if isinstance(bus, KafkaBus):
        consumer = bus.consumer(
            settings.group, bus.topics.telemetry(), instance_id=settings.instance_id
        )
    else:
        consumer = bus.consumer(settings.group, bus.topics.telemetry())
    worker_settings = WorkerSettings(
        lateness_s=settings.lateness_s,
        publish_interval_s=settings.publish_interval_s,
        event_time=event_time or EventTimeSettings().policy(),
        cluster=ClusterSettings().cluster,
    )
    return DiagnosisWorker(
        consumer, bus.producer(), store, bus.topics, fabric=fabric, settings=worker_settings
    )
