"""Incidents: one root cause, its suspects and the findings that follow from it.

The `Correlator` reads findings in time order. Each finding has a root-cause key (a GPU, a
node's host resources, a job's application, its network, hang or slowdown); findings with
the key of an open incident seen within the window attach to it as evidence. Sympathetic
errors attach to the incident that explains them instead of opening their own: peers of a
failed GPU report broken NCCL connections, remote errors and watchdog timeouts, the failed
rank's CUDA traceback follows its Xid, and Xid 45 follows another Xid. Application Xids
(13/31) and tracebacks on many ranks of a job share one application incident.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from diagnosis.model import (
    Action,
    Blame,
    Category,
    ComponentKind,
    Finding,
    IncidentStatus,
    Severity,
    Suspect,
)
from ingest.schema import DEFAULT_CLUSTER

WINDOW = timedelta(minutes=5)
MAX_EVIDENCE = 50
MAX_SUSPECTS = 5
DEGRADED_REPEATS = 3  # degraded-but-working warnings on one component before an incident
XID_CLEANUP = 45  # preemptive cleanup: the driver's echo of an earlier Xid

_HARDWARE = frozenset(
    {
        Category.GPU_HARDWARE,
        Category.GPU_DEGRADED,
        Category.HOST_HARDWARE,
        Category.HOST_MEMORY,
        Category.HOST_STORAGE,
    }
)
# What a job's ranks print when something else broke: never a root cause while one is open.
_SYMPATHETIC_RULES = frozenset(
    {
        "nccl.connection_closed",
        "nccl.remote_error",
        "nccl.system_error",
        "nccl.warn",
        "hang.watchdog_timeout",
        "hang.watchdog_stuck",
        "elastic.child_failed",
        "host.killed",
    }
)
# Merge rule for late consequences (docs/diagnosis.md): a consequence finding of a job (a
# sympathetic rule above, any elastic.* launcher report, or a hang-category finding such as
# the watchdog's timeout) joins the job's latest open incident whose root stops progress (a
# hang, a network or a hardware fault) when it comes within CONSEQUENCE_BOUND of that
# incident's detection and the job has reported no training step since: the watchdog fires
# 10-60 min after a stall, far past WINDOW, and nothing new can have broken a job that is
# still stuck on the first fault. A step in between ends the causal chain.
CONSEQUENCE_BOUND = timedelta(hours=2)
_STALLING_ROOTS = _HARDWARE | {Category.HANG, Category.NETWORK}
_IGNORED = frozenset({Category.BENIGN})
Key = tuple[str, ...]


class Incident(BaseModel):
    """One root cause: who is to blame, the ranked suspects and the evidence."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Deterministic id from the root-cause key and when it began.")
    cluster: str = Field(
        DEFAULT_CLUSTER, description="Cluster of the affected nodes and job (names repeat across)."
    )
    category: Category
    blame: Blame
    job: str | None = Field(None, description="Training job affected, where known.")
    detected_at: AwareDatetime = Field(description="When the root finding was seen (telemetry).")
    suspects: list[Suspect] = Field(default_factory=list, description="Ranked, best first.")
    summary: str = Field(description="One line an on-call engineer reads first.")
    action: Action = Field(description="Recommended next step.")
    evidence: list[str] = Field(default_factory=list, description="Finding lines, capped.")
    severity: Severity = Field(Severity.ERROR, description="Severity of the root finding.")
    updated_at: AwareDatetime | None = Field(None, description="Last evidence seen (telemetry).")
    findings: int = Field(1, ge=1, description="Findings attached, the root included.")
    revision: int = Field(1, ge=1, description="Grows with each update; readers keep the highest.")
    status: IncidentStatus = Field(IncidentStatus.OPEN, description="Lifecycle state.")
    status_reason: str | None = Field(None, description="Why the status last changed.")


@dataclass
class _Open:
    """An incident being built."""

    key: Key
    id: str
    root: Finding
    cluster: str
    job: str | None
    detected_at: datetime
    last_seen: datetime
    suspects: list[Suspect]
    evidence: list[str] = field(default_factory=list)
    related: int = 0
    revision: int = 0
    ranks: set[int] = field(default_factory=set)
    gpus: set[tuple[str, int]] = field(default_factory=set)

    def attach(self, finding: Finding, at: datetime) -> None:
        """Add one finding as evidence."""
        self.last_seen = max(self.last_seen, at)
        self.related += 1
        self.revision += 1
        if finding.rank is not None:
            self.ranks.add(finding.rank)
        if finding.node is not None and finding.gpu is not None:
            self.gpus.add((finding.node, finding.gpu))
        if len(self.evidence) < MAX_EVIDENCE and finding.line not in self.evidence:
            self.evidence.append(finding.line)


