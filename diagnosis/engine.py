"""The diagnosis engine: one time-ordered telemetry stream in, incidents out.

Per job the communication graph is built from its topology (and the inventory's cabling when
present) and the implicit detectors (hang, fail-slow, straggler, MFU, numerical) are fed; every
log line goes through the explainer; NVML errors, NIC ports going down and full disks become
findings; localization names the suspects and the correlator folds findings into incidents.
Detectors are checked once per second of event time. The same engine runs behind the
streaming worker (`diagnosis.worker`, one per cluster in `diagnosis.clusters`) and the
recorded-directory mode (`diagnosis.replay`). Ground truth is never read here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from datetime import datetime, timedelta

from diagnosis.detectors import (
    Detector,
    FailSlowDetector,
    HangDetector,
    MfuDetector,
    NumericalDetector,
    StragglerDetector,
    explicit,
)
from diagnosis.detectors.failslow import RULE as FAILSLOW_RULE
from diagnosis.explain import explain
from diagnosis.fabric import Fabric
from diagnosis.graph import CommGraph, build_comm_graph
from diagnosis.incidents import Correlator, Incident, Key, root_key
from diagnosis.localize import (
    localize_change,
    localize_hang,
    localize_network,
    localize_straggler,
)
from diagnosis.localize.failslow import supersedes
from diagnosis.model import Category, ComponentKind, Finding, Suspect
from diagnosis.transfers import TransferLog
from ingest.fast_decode import GpuScrape
from ingest.schema import (
    DEFAULT_CLUSTER,
    CollectiveProgress,
    CollectiveState,
    EventBase,
    GpuMetrics,
    HostMetrics,
    JobTopology,
    LogLine,
    PortSeen,
    TrainStep,
)

PortKey = tuple[str, str, int]  # a NIC port: (node, nic, port)
STRAGGLER_WINDOW = 50_000  # completed collective records kept per job for straggler localization
STRAGGLER_STEPS = 4  # ... and at least this many steps of every communicator member's records
STRAGGLER_LOOKBACK = timedelta(seconds=20)  # older records dilute a fresh slowdown
SNAPSHOT_EVERY = 10  # steps between samples of a quiet job's records (fail-slow's "before")
SNAPSHOTS = 3
# a fail-slow episode is localized again this long after its detection, with more steps of
# transfer times after the change (a slow NIC is told apart from benign bursts by many steps)
RELOCALIZE_AFTER = (timedelta(minutes=2), timedelta(minutes=5))
HANG_STALL = timedelta(seconds=10)
HANG_RETRY = timedelta(seconds=60)
FINE_CHECKS = 300  # a gap in event time is checked second by second for this long,
COARSE_STEP = timedelta(seconds=60)  # then a minute at a time,
COARSE_CHECKS = 60  # for this many minutes; the rest of a longer gap is one jump
_CRASH_RULES = frozenset({"elastic.child_failed", "host.killed"})
_STATE_ORDER = {CollectiveState.SCHEDULED: 0, CollectiveState.STARTED: 1}  # others: 2

Fed = EventBase | GpuScrape
"""What the engine takes: a typed event, or a GPU scrape as the fast decoder gives it."""
_IB_RULES = frozenset({"nccl.ib_completion_error"})


class _Job:
    """Per-job state: graph, detectors, the progress localization needs."""

    def __init__(self, topology: JobTopology, fabric: Fabric | None) -> None:
        self.id = topology.job_id
        self.topology_id = topology.id
        self.graph: CommGraph = build_comm_graph(topology, fabric)
        self.hang = HangDetector(self.id)
        self.failslow = FailSlowDetector(self.id)
        self.detectors: list[Detector] = [
            self.hang,
            self.failslow,
            StragglerDetector(self.id),
            MfuDetector(self.id),
            NumericalDetector(self.id),
        ]
        self.latest: dict[tuple[int, str], CollectiveProgress] = {}
        self.recent: deque[CollectiveProgress] = deque(maxlen=straggler_window(self.graph))
        self.failing_ranks: set[int] = set()
        self.hang_key: Key | None = None
        self.placement = {p.rank: (p.node, p.gpu) for p in topology.ranks}
        self.hang_retry_until: datetime | None = None
        self.steps = 0
        # Sampled records of recent steps while the job was quiet: (taken at, records).
        self.snapshots: deque[tuple[datetime, list[CollectiveProgress]]] = deque(maxlen=SNAPSHOTS)
        self.transfers = TransferLog(self.graph)
        self.failslow_key: Key | None = None
        self.failslow_suspects: list[Suspect] = []  # the episode's localization so far
        self.relocalize_at: list[datetime] = []  # when to localize a fail-slow episode again

    def observe(self, event: EventBase) -> None:
        """Feed one step or collective record to the detectors and the progress state."""
        for d in self.detectors:
            d.observe(event)
        if isinstance(event, TrainStep) and event.rank is None and event.job_id == self.id:
            self._sample(event)
        elif isinstance(event, CollectiveProgress):
            key = (event.rank, event.comm)
            cur = self.latest.get(key)
            if cur is None or (event.seq, _order(event)) >= (cur.seq, _order(cur)):
                self.latest[key] = event
            if event.state == CollectiveState.COMPLETED:
                self.recent.append(event)
                self.transfers.observe(event)

    def _sample(self, step: TrainStep) -> None:
        """Keep the records of the last few steps, every SNAPSHOT_EVERY steps of a quiet job."""
        self.steps += 1
        if self.steps % SNAPSHOT_EVERY or not self.failslow.quiet or not step.step_time_s:
            return
        since = step.ts - STRAGGLER_STEPS * timedelta(seconds=step.step_time_s)
        self.snapshots.append((step.ts, [p for p in self.recent if p.ts >= since]))

    def before_change(self) -> list[CollectiveProgress]:
        """Return the latest sampled records taken before the fail-slow change point."""
        change_at = self.failslow.change_at
        if change_at is None:
            return []
        taken = [records for at, records in self.snapshots if at <= change_at]
        return taken[-1] if taken else []

    def localize_change(self) -> list[Suspect]:
        """Localize the current fail-slow episode: what changed at its change point."""
        change_at = self.failslow.change_at
        if change_at is None:
            return []
        after = [p for p in self.recent if p.ts > change_at]
        skip = timedelta(seconds=self.failslow.baseline_s or 0.0)  # the step in flight then
        transfers = self.transfers.change(change_at, skip)
        return localize_change(self.graph, self.before_change(), after, transfers)


def straggler_window(graph: CommGraph) -> int:
    """Return how many completed records to keep for straggler localization of a job.

    Each member of each communicator reports one record per step, so a fixed count would
    hold less than one step of a large job (64,512 records a step at 16,384 GPUs) and
    busy times, which compare a rank's consecutive collectives, could not be computed.
    """
    per_step = sum(len(members) for members in graph.comm_members.values())
    return max(STRAGGLER_WINDOW, STRAGGLER_STEPS * per_step)


def _order(p: CollectiveProgress) -> int:
    return _STATE_ORDER.get(p.state, 2)


class DiagnosisEngine:
    """Diagnosis of one time-ordered telemetry stream: events in, incidents out."""

    def __init__(self, fabric: Fabric | None = None, cluster: str = DEFAULT_CLUSTER) -> None:
        self.fabric = fabric
        self.cluster = cluster  # node and job names below are this cluster's
        self.correlator = Correlator(cluster=cluster)
        self.jobs: dict[str, _Job] = {}
        self.gpu_job: dict[tuple[str, int], tuple[str, int]] = {}  # (node, gpu) -> (job, rank)
        self.node_jobs: dict[str, str] = {}
        self.pci_gpu: dict[tuple[str, str], int] = {}
        self.nvml_seen: set[tuple[str, int]] = set()
        self.ports: dict[PortKey, PortSeen] = {}  # each NIC port as last scraped
        self.disk_seen: set[tuple[str, str]] = set()
        self._second: datetime | None = None
        self._warmed: set[str] = set()  # ids of events restored into detectors

    def feed(self, event: Fed, clock: datetime | None = None) -> None:
        """Take the next event of the merged stream.

        Detectors are checked up to `clock` (default: the event's own time); a caller that
        knows better than one event what time it is (the streaming worker) passes it.
        """
        self._tick(event.ts if clock is None else clock)
        if self._warmed and event.id in self._warmed:
            self._warmed.discard(event.id)  # seen by the detectors while warming up
            return
        if isinstance(event, JobTopology):
            self._topology(event)
        elif isinstance(event, TrainStep | CollectiveProgress):
            job = self.jobs.get(event.job_id)
            if job is not None:
                job.observe(event)
            if isinstance(event, TrainStep) and event.rank is None:
                self.correlator.progress(event.job_id, event.ts)
        elif isinstance(event, LogLine):
            self._log(event)
        elif isinstance(event, GpuMetrics | GpuScrape):
            self._gpu_metrics(event)
        elif isinstance(event, HostMetrics):
            self._host_metrics(event)

    def advance(self, now: datetime) -> None:
        """Let diagnosis time pass with no event (live telemetry gone silent)."""
        self._tick(now)

    def restore(self, topology: JobTopology) -> None:
        """Take back a running job's topology after a restart, without moving the clock."""
        self._topology(topology)

    def restore_ports(self, ports: Mapping[PortKey, PortSeen]) -> None:
        """Take back NIC ports as last scraped after a restart, without moving the clock.

        A port is seen going down (or its link dropping) only against the scrape before; an
        engine that reads again from just after a port's last "up" sample would otherwise miss
        the port going down, and blame the job's stalled collectives instead.
        """
        self.ports.update(ports)

    def warm(self, job_id: str, events: list[EventBase]) -> None:
        """Show a restored job's recent steps and collectives to its detectors again.

        The detectors' baselines (healthy step times, the last step, collectives in flight)
        come back as they were; nothing is checked and the clock does not move. The same
        events read again from the bus later are skipped once, so none counts twice.
        """
        job = self.jobs.get(job_id)
        if job is None:
            return
        for event in sorted(events, key=lambda e: e.ts):
            job.observe(event)
            self._warmed.add(event.id)

    def finish(self) -> list[Incident]:
        """Run the last check and return the incidents."""
        if self._second is not None:
            self._check(self._second + timedelta(seconds=1))
        return self.correlator.incidents()

    # ------------------------------------------------------------------ clock
    def _tick(self, ts: datetime) -> None:
        """Check the detectors at each second up to `ts`; long gaps in bounded jumps.

        Detectors fire within minutes of what they saw last, so a gap is checked second by
        second for FINE_CHECKS seconds, then a minute at a time, then in one jump: a gap of
        hours or years costs at most FINE_CHECKS + COARSE_CHECKS + 1 checks.
        """
        second = ts.replace(microsecond=0)
        if self._second is None:
            self._second = second
        checks = 0
        while self._second < second:
            if checks < FINE_CHECKS:
                step = timedelta(seconds=1)
            elif checks < FINE_CHECKS + COARSE_CHECKS:
                step = min(COARSE_STEP, second - self._second)
            else:
                step = second - self._second
            self._second += step
            self._check(self._second)
            checks += 1

    def _check(self, now: datetime) -> None:
        for job in self.jobs.values():
            for detector in job.detectors:
                for finding in detector.check(now):
                    self._implicit(job, finding, now)
            if job.relocalize_at and now >= job.relocalize_at[0]:
                job.relocalize_at.pop(0)
                self._relocalize(job)
            if job.hang_retry_until is not None and job.hang_key is not None:
                if now > job.hang_retry_until:
                    job.hang_retry_until = None
                else:
                    suspects = localize_hang(job.graph, job.latest.values(), now, HANG_STALL)
                    if suspects:
                        self.correlator.set_suspects(job.hang_key, suspects)
                        job.hang_retry_until = None

    def _relocalize(self, job: _Job) -> None:
        """Localize a fail-slow episode again with the steps seen since it was detected; a
        narrower answer (fewer suspects: less ambiguous), or the first to name a link,
        replaces the incident's (`supersedes`)."""
        if not job.failslow.in_episode or job.failslow_key is None:
            return
        suspects = job.localize_change()
        if supersedes(suspects, job.failslow_suspects):
            job.failslow_suspects = suspects
            self.correlator.set_suspects(job.failslow_key, suspects)

    def _implicit(self, job: _Job, finding: Finding, now: datetime) -> None:
        suspects: list[Suspect] = []
        if finding.category == Category.HANG:
            suspects = localize_hang(job.graph, job.latest.values(), now, HANG_STALL)
        failslow = finding.rule == FAILSLOW_RULE
        if failslow:
            suspects = job.localize_change()
            job.relocalize_at = [now + after for after in RELOCALIZE_AFTER]
        if finding.category == Category.STRAGGLER and not suspects:
            since = now - STRAGGLER_LOOKBACK
            suspects = localize_straggler(job.graph, [p for p in job.recent if p.ts >= since])
        own = root_key(finding, job.id)
        existed = failslow and self.correlator.has_open(own, now)
        key = self.correlator.add(finding, now, job=job.id, suspects=suspects or None)
        # an episode another incident explains (the job's broken GPU) is that incident's
        # evidence: its localization must never replace that incident's suspects
        if failslow and key is not None and key == own:
            job.failslow_key, job.failslow_suspects = key, suspects
            if existed and suspects:  # what changed outranks who arrived last (trend's blame)
                self.correlator.set_suspects(key, suspects)
        if finding.category == Category.HANG and not suspects and key and key[0] == "hang":
            job.hang_key, job.hang_retry_until = key, now + HANG_RETRY

    # ------------------------------------------------------------------ families
    def _topology(self, topo: JobTopology) -> None:
        known = self.jobs.get(topo.job_id)
        if known is not None and known.topology_id == topo.id:
            return  # the same topology again (a re-read, a restart): keep what was learned
        job = _Job(topo, self.fabric)
        self.jobs[job.id] = job
        job.observe(topo)  # detectors map ranks to GPUs from it
        for p in topo.ranks:
            self.gpu_job[(p.node, p.gpu)] = (job.id, p.rank)
            self.node_jobs[p.node] = job.id

    def _job_of(self, finding: Finding, event_job: str | None) -> str | None:
        if event_job is not None:
            return event_job
        if finding.node is not None and finding.gpu is not None:
            placed = self.gpu_job.get((finding.node, finding.gpu))
            if placed is not None:
                return placed[0]
        return self.node_jobs.get(finding.node or "")

    def _log(self, line: LogLine) -> None:
        for finding in explain(line.line, node=line.node):
            if finding.category == Category.BENIGN:
                continue
            finding = self._placed(finding, line)
            job_id = self._job_of(finding, line.job_id)
            job = self.jobs.get(job_id or "")
            if job is not None and finding.rule in _CRASH_RULES:
                job.hang.end()  # a crash is not also a hang
            suspects = None
            if job is not None and finding.rule in _IB_RULES and finding.rank is not None:
                job.failing_ranks.add(finding.rank)
                suspects = localize_network(job.graph, failing_ranks=job.failing_ranks) or None
            self.correlator.add(finding, line.ts, job=job_id, suspects=suspects)

    def _placed(self, finding: Finding, line: LogLine) -> Finding:
        """Fill in rank from the event and GPU from the PCI address, where missing."""
        update: dict[str, object] = {}
        if finding.rank is None and line.rank is not None:
            update["rank"] = line.rank
        if finding.gpu is None and finding.pci_bus_id is not None and finding.node is not None:
            gpu = self.pci_gpu.get((finding.node, finding.pci_bus_id))
            if gpu is not None:
                update["gpu"] = gpu
        rank = update.get("rank", finding.rank)
        job = self.jobs.get(line.job_id or "")
        if finding.gpu is None and "gpu" not in update and isinstance(rank, int) and job:
            placement = job.placement.get(rank)
            if placement is not None and placement[0] == (finding.node or line.node):
                update["gpu"] = placement[1]  # the rank's GPU, from the job's topology
        return finding.model_copy(update=update) if update else finding

    def _gpu_metrics(self, event: GpuMetrics | GpuScrape) -> None:
        for s in event.gpus:
            if s.pci_bus_id is not None:
                self.pci_gpu[(event.node, s.pci_bus_id.upper())] = s.gpu
            if s.nvml_error is None or (event.node, s.gpu) in self.nvml_seen:
                continue
            self.nvml_seen.add((event.node, s.gpu))
            finding = explicit.gpu_unreadable(event.node, s)
            if finding is None:
                continue
            self.correlator.add(finding, event.ts, job=self._job_of(finding, None))

    def _host_metrics(self, event: HostMetrics) -> None:
        for nic in event.nics:
            key = (event.node, nic.nic, nic.port)
            before, now = self.ports.get(key), nic.seen()
            self.ports[key] = now
            fault = explicit.nic_went_down(
                event.node, nic.nic, before, now
            ) or explicit.nic_link_dropped(event.node, nic.nic, before, now)
            if fault is not None:
                self._nic_fault(event, nic.nic, fault)
        for disk in event.disks:
            full = explicit.disk_full(event.node, disk)
            if full is not None and (event.node, disk.mount) not in self.disk_seen:
                self.disk_seen.add((event.node, disk.mount))
                self.correlator.add(full, event.ts, job=self.node_jobs.get(event.node))

    def _nic_fault(self, event: HostMetrics, nic: str, finding: Finding) -> None:
        job_id = self.node_jobs.get(event.node)
        job = self.jobs.get(job_id or "")
        suspects: list[Suspect] = []
        if job is not None:
            ranks = [r for r, n in job.graph.rank_node.items() if n == event.node]
            on_nic = [r for r in ranks if job.graph.rank_nic.get(r) == nic]
            job.failing_ranks.update(on_nic)
            suspects = localize_network(job.graph, failing_ranks=on_nic) if on_nic else []
        if not any(s.nic == nic and s.node == event.node for s in suspects[:1]):
            switch = None
            if self.fabric is not None and event.node in self.fabric.nodes:
                links = self.fabric.nodes[event.node]
                names = [links.nic_name(i) for i in range(len(links.leaves))]
                switch = links.leaves[names.index(nic)] if nic in names else None
            direct = Suspect(
                component=ComponentKind.NIC,
                score=0.95,
                node=event.node,
                nic=nic,
                switch=switch,
                explanation=f"{nic} on {event.node}: {finding.line.split(': ', 1)[-1]}",
            )
            suspects = [direct, *suspects]
        self.correlator.add(finding, event.ts, job=job_id, suspects=suspects)
