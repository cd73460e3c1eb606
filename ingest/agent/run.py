"""The node agent: runs the collectors and publishes their events through a Producer.

One thread per collector. NVML calls on a GPU that is falling off the bus can block for
seconds, exactly when the kernel log matters most, so the GPU sampler must not be able to
delay the log tailers (or the host sampler). Each thread keeps its own fixed-rate schedule
(missed ticks are skipped, not bunched). A collector's exception is logged, counted and the
loop goes on; a `BusError` from the producer counts as a drop of that event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ingest.agent.gpu import GpuSampler
from ingest.agent.host import HostSampler
from ingest.agent.kernel import resolve_kernel_source
from ingest.agent.logs import LogCollector
from ingest.agent.settings import AgentSettings
from ingest.bus import BusError, Producer
from ingest.schema import EventBase

log = logging.getLogger(__name__)

STAT_KINDS: tuple[str, ...] = ("collects", "sent", "dropped", "errors")


class Collector(Protocol):
    """A source of events, polled by the agent."""

    name: str

    def collect(self) -> Sequence[EventBase]:
        """Return the events gathered since the last call."""

    def close(self) -> None:
        """Release what the collector holds."""


@dataclass(frozen=True)
class Scheduled:
    """A collector and how often it runs."""

    collector: Collector
    interval_s: float


def build_collectors(settings: AgentSettings, nvml: Any = None) -> list[Scheduled]:
    """Build the GPU, host and log collectors a node agent runs, from its settings."""
    kernel = resolve_kernel_source(settings.kernel_log, from_start=settings.logs_from_start)
    gpu = GpuSampler(
        settings.node,
        nvml,
        pcie_throughput=settings.gpu_pcie_throughput,
        retry_init_s=settings.nvml_retry_s,
    )
    host = HostSampler(
        settings.node,
        settings.host_root,
        mounts=settings.disk_mounts,
        net_interfaces=settings.net_interfaces,
    )
    logs = LogCollector(
        settings.node,
        kernel,
        settings.train_logs,
        host_root=settings.host_root,
        from_start=settings.logs_from_start,
        max_line_bytes=settings.max_line_bytes,
    )
    return [
        Scheduled(gpu, settings.interval_s),
        Scheduled(host, settings.interval_s),
        Scheduled(logs, settings.log_poll_s),
    ]


class Agent:
    """Runs collectors on their intervals and publishes what they produce."""

    def __init__(
        self,
        settings: AgentSettings,
        producer: Producer,
        *,
        nvml: Any = None,
        collectors: Sequence[Scheduled] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.producer = producer
        self.collectors = (
            list(collectors) if collectors is not None else build_collectors(settings, nvml)
        )
        self._clock = clock
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()  # the Producer protocol promises no thread safety

    def stats(self) -> dict[str, int]:
        """Return `<collector>.<kind>` counters and their totals `<kind>` (see STAT_KINDS)."""
        with self._lock:
            counts = dict(self._counts)
        out: dict[str, int] = {}
        for scheduled in self.collectors:
            name = scheduled.collector.name
            for kind in STAT_KINDS:
                out[f"{name}.{kind}"] = counts.get(f"{name}.{kind}", 0)
        for kind in STAT_KINDS:
            out[kind] = sum(out[f"{s.collector.name}.{kind}"] for s in self.collectors)
        return out

    def run_once(self) -> int:
        """Run every collector once, in order; return how many events were sent."""
        before = self.stats()["sent"]
        for scheduled in self.collectors:
            self._collect_and_publish(scheduled.collector)
        return self.stats()["sent"] - before

    def run(self, stop: threading.Event) -> None:
        """Run until `stop` is set, then flush the producer and close the collectors."""
        threads = [
            threading.Thread(
                target=self._loop,
                args=(scheduled, stop),
                name=f"tg-agent-{scheduled.collector.name}",
                daemon=True,
            )
            for scheduled in self.collectors
        ]
        for thread in threads:
            thread.start()
        log.info("agent %s running: %s", self.settings.node, [t.name for t in threads])
        stop.wait()
        stuck = set()
        for scheduled, thread in zip(self.collectors, threads, strict=True):
            thread.join(timeout=max(5.0, 2 * scheduled.interval_s))
            if thread.is_alive():  # e.g. an NVML call on a dying GPU: leave it, do not close
                log.warning("collector thread %s did not stop in time", thread.name)
                stuck.add(id(scheduled))
        self._flush()
        self.close(skip=stuck)

    def close(self, skip: set[int] | None = None) -> None:
        """Close every collector (but those whose id() is in `skip`)."""
        for scheduled in self.collectors:
            if skip and id(scheduled) in skip:
                continue
            try:
                scheduled.collector.close()
            except OSError as exc:
                log.warning("closing collector %s: %s", scheduled.collector.name, exc)

    def _loop(self, scheduled: Scheduled, stop: threading.Event) -> None:
        next_at = self._clock()
        while not stop.is_set():
            self._collect_and_publish(scheduled.collector)
            next_at += scheduled.interval_s
            now = self._clock()
            if next_at < now:
                next_at = now  # overran its interval: skip the missed ticks
            stop.wait(next_at - now)

    def _collect_and_publish(self, collector: Collector) -> None:
        name = collector.name
        self._count(name, "collects")
        try:
            events = collector.collect()
        except Exception:  # outermost loop of this collector: log with context, count, go on
            log.exception("agent %s: collector %s failed", self.settings.node, name)
            self._count(name, "errors")
            return
        for event in events:
            self._publish(name, event)

    def _publish(self, name: str, event: EventBase) -> None:
        try:
            with self._send_lock:
                self.producer.send(event.in_cluster(self.settings.cluster))
        except BusError as exc:
            dropped = self._count(name, "dropped")
            if dropped == 1 or dropped % 1000 == 0:
                log.warning(
                    "agent: bus refused a %s event (%d dropped so far): %s", name, dropped, exc
                )
            return
        self._count(name, "sent")

    def _count(self, name: str, kind: str) -> int:
        with self._lock:
            self._counts[f"{name}.{kind}"] += 1
            return self._counts[f"{name}.{kind}"]

    def _flush(self) -> None:
        try:
            self.producer.flush()
        except BusError as exc:
            log.warning("agent: final flush failed: %s", exc)
