"""The streaming diagnosis worker: telemetry topics in, incident revisions out.

One member of a consumer group reads every telemetry family, puts the events back in event-time
order and feeds the same `DiagnosisEngine` the recorded-directory mode uses. Records of different
partitions arrive interleaved and, while catching up on a backlog, far apart in event time; so
an event is fed only once every partition with records still to read has reached its time
(minus a short lateness allowance for records in flight); `max_buffered` bounds the wait.
Incidents go to ClickHouse and to the incidents topic: a new incident at once, later revisions
of one incident at most once per `publish_interval_s`. Status changes made elsewhere (resolved,
false alarm) are read back so a recurrence opens a new incident instead of reviving a closed one.

GPU scrapes, the bulk of the bytes, are decoded as the sink decodes them: by msgspec into
structs holding pydantic's values where `ingest.fast_decode` can vouch for them
(`fast_decode`), else by pydantic.

Event time is untrusted input. Events whose time the admission policy refuses (far ahead of or
behind this worker's clock, or unstorable) are skipped and counted, as the sink dead-letters
them; the time that releases buffered events and drives the detectors is the one the sources
agree on (`SourceClock`), so one source with a fast clock moves nothing for the others; an event
that diagnosis cannot digest is skipped, counted and logged with its position, never retried
forever.

The diagnosis state lives in memory and is rebuilt on start: the latest topology of every job
heard from recently (with its last steps and collectives shown to its detectors again, so their
baselines come back) and the correlator's open incidents (saved with every stored revision)
come back from the store before the first record is read; where the store ends before the
committed offsets (the sinks lag), that part is read again from the bus. Incident ids carry the
time the episode began, so a recurrence after a restart never reuses an old id. Offsets are
committed only for records already fed, and only while every incident is stored, so a
restarted worker re-reads what it had buffered; detectors re-learn their baselines from there.

As a scale-out member (`membership`, docs/scale-out.md) the worker also reads the evidence
topic, feeds nothing past what the route stage has routed (route marks), and on each new
assignment drops its state, rewinds to the committed offsets and restores only what it owns.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from analytics.readback import stored_through
from analytics.store import Store, StoreError
from diagnosis.clock import SourceClock
from diagnosis.clusters import ClusterEngines
from diagnosis.engine import DiagnosisEngine, Fed
from diagnosis.fabric import Fabric
from diagnosis.incidents import OpenState
from diagnosis.model import IncidentStatus
from diagnosis.publisher import IncidentPublisher, worth_logging
from diagnosis.reorder import Buffered, ReorderBuffer
from diagnosis.restore import apply_snapshot, read_snapshot
from diagnosis.routing import Membership, decode_mark, owner_key
from diagnosis.watermark import InputProgress
from ingest.bus import BusError, Consumer, Producer, Record, TopicPartition, Topics
from ingest.event_time import EventTimePolicy
from ingest.fast_decode import FastDecoder
from ingest.schema import DEFAULT_CLUSTER, JobTopology, SchemaError, decode_event
from ingest.sink import RecentIds

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerSettings:
    """How the worker batches, reorders and publishes."""

    batch_records: int = 5000
    poll_timeout_s: float = 0.5
    lateness_s: float = 2.0  # event time an early record waits for later-arriving earlier ones
    publish_interval_s: float = 5.0  # wall time between two revisions of one incident
    status_poll_s: float = 5.0
    commit_interval_s: float = 5.0
    live_skew_s: float = 120.0  # event time this close to the wall clock counts as live
    idle_partition_s: float = 5.0  # a lagging partition silent this long is not waited for
    max_buffered: int = 2_000_000  # beyond this, the oldest events are fed regardless
    idle_source_s: float = 5.0  # a source silent this long no longer counts for the clock
    event_time: EventTimePolicy = field(default_factory=EventTimePolicy)
    restore_topologies_s: float = 86_400.0  # jobs heard from this recently come back on start
    restore_incidents_s: float = 3_600.0  # incidents with evidence this recent come back
    restore_timeout_s: float = 30.0  # how long a start waits for the store before going on
    dedup_window: int = 500_000  # event ids remembered: a re-sent event is fed once
    fast_decode: bool = True  # GPU scrapes through ingest.fast_decode (pydantic's values)
    cluster: str = DEFAULT_CLUSTER  # of events that name none (TG_CLUSTER)


@dataclass
class WorkerStats:
    """Counters for logs and /metrics."""

    consumed: int = 0
    fed: int = 0
    undecodable: int = 0
    late: int = 0
    forced: int = 0
    published: int = 0
    incidents: int = 0
    store_errors: int = 0
    bus_errors: int = 0
    event_time: float = 0.0
    refused_time: int = 0  # event time refused by the admission policy
    duplicates: int = 0  # events re-sent by their producer (or redelivered), fed once
    poison: int = 0  # decoded events diagnosis could not digest
    restored_jobs: int = 0
    restored_incidents: int = 0


class DiagnosisWorker:
    """Consumes telemetry, diagnoses it, stores and publishes incidents."""

    def __init__(
        self,
        consumer: Consumer,
        producer: Producer,
        store: Store,
        topics: Topics,
        fabric: Fabric | None = None,
        settings: WorkerSettings | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        membership: Membership | None = None,
    ) -> None:
        """`membership` makes this a scale-out member (docs/scale-out.md): it reads the
        evidence topic too, and on each new assignment rebuilds the state of what it owns."""
        self.consumer = consumer
        self.membership = membership
        self._fabric = fabric
        self.producer = producer
        self.store = store
        self.topics = topics
        self.settings = settings or WorkerSettings()
        self.stats = WorkerStats()
        self.observe_stage: Callable[[str, float], None] | None = None
        """Called with ("tick" | "detect" | "publish", seconds) as each finishes (metrics)."""
        self._monotonic = monotonic
        self._wall = wall
        self.publisher = IncidentPublisher(
            store,
            producer,
            topics.incidents,
            self.settings.publish_interval_s,
            self.stats,
            monotonic,
            observe=self._observe_publish,
        )
        self._rewind = False
        self._fast = FastDecoder(self.settings.cluster) if self.settings.fast_decode else None
        self._reset()

    def _reset(self) -> None:
        """Start from nothing: what a new process has before `restore`."""
        monotonic = self._monotonic
        self.engines = ClusterEngines(self.settings.cluster, self._fabric)
        self._held = ReorderBuffer()
        self._sources = SourceClock(self.settings.idle_source_s)
        self._clock: datetime | None = None
        self._agreed: datetime | None = None  # the sources' agreed time, once per poll
        self._restored = False
        self._reread: dict[TopicPartition, int] | None = None  # where the bus is read again
        self._seen_ids = RecentIds(self.settings.dedup_window)
        self._fed_upto: dict[TopicPartition, int] = {}
        self._input = InputProgress(
            self.settings.lateness_s, self.settings.idle_partition_s, monotonic()
        )
        self._started = monotonic()
        self._last_commit = monotonic()
        self._last_status = monotonic()
        self.publisher.forget()
        if self.membership is not None:
            self.membership.progress.forget()

    def _observe_publish(self, seconds: float) -> None:
        if self.observe_stage is not None:
            self.observe_stage("publish", seconds)

    def on_revoke(self, partitions: set[TopicPartition]) -> None:
        """Nothing to do: what was fed is committed every `commit_interval_s`, and the
        next owner re-reads the rest (the client's callbacks must not block on the bus)."""
        log.info("%d partitions revoked", len(partitions))

    def on_assign(self, partitions: set[TopicPartition]) -> None:
        """Rebuild from the store and the committed offsets: the jobs owned may have changed."""
        self._reset()
        self._rewind = True  # partitions kept keep their position: read them again too
        log.info("assigned %d partitions: state rebuilt from the store", len(partitions))

    @property
    def engine(self) -> DiagnosisEngine:
        """Return the diagnosis engine of this worker's own cluster (TG_CLUSTER)."""
        return self.engines.get(self.settings.cluster)

    def run(self, stop: threading.Event) -> None:
        """Diagnose until stop is set, then publish what is pending and commit."""
        while not stop.is_set():
            started = time.perf_counter()
            self.step()
            if self.observe_stage is not None:
                self.observe_stage("tick", time.perf_counter() - started)
        self.publish(force=True)
        self._commit()
        log.info("diagnosis worker stopping: %s", self.stats)

    def step(self) -> int:
        """Poll once, feed what is in order, publish and commit when due; return records read."""
        try:
            records = self.consumer.poll(self.settings.batch_records, self.settings.poll_timeout_s)
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("bus: %s", exc)
            records = []
        if self._rewind:
            records = self._rewound()
        now = self._monotonic()
        if records:
            self._buffer(records, self._input.arrived(now, self.consumer.assignment()))
        owned, caught_up = self.consumer.assignment(), self.consumer.caught_up()
        if not self._restored and self._ready_to_restore(now, owned, caught_up):
            # before anything is fed: the oldest event read first is where this worker resumes
            self.restore(resume=self._held.oldest())
        if not self._restored:
            return len(records)
        self._agreed = self._sources.now(now)
        upto = self._watermark(self.settings.lateness_s, owned, caught_up)
        if upto is not None:
            self._release(upto)
        self._release_overflow()
        if not records and now - self._input.last_record >= self.settings.lateness_s:
            # nothing is arriving, so nothing in flight can arrive out of order: feed up to
            # where partitions with unread records stand and the sources agree (an event ahead
            # of that waits for another source to get there, or for the end)
            idle_upto = self._watermark(0.0, owned, caught_up)
            if idle_upto is not None:
                self._release(idle_upto)
            self._advance_if_live()
        self.publish()
        if now - self._last_status >= self.settings.status_poll_s:
            self._last_status = now
            self.publisher.read_statuses(self.engines)
        if now - self._last_commit >= self.settings.commit_interval_s:
            self._commit()
        return len(records)

    def _rewound(self) -> list[Record]:
        """Go back to the committed offsets after a new assignment; return no records.

        What the poll that brought the assignment returned may come from where partitions
        this member kept were before: it is read again after the rewind. Where the sinks have
        not stored a partition up to the committed offset yet (they lag, or were down), it is
        read again from where the store ends: the restore shows the detectors what is stored
        before that point and the bus brings the rest, so they see no gap (a gap of steps
        looked like a hang).
        """
        owned = self.consumer.assignment()
        try:
            self._reread = self.consumer.rewind(owned, self._store_ends(owned))
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("rewind after an assignment failed (retried): %s", exc)
            return []
        self._rewind = False
        return []

    def _store_ends(self, owned: set[TopicPartition]) -> dict[TopicPartition, int]:
        """Return, per owned telemetry partition, the offset after the last one stored."""
        telemetry = set(self.topics.telemetry())
        try:
            marks = stored_through(self.store, {tp for tp in owned if tp.topic in telemetry})
        except StoreError as exc:
            self.stats.store_errors += 1
            log.warning("store ends not readable; reading from the committed offsets: %s", exc)
            return {}
        return {tp: mark + 1 for tp, mark in marks.items()}

    def _ready_to_restore(
        self, now: float, owned: set[TopicPartition], caught_up: set[TopicPartition]
    ) -> bool:
        """Whether every owned partition with records to read has delivered some.

        The restore shows the detectors the store's view up to the oldest event read first
        (ports as sampled before it, steps stored before it): a partition not read yet may
        start earlier (evidence restarts at its commit, held back by the route marks), and a
        port that went down in between would come back down with its transition never seen.
        Bounded by `restore_timeout_s` and `max_buffered`.
        """
        if now - self._started >= self.settings.restore_timeout_s:
            return True
        if len(self._held) >= self.settings.max_buffered:
            return True
        return bool(owned) and owned <= caught_up | self._input.heard_from()

    def restore(self, resume: datetime | None = None) -> None:
        """Take back running jobs' topologies and open incidents from the store (once).

        `resume` is the earliest event time this worker is about to read again (None: it reads
        nothing old); detectors are shown the steps and collectives stored before it, and what
        comes after arrives from the bus in order, so detections keep their times.
        Retried while the store is unreachable, for at most `restore_timeout_s`; after that
        diagnosis goes on without them (logged), since new faults matter more than old ones.
        """
        deadline = self._monotonic() + self.settings.restore_timeout_s
        cfg = self.settings
        while True:
            try:
                snap = read_snapshot(
                    self.store, cfg.restore_topologies_s, cfg.restore_incidents_s, self._owned
                )
                break
            except StoreError as exc:
                self.stats.store_errors += 1
                if self._monotonic() >= deadline:
                    log.warning("starting without restored jobs and incidents: %s", exc)
                    self._restored = True
                    return
                log.info("store not readable yet, retrying the restore: %s", exc)
                time.sleep(1.0)
        done = apply_snapshot(self.store, snap, self.engines, resume, self._reread)
        self.stats.store_errors += done.store_errors
        for st in snap.states:
            status = snap.statuses.get(st.id, (_OPEN, ""))[0]
            self.publisher.restored(st.id, st.revision, status)
        self.stats.restored_jobs, self.stats.restored_incidents = done.jobs, done.incidents
        self._restored = True
        if done.jobs or done.incidents:
            log.info(
                "restored %d job topologies, %d incidents (%d closed) and %d NIC ports' "
                "states from the store (reading again from %s)",
                done.jobs,
                done.incidents,
                len(done.closed),
                done.ports,
                "the newest" if resume is None else resume.isoformat(timespec="seconds"),
            )

    def _owned(
        self, topologies: list[JobTopology], states: list[OpenState]
    ) -> tuple[list[JobTopology], list[OpenState]]:
        """Keep the jobs and incidents whose route key this member owns (all: one member)."""
        member = self.membership
        if member is None:
            return topologies, states
        owned = member.owned(self.consumer.assignment())
        return (
            [t for t in topologies if member.owns(t.job_id, owned)],
            [s for s in states if member.owns(owner_key(s.job, s.root.node), owned)],
        )

    def drain(self) -> None:
        """Feed everything buffered and publish every pending revision (end of a stream)."""
        if not self._restored:
            self.restore(resume=self._held.oldest())
        self._agreed = self._sources.now(self._monotonic())
        self._release(None)
        self.publish(force=True)
        self._commit()

    # ------------------------------------------------------------------ input
    def _buffer(self, records: list[Record], flow: float) -> None:
        """Decode, admit and buffer a poll's records; the input progress notes each partition
        once (every record of a poll arrives at the same flowing time)."""
        self.stats.consumed += len(records)
        now, wall = self._monotonic(), self._wall()
        member = self.membership
        parts = {(r.topic, r.partition): TopicPartition(r.topic, r.partition) for r in records}
        for tp in parts.values():
            self._input.heard(tp, flow)
        reached: dict[TopicPartition, datetime] = {}
        earliest, latest = self.settings.event_time.admitted(wall)
        for record in records:
            tp = parts[record.topic, record.partition]
            if member is not None and record.topic == member.evidence_topic:
                marks = decode_mark(record.value)
                if marks is not None:
                    member.progress.observe(tp, marks)
                    self._passed(tp, record.offset)
                    continue
            try:
                event = self._decode(record.value)
            except SchemaError:
                # the sink dead-letters it with the raw bytes; here it is only skipped
                self.stats.undecodable += 1
                self._passed(tp, record.offset)
                continue
            ts = event.ts
            if not earliest <= ts <= latest:
                refusal = self.settings.event_time.refusal(ts, wall)
                if refusal is not None:
                    # the sink dead-letters it for the same reason; here it is only skipped
                    self._refused(tp, record.offset, refusal)
                    continue
            if event.id in self._seen_ids:  # a producer's retry after a broker outage
                self.stats.duplicates += 1
                self._passed(tp, record.offset)
                continue
            self._seen_ids.add(event.id)
            self._sources.observe(event.key, ts, now)
            if member is not None and record.topic == member.evidence_topic:
                source = member.source_of(self.topics.for_kind(event.kind), event.key)
                if source is not None:
                    member.progress.routed(tp, source)
            if tp not in reached or ts > reached[tp]:
                reached[tp] = ts
            self._held.push(Buffered(ts, tp, record.offset, event))
        for tp, ts in reached.items():
            self._input.reached(tp, ts)

    def _decode(self, raw: bytes) -> Fed:
        """Return the record's event placed in this worker's cluster (SchemaError: invalid);
        GPU scrapes the fast decoder vouches for as its structs (pydantic's values)."""
        fast = None if self._fast is None else self._fast.decode(raw)
        if fast is not None:
            return fast
        return decode_event(raw).in_cluster(self.settings.cluster)

    def _passed(self, tp: TopicPartition, offset: int) -> None:
        """Count a record never fed (undecodable, refused, a duplicate) as done with."""
        self._fed_upto[tp] = max(self._fed_upto.get(tp, -1), offset)

    def _refused(self, tp: TopicPartition, offset: int, reason: str) -> None:
        self.stats.refused_time += 1
        self._passed(tp, offset)
        if worth_logging(self.stats.refused_time):
            log.warning(
                "event at %s offset %d skipped (%d so far): %s",
                tp,
                offset,
                self.stats.refused_time,
                reason,
            )

    def _watermark(
        self, lateness_s: float, owned: set[TopicPartition], caught_up: set[TopicPartition]
    ) -> datetime | None:
        """Return the event time up to which feeding is safe, or None for nothing yet.

        Partitions hold it back where their input stands (`InputProgress.holding`, less the
        lateness allowance); with `max_buffered` bounding the wait. Nothing is fed past the
        time the sources agree on, nor (a scale-out member) past what the route stage routed.
        """
        agreed = self._agreed
        if agreed is None or not owned:
            return None  # no event yet, or between assignments (a rebalance)
        holding = self._input.holding(self._monotonic(), owned, caught_up)
        if holding is None:
            return None
        if self.membership is not None:
            # node evidence still to be routed to this member: wait for the route stage
            known, routing = self.membership.progress.hold(
                self.membership.routed(owned), self._wall(), caught_up
            )
            if not known:
                return None
            if routing is not None:
                holding.append(routing)
        upto = min(min(holding), agreed) if holding else agreed
        return upto - timedelta(seconds=lateness_s)

    def _release(self, upto: datetime | None) -> None:
        """Feed buffered events with ts <= upto (all of them when upto is None)."""
        oldest = self._held.oldest()
        if oldest is None or (upto is not None and oldest > upto):
            return
        started = time.perf_counter()
        for item in self._held.upto(upto):
            self._feed(item)
        if self.observe_stage is not None:
            self.observe_stage("detect", time.perf_counter() - started)

    def _release_overflow(self) -> None:
        while len(self._held) > self.settings.max_buffered:
            self.stats.forced += 1
            self._feed(self._held.pop())

    def _feed(self, item: Buffered) -> None:
        if self._clock is not None and item.ts < self._clock:
            self.stats.late += 1  # fed anyway: detectors take it, the clock does not go back
            if worth_logging(self.stats.late):
                log.warning(
                    "%s at %s offset %d fed %.1f s behind diagnosis time (%d late so far)",
                    item.event.kind,
                    item.tp,
                    item.offset,
                    (self._clock - item.ts).total_seconds(),
                    self.stats.late,
                )
        else:
            self._clock = item.ts
        agreed = self._agreed
        clock = item.ts if agreed is None else min(item.ts, agreed)
        try:
            self.engines.feed(item.event, clock)
        except Exception:  # noqa: BLE001 - one indigestible event must not stop diagnosis
            self.stats.poison += 1
            log.exception(
                "event %s at %s offset %d skipped: diagnosis failed on it",
                item.event.id,
                item.tp,
                item.offset,
            )
        self.stats.fed += 1
        self.stats.event_time = item.ts.timestamp()
        if item.offset > self._fed_upto.get(item.tp, -1):
            self._fed_upto[item.tp] = item.offset

    def _advance_if_live(self) -> None:
        """Move diagnosis time with the wall clock when telemetry is live but silent.

        A cluster where everything stopped sends nothing; the hang detectors still have to see
        time pass. A replay of old data (event time far from the wall clock) is left alone.
        """
        agreed = self._agreed
        if agreed is None:
            return
        wall = self._wall()
        if abs((wall - agreed).total_seconds()) <= self.settings.live_skew_s:
            self.engines.advance(wall - timedelta(seconds=self.settings.lateness_s))

    # ------------------------------------------------------------------ output
    def publish(self, force: bool = False) -> None:
        """Store and publish new incidents now, updated ones when their interval has passed."""
        self.publisher.publish(self.engines, force)

    def _commit(self) -> None:
        self._last_commit = self._monotonic()
        if not self.publisher.settled():
            # an incident not stored yet: its evidence must be read again after a crash or a
            # rebalance (which drops it), so its records are not committed past
            return
        pending = self._held.pending()
        offsets = {}
        for tp, fed in self._fed_upto.items():
            offsets[tp] = min(fed + 1, pending.get(tp, fed + 1))
        if not offsets:
            return
        try:
            self.consumer.commit(offsets)
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("offset commit failed (re-read after a restart): %s", exc)


_OPEN = IncidentStatus.OPEN
