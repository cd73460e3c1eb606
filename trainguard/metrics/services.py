"""Series of each service's own work: counters read from its stats at scrape time, latencies.

Counters are the stats objects the processes already keep (`SinkStats`, `WorkerStats`, the
agent's counts), exported at scrape time as `_total` counters; nothing is counted twice.
Latencies are histograms the processes observe through their hooks (`Sink.observe_write`,
`DiagnosisWorker.observe_stage`, `ActionEngine.observe_step`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from actions.model import ActionKind
    from diagnosis.worker import DiagnosisWorker
    from ingest.agent.run import Agent
    from ingest.sink import Sink

BATCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a batch write is ~10-500 ms; an outage's retries stretch it to minutes."""
STEP_BUCKETS = (0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Seconds: a drain is sub-second, a job requeue or a webhook up to the 600 s phase timeout."""

SINK_COUNTERS: dict[str, tuple[str, str]] = {
    "consumed": ("trainguard_sink_records_consumed", "Records polled from Kafka."),
    "events_written": ("trainguard_sink_events_written", "Events stored in ClickHouse."),
    "rows_written": ("trainguard_sink_rows_written", "Rows inserted (an event may be several)."),
    "dead_letters": ("trainguard_sink_dead_letters", "Records stored as dead letters."),
    "duplicates": ("trainguard_sink_duplicates", "Re-sent events recognised and skipped."),
    "batches": ("trainguard_sink_batches", "Batches written and committed."),
    "write_retries": ("trainguard_sink_write_retries", "Batch writes retried (store away)."),
    "commit_failures": ("trainguard_sink_commit_failures", "Offset commits that failed."),
    "dropped": ("trainguard_sink_dropped", "Records lost: even their dead letter was refused."),
}
"""SinkStats field -> (counter name without _total, HELP)."""

DIAGNOSE_COUNTERS: dict[str, tuple[str, str]] = {
    "consumed": ("trainguard_diagnose_records_consumed", "Records polled from Kafka."),
    "fed": ("trainguard_diagnose_events_fed", "Events fed to the detectors."),
    "undecodable": ("trainguard_diagnose_undecodable", "Records that did not decode."),
    "late": ("trainguard_diagnose_late_events", "Events older than diagnosis time, fed anyway."),
    "forced": ("trainguard_diagnose_forced_events", "Events fed early: the buffer was full."),
    "published": ("trainguard_diagnose_revisions_published", "Incident revisions published."),
    "incidents": ("trainguard_diagnose_incidents_opened", "New incidents opened."),
    "store_errors": ("trainguard_diagnose_store_errors", "ClickHouse errors (retried)."),
    "bus_errors": ("trainguard_diagnose_bus_errors", "Kafka errors (retried)."),
    "refused_time": ("trainguard_diagnose_refused_time", "Events refused for their time."),
    "duplicates": ("trainguard_diagnose_duplicates", "Re-sent events fed once."),
    "poison": ("trainguard_diagnose_poison", "Decoded events diagnosis failed on (skipped)."),
}
"""WorkerStats field -> (counter name without _total, HELP)."""

AGENT_COUNTERS: dict[str, tuple[str, str]] = {
    "collects": ("trainguard_agent_collects", "Collector runs."),
    "sent": ("trainguard_agent_events_sent", "Events handed to the Kafka producer."),
    "dropped": ("trainguard_agent_events_dropped", "Events the bus refused (lost)."),
    "errors": ("trainguard_agent_collector_errors", "Collector runs that raised."),
}
"""Agent stat kind -> (counter name without _total, HELP); labelled by collector."""


class _StatsCollector(Collector):
    """Export counters from a callable returning the current values at scrape time."""

    def __init__(self, read: Callable[[], Iterable[Metric]]) -> None:
        self._read = read

    def collect(self) -> Iterable[Metric]:
        return self._read()


def _counters(stats: object, names: dict[str, tuple[str, str]]) -> list[Metric]:
    out: list[Metric] = []
    for field, (name, help_text) in names.items():
        out.append(CounterMetricFamily(name, help_text, value=float(getattr(stats, field))))
    return out


def register_sink(registry: CollectorRegistry, sink: Sink) -> None:
    """Export the sink's counters and gauges, and time its batch writes."""

    def read() -> list[Metric]:
        stats = sink.stats
        return [
            *_counters(stats, SINK_COUNTERS),
            GaugeMetricFamily(
                "trainguard_sink_store_up",
                "1 while ClickHouse takes writes, 0 while the sink is retrying an outage.",
                value=1.0 if stats.store_up else 0.0,
            ),
            GaugeMetricFamily(
                "trainguard_sink_last_commit_timestamp_seconds",
                "Unix time of the last offset commit (0: none yet).",
                value=stats.last_commit_ts,
            ),
            GaugeMetricFamily(
                "trainguard_sink_record_age_seconds",
                "At the last commit: how long ago the batch's newest record reached Kafka "
                "(how far the sink is behind).",
                value=stats.record_age_s,
            ),
        ]

    registry.register(_StatsCollector(read))
    histogram = Histogram(
        "trainguard_sink_batch_write_seconds",
        "Time to write one batch to ClickHouse, retries during an outage included.",
        registry=registry,
        buckets=BATCH_BUCKETS,
    )
    sink.observe_write = histogram.observe


def register_diagnosis(registry: CollectorRegistry, worker: DiagnosisWorker) -> None:
    """Export the diagnosis worker's counters and gauges, and time its stages."""

    def read() -> list[Metric]:
        stats = worker.stats
        return [
            *_counters(stats, DIAGNOSE_COUNTERS),
            GaugeMetricFamily(
                "trainguard_diagnose_restored_jobs",
                "Job topologies restored from ClickHouse at start-up.",
                value=float(stats.restored_jobs),
            ),
            GaugeMetricFamily(
                "trainguard_diagnose_restored_incidents",
                "Open incidents restored from ClickHouse at start-up.",
                value=float(stats.restored_incidents),
            ),
            GaugeMetricFamily(
                "trainguard_diagnose_event_time_seconds",
                "Event time (Unix) of the last event fed: how far diagnosis has got.",
                value=stats.event_time,
            ),
        ]

    registry.register(_StatsCollector(read))
    histogram = Histogram(
        "trainguard_diagnose_stage_seconds",
        "Duration of a diagnosis stage: tick (one poll-feed-publish loop), detect (feeding "
        "released events to the detectors), publish (storing and sending due incidents).",
        ["stage"],
        registry=registry,
        buckets=BATCH_BUCKETS,
    )
    for stage in ("tick", "detect", "publish"):
        histogram.labels(stage)  # every stage exported from the start, at zero

    def observe(stage: str, seconds: float) -> None:
        histogram.labels(stage).observe(seconds)

    worker.observe_stage = observe


def register_agent(registry: CollectorRegistry, agent: Agent) -> None:
    """Export the agent's counters by collector (gpu, host, logs)."""

    def read() -> list[Metric]:
        stats = agent.stats()
        names = [s.collector.name for s in agent.collectors]
        out: list[Metric] = []
        for kind, (name, help_text) in AGENT_COUNTERS.items():
            family = CounterMetricFamily(name, help_text, labels=["collector"])
            for collector in names:
                family.add_metric([collector], float(stats[f"{collector}.{kind}"]))
            out.append(family)
        return out

    registry.register(_StatsCollector(read))


def step_histogram(registry: CollectorRegistry) -> Callable[[ActionKind, str, float], None]:
    """Return an `ActionEngine.observe_step` hook timing steps by action kind and outcome."""
    histogram = Histogram(
        "trainguard_action_step_seconds",
        "Time an executed action step took, by action kind and outcome "
        "(done, failed, skipped, waiting).",
        ["kind", "outcome"],
        registry=registry,
        buckets=STEP_BUCKETS,
    )

    def observe(kind: ActionKind, outcome: str, seconds: float) -> None:
        histogram.labels(kind.value, outcome).observe(seconds)

    return observe