class OpenState(BaseModel):
    """What the correlator needs to go on with an incident after a restart (stored with it)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    cluster: str = DEFAULT_CLUSTER
    key: list[str]
    root: Finding
    job: str | None
    detected_at: AwareDatetime
    last_seen: AwareDatetime
    suspects: list[Suspect]
    evidence: list[str]
    related: int
    revision: int
    ranks: list[int]
    gpus: list[tuple[str, int]]


def root_key(finding: Finding, job: str | None) -> Key:
    """Return the root-cause key a finding belongs to."""
    cat = finding.category
    node = finding.node or "?"
    if cat in (Category.GPU_HARDWARE, Category.GPU_DEGRADED) or (
        cat == Category.NUMERICAL and finding.component == ComponentKind.GPU
    ):
        if finding.gpu is not None:
            return ("gpu", node, str(finding.gpu))
        return ("gpu", node, finding.pci_bus_id or "?")
    if cat in (Category.HOST_HARDWARE, Category.HOST_MEMORY, Category.HOST_STORAGE):
        return ("host", node)
    scope = ("job", job) if job else ("node", node)
    if cat in (Category.APPLICATION, Category.GPU_APPLICATION, Category.GPU_OOM):
        return ("application", *scope)
    if cat == Category.NETWORK:
        return ("network", *scope)
    return (cat.value, *scope)


class Correlator:
    """Turn a time-ordered stream of findings into incidents, one per root cause."""

    def __init__(self, window: timedelta = WINDOW, cluster: str = DEFAULT_CLUSTER) -> None:
        self.window = window
        self.cluster = cluster  # every key is within it: its incidents' ids include it
        self._all: list[_Open] = []
        self._by_key: dict[Key, _Open] = {}
        self._watch: dict[Key, list[datetime]] = {}
        self._dirty: dict[int, _Open] = {}
        self._closed: set[str] = set()
        self._by_id: dict[str, _Open] = {}
        self._progress: dict[str, datetime] = {}  # job -> its latest training step

    def add(
        self,
        finding: Finding,
        at: datetime,
        job: str | None = None,
        suspects: list[Suspect] | None = None,
    ) -> Key | None:
        """Take one finding seen at `at`; return the key of the incident it went to."""
        if finding.category in _IGNORED:
            return None
        cause = self._explaining(finding, at, job)
        if cause is not None:
            if not self._is_closed(cause):  # a closed one still explains its consequences
                self._touch(cause).attach(finding, at)
            return cause.key
        key = root_key(finding, job)
        refined = self._refine_numerical(finding, key, at, job)
        if refined is not None:
            return refined
        if finding.category == Category.UNKNOWN and not suspects:
            return None  # an unexplained line is evidence at most, never a root cause alone
        if self._below_threshold(finding, key, at):
            return None
        known = self._by_key.get(key)
        if known is not None and at - known.last_seen <= self.window and not self._is_closed(known):
            self._touch(known).attach(finding, at)
            if suspects and not known.suspects:
                known.suspects = suspects[:MAX_SUSPECTS]
            self._promote(known, finding)
            return key
        opened = _Open(
            key=key,
            id=incident_id(key, at, self.cluster),
            root=finding,
            cluster=self.cluster,
            job=job,
            detected_at=at,
            last_seen=at,
            suspects=(suspects or _own_suspects(finding, key))[:MAX_SUSPECTS],
        )
        self._touch(opened).attach(finding, at)
        self._by_key[key] = opened
        self._by_id[opened.id] = opened
        self._all.append(opened)
        return key

    def _refine_numerical(
        self, finding: Finding, key: Key, at: datetime, job: str | None
    ) -> Key | None:
        """Re-root a job's NaN incident on the GPU that per-rank grad norms show went first.

        The job-level NaN is seen a step before the per-rank evidence can be judged; it is the
        same fault, so the incident keeps its id and now blames that GPU.
        """
        if finding.category != Category.NUMERICAL or key[0] != "gpu" or job is None:
            return None
        job_level = self._by_key.get(("numerical", "job", job))
        if job_level is None or at - job_level.last_seen > self.window:
            return None
        if self._is_closed(job_level):
            return None
        self._touch(job_level).attach(finding, at)
        job_level.root = finding
        job_level.suspects = _own_suspects(finding, key)[:MAX_SUSPECTS]
        return job_level.key

    def _below_threshold(self, finding: Finding, key: Key, at: datetime) -> bool:
        """Whether a degraded-but-working warning (e.g. one Xid 63 row remap) stays a watch item.

        A single remap or correctable event is normal wear and must not page anyone; the same
        component warning DEGRADED_REPEATS times within the window becomes an incident.
        """
        if finding.category != Category.GPU_DEGRADED or finding.severity != Severity.WARNING:
            return False
        if key in self._by_key and at - self._by_key[key].last_seen <= self.window:
            return False  # already an incident: attach as usual
        seen = [t for t in self._watch.get(key, []) if at - t <= self.window] + [at]
        self._watch[key] = seen
        return len(seen) < DEGRADED_REPEATS

    def progress(self, job: str, at: datetime) -> None:
        """Note a training step of `job` at `at`: later findings are no longer late consequences
        of what stalled it before (see CONSEQUENCE_BOUND)."""
        if job not in self._progress or at > self._progress[job]:
            self._progress[job] = at

    def set_suspects(self, key: Key, suspects: list[Suspect]) -> None:
        """Replace the suspects of the latest incident with this key (a later localization)."""
        known = self._by_key.get(key)
        if known is not None and suspects:
            known.suspects = suspects[:MAX_SUSPECTS]
            self._touch(known).revision += 1

    def has_open(self, key: Key, at: datetime) -> bool:
        """Return whether an incident with this key was seen within the window before `at`."""
        known = self._by_key.get(key)
        return (
            known is not None and at - known.last_seen <= self.window and not self._is_closed(known)
        )

    def close(self, incident_id: str) -> None:
        """Stop attaching to an incident (resolved or a false alarm): a recurrence is new.

        Sympathetic errors it explains (peers' NCCL errors after a GPU failed) are still
        absorbed by it, unattached, instead of opening incidents of their own.
        """
        self._closed.add(incident_id)

    def states(self, ids: Iterable[str]) -> list[OpenState]:
        """Return what a restarted correlator needs to go on with these incidents."""
        return [_state(self._by_id[i]) for i in ids if i in self._by_id]

    def restore(self, states: Iterable[OpenState], closed: Iterable[str] = ()) -> None:
        """Take back incidents a previous correlator saved (oldest first); none is re-published.

        Each key's latest incident is the one later findings attach to, within the window of
        its last evidence; `closed` ones (resolved, false alarm) still absorb their sympathetic
        consequences but are never revived.
        """
        self._closed.update(closed)
        for st in sorted(states, key=lambda s: s.detected_at):
            if st.id in self._by_id:
                continue
            restored = _Open(
                key=tuple(st.key),
                id=st.id,
                root=st.root,
                cluster=st.cluster,
                job=st.job,
                detected_at=st.detected_at,
                last_seen=st.last_seen,
                suspects=list(st.suspects),
                evidence=list(st.evidence),
                related=st.related,
                revision=st.revision,
                ranks=set(st.ranks),
                gpus=set(st.gpus),
            )
            known = self._by_key.get(restored.key)
            if known is None or known.detected_at <= restored.detected_at:
                self._by_key[restored.key] = restored
            self._by_id[st.id] = restored
            self._all.append(restored)
        self._all.sort(key=lambda o: o.detected_at)

    def incidents(self) -> list[Incident]:
        """Return every incident, in detection order."""
        return [_incident(o) for o in self._all]

    def drain_updates(self) -> list[Incident]:
        """Return the incidents opened or changed since the last call, in detection order."""
        changed = sorted(self._dirty.values(), key=lambda o: o.detected_at)
        self._dirty.clear()
        return [_incident(o) for o in changed]

    def _touch(self, o: _Open) -> _Open:
        self._dirty[id(o)] = o
        return o

    def _is_closed(self, o: _Open) -> bool:
        return o.id in self._closed

    def _explaining(self, finding: Finding, at: datetime, job: str | None) -> _Open | None:
        """Return the open incident that explains a sympathetic finding, if any."""
        recent = [o for o in reversed(self._all) if at - o.last_seen <= self.window]
        if finding.xid == XID_CLEANUP:
            for o in recent:
                if o.root.xid is not None and o.root.node == finding.node:
                    return o
        if finding.category in _HARDWARE:
            return None
        if job is not None:
            for o in recent:
                if o.job == job and o.root.category in _HARDWARE:
                    return o  # a job's errors after its hardware broke are the hardware's
        if not _is_consequence(finding):
            return None
        for o in recent:
            if job is not None and o.job == job and o.root.category != Category.STRAGGLER:
                return o
        return self._stalled_by(job, at)

    def _stalled_by(self, job: str | None, at: datetime) -> _Open | None:
        """Return the open incident that has kept `job` from stepping since it was detected."""
        if job is None:
            return None
        last_step = self._progress.get(job)
        for o in reversed(self._all):
            if at - o.detected_at > CONSEQUENCE_BOUND:
                break  # _all is in detection order
            if o.job != job or o.root.category not in _STALLING_ROOTS:
                continue
            if last_step is None or last_step <= o.detected_at:
                return o
        return None

    def _promote(self, known: _Open, finding: Finding) -> None:  # caller touched `known`
        """Keep the most specific finding as the root (an Xid beats an NVML error)."""
        if finding.xid is not None and known.root.xid is None and known.key[0] == "gpu":
            known.root = finding


def _is_consequence(finding: Finding) -> bool:
    """Whether a finding is what a job's ranks or launcher report after something else broke."""
    return (
        finding.rule in _SYMPATHETIC_RULES
        or finding.rule.startswith("elastic.")
        or finding.category == Category.HANG
    )


def _own_suspects(finding: Finding, key: Key) -> list[Suspect]:
    """Return the suspect a finding names by itself."""
    if key[0] in ("application", "hang", "straggler", "numerical") and key[1] == "job":
        return [
            Suspect(
                component=ComponentKind.JOB,
                score=finding.confidence,
                explanation=f"the job's own code: {finding.line[:200]}",
            )
        ]
    if finding.node is None:
        return []
    component = finding.component or ComponentKind.NODE
    if component == ComponentKind.JOB:
        component = ComponentKind.NODE
    return [
        Suspect(
            component=component,
            score=finding.confidence,
            node=finding.node,
            gpu=finding.gpu,
            rank=finding.rank,
            explanation=finding.line[:300],
        )
    ]


def incident_id(key: Key, detected_at: datetime, cluster: str = DEFAULT_CLUSTER) -> str:
    """Return the id of the incident with this root-cause key opened at `detected_at`.

    The episode's start is part of the id, so a recurrence of the same fault gets a new id
    even from a worker that restarted and knows nothing of the earlier one, while the same
    telemetry diagnosed again (a replay, a re-read after a restart) gives the same ids.
    The cluster is part of it too (but for the default cluster, whose ids are those from
    before clusters existed): the same node name in two clusters is two root causes.
    """
    scope = () if cluster == DEFAULT_CLUSTER else ("cluster", cluster)
    text = "\x1f".join((*scope, *key, detected_at.astimezone(UTC).isoformat()))
    return "inc-" + hashlib.sha1(text.encode()).hexdigest()[:12]


def _state(o: _Open) -> OpenState:
    return OpenState(
        id=o.id,
        cluster=o.cluster,
        key=list(o.key),
        root=o.root,
        job=o.job,
        detected_at=o.detected_at,
        last_seen=o.last_seen,
        suspects=o.suspects,
        evidence=o.evidence,
        related=o.related,
        revision=o.revision,
        ranks=sorted(o.ranks),
        gpus=sorted(o.gpus),
    )


def _where(o: _Open) -> str:
    r = o.root
    if o.key[0] == "gpu":
        gpu = r.gpu if r.gpu is not None else r.pci_bus_id
        return f"{r.node} GPU {gpu}"
    if o.key[0] == "host":
        return f"{r.node}"
    return f"job {o.job}" if o.job else f"{r.node}"


def _incident(o: _Open) -> Incident:
    r = o.root
    spread = []
    if len(o.gpus) > 1:
        spread.append(f"{len(o.gpus)} GPUs")
    if len(o.ranks) > 1:
        spread.append(f"{len(o.ranks)} ranks")
    extra = f" across {', '.join(spread)}" if spread else ""
    more = f"; {o.related - 1} related finding(s){extra}" if o.related > 1 else ""
    summary = f"{r.category.value} on {_where(o)} ({r.rule}): {r.line[:160]}{more}"
    return Incident(
        id=o.id,
        cluster=o.cluster,
        category=r.category,
        blame=r.blame,
        job=o.job,
        detected_at=o.detected_at,
        suspects=o.suspects,
        summary=summary,
        action=r.action,
        evidence=list(o.evidence),
        severity=r.severity,
        updated_at=o.last_seen,
        findings=max(1, o.related),
        revision=max(1, o.revision),
    )
