"""Report a torch.distributed job from inside it: topology, steps and collective progress.

``enable()`` gathers every rank's host, GPU and process groups with one ``all_gather_object``
(a collective: every rank must call it) and rank 0 publishes the ``JobTopology``. After that
nothing touches the training thread but ``Reporter.step()``, which puts a record on a bounded
queue. A publisher thread sends to the bus; a sampler thread reads PyTorch's Flight Recorder
every few seconds and publishes what changed. A full queue or a bus that is down drops the
record and counts it; every error is caught at the thread boundary and counted.

Collective progress comes from the Flight Recorder of the job's backend:
``_dump_nccl_trace`` for NCCL and ``_dump_fr_trace(backend=...)`` for gloo (ProcessGroupGloo
records natively in PyTorch 2.15, the version tested). PyTorch 2.15 records by default; older
versions only when ``TORCH_FR_BUFFER_SIZE`` (or ``TORCH_NCCL_TRACE_BUFFER_SIZE``) is set
before the process groups are created, e.g. to 2000.
Where no recorder exists or it records nothing, steps and topology are still reported and
``stats.fr_unavailable`` says why collectives are not.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ingest.bus import Producer
from ingest.readers.flight_recorder import (
    DumpContext,
    FlightRecorderError,
    dump_progress,
    load_dump,
)
from ingest.schema import (
    CollectiveProgress,
    CollectiveState,
    CommKind,
    Communicator,
    EventBase,
    JobTopology,
    ParallelLayout,
    RankPlacement,
    TrainStep,
)

log = logging.getLogger(__name__)

FrSource = Callable[[], bytes | None]
"""Returns one Flight Recorder dump (pickle bytes), or None when the backend has none."""


@dataclass
class ReporterStats:
    """What the reporter did; read it from the training loop or a metrics endpoint."""

    queued: int = 0
    sent: int = 0
    dropped: int = 0
    errors: int = 0
    samples: int = 0
    fr_unavailable: str = ""
    last_error: str = ""


@dataclass(frozen=True)
class RankInfo:
    """What one rank tells rank 0 at enable time."""

    rank: int
    node: str
    gpu: int
    gpu_uuid: str | None
    groups: tuple[tuple[str, str, tuple[int, ...]], ...] = field(default=())


def build_topology(
    job_id: str,
    world_size: int,
    infos: Iterable[RankInfo],
    scheduler: str | None = None,
    scheduler_job_id: str | None = None,
) -> JobTopology:
    """Merge every rank's report into the job's topology (groups deduplicated by name)."""
    infos = sorted(infos, key=lambda i: i.rank)
    comms: dict[str, Communicator] = {}
    for info in infos:
        for name, kind, ranks in info.groups:
            comms.setdefault(name, Communicator(comm=name, kind=CommKind(kind), ranks=list(ranks)))
    sizes = {c.kind: len(c.ranks) for c in comms.values()}
    layout = ParallelLayout(
        tp=sizes.get(CommKind.TP, 1),
        pp=sizes.get(CommKind.PP, 1),
        dp=sizes.get(CommKind.DP, 1),
        ep=sizes.get(CommKind.EP, 1),
        cp=sizes.get(CommKind.CP, 1),
    )
    return JobTopology(
        ts=datetime.now(UTC),
        job_id=job_id,
        world_size=world_size,
        layout=layout,
        ranks=[
            RankPlacement(rank=i.rank, node=i.node, gpu=i.gpu, gpu_uuid=i.gpu_uuid) for i in infos
        ],
        communicators=list(comms.values()),
        scheduler=scheduler,
        scheduler_job_id=scheduler_job_id,
    )


class Reporter:
    """Publishes one rank's telemetry off the training thread."""

    def __init__(
        self,
        job_id: str,
        producer: Producer,
        rank: int,
        node: str,
        fr_source: FrSource | None = None,
        sample_interval_s: float = 5.0,
        queue_size: int = 10_000,
        job_level_steps: bool = True,
    ) -> None:
        self.job_id = job_id
        self.rank = rank
        self.node = node
        self.stats = ReporterStats()
        self._producer = producer
        self._queue: queue.Queue[EventBase] = queue.Queue(maxsize=queue_size)
        self._fr_source = fr_source
        self._interval = sample_interval_s
        self._job_level = job_level_steps and rank == 0
        self._last_step_at: float | None = None
        self._emitted: dict[int, CollectiveState] = {}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._publish_loop, daemon=True, name="tg-publish")
        ]
        if fr_source is not None:
            self._threads.append(
                threading.Thread(target=self._sample_loop, daemon=True, name="tg-fr-sample")
            )
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------------ training thread
    def step(
        self,
        step: int,
        loss: float | None = None,
        grad_norm: float | None = None,
        *,
        tokens_per_s: float | None = None,
        mfu: float | None = None,
        lr: float | None = None,
        loss_scale: float | None = None,
        skipped: bool = False,
        step_time_s: float | None = None,
    ) -> None:
        """Record one finished step (never blocks, never raises)."""
        try:
            now = time.monotonic()
            if step_time_s is None and self._last_step_at is not None:
                step_time_s = now - self._last_step_at
            self._last_step_at = now
            self.put(
                TrainStep(
                    ts=datetime.now(UTC),
                    job_id=self.job_id,
                    step=step,
                    rank=None if self._job_level else self.rank,
                    node=self.node,
                    loss=loss,
                    grad_norm=grad_norm,
                    tokens_per_s=tokens_per_s,
                    mfu=mfu,
                    step_time_s=step_time_s,
                    lr=lr,
                    loss_scale=loss_scale,
                    skipped=skipped,
                )
            )
        except Exception as exc:  # noqa: BLE001 - the job must never crash because of us
            self._count_error("step", exc)

    def put(self, event: EventBase) -> None:
        """Queue an event for the publisher; drop and count it when the queue is full."""
        try:
            self._queue.put_nowait(event)
            self.stats.queued += 1
        except queue.Full:
            self.stats.dropped += 1

    def close(self, timeout_s: float = 5.0) -> None:
        """Sample once more, send what is queued (up to timeout_s) and stop the threads."""
        if self._fr_source is not None and not self._stop.is_set():
            self._sample_once()
        self._stop.set()
        for t in self._threads:
            t.join(timeout_s)
        try:
            self._producer.flush(timeout_s)
        except Exception as exc:  # noqa: BLE001 - shutting down: count, never raise
            self._count_error("flush", exc)

    # ------------------------------------------------------------------ background threads
    def _publish_loop(self) -> None:
        while not (self._stop.is_set() and self._queue.empty()):
            try:
                event = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._producer.send(event)
                self.stats.sent += 1
            except Exception as exc:  # noqa: BLE001 - thread boundary: a down bus drops
                self.stats.dropped += 1
                self._count_error("send", exc)

    def _sample_loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample_once()

    def _sample_once(self) -> None:
        assert self._fr_source is not None
        try:
            raw = self._fr_source()
            if raw is None:
                self.stats.fr_unavailable = "backend has no flight recorder"
                return
            dump = load_dump(raw)
            self.stats.samples += 1
            if not dump.get("entries"):
                self.stats.fr_unavailable = "flight recorder empty (set TORCH_FR_BUFFER_SIZE)"
                return
            self.stats.fr_unavailable = ""
            ctx = DumpContext(self.job_id, self.rank, self.node)
            for event in self._changed(dump_progress(dump, ctx, datetime.now(UTC)), dump):
                self.put(event)
        except FlightRecorderError as exc:
            self._count_error("flight recorder", exc)
        except Exception as exc:  # noqa: BLE001 - thread boundary
            self._count_error("sample", exc)

    def _changed(
        self, progress: list[CollectiveProgress], dump: Mapping[str, Any]
    ) -> list[CollectiveProgress]:
        """Return records whose state is new; of the completed ones, the latest per comm only."""
        ids = [int(e.get("record_id", 0)) for e in sorted(dump["entries"], key=_record_id)]
        done: dict[str, CollectiveProgress] = {}
        out: list[CollectiveProgress] = []
        for record_id, p in zip(ids, progress, strict=True):
            if self._emitted.get(record_id) == p.state:
                continue
            self._emitted[record_id] = p.state
            if p.state == CollectiveState.COMPLETED:
                done[p.comm] = p
            else:
                out.append(p)
        if len(self._emitted) > 4 * len(ids) + 1000:  # the ring buffer wraps: forget old ids
            keep = set(ids)
            self._emitted = {k: v for k, v in self._emitted.items() if k in keep}
        return [*done.values(), *out]

    def _count_error(self, where: str, exc: BaseException) -> None:
        self.stats.errors += 1
        self.stats.last_error = f"{where}: {type(exc).__name__}: {exc}"
        log.debug("trainguard reporter %s failed", where, exc_info=exc)


def _record_id(entry: Mapping[str, Any]) -> int:
    return int(entry.get("record_id", 0))


def hostname() -> str:
    """Return this host's short name (what Slurm and the agent call the node)."""
    return socket.gethostname().split(".")[0]
