"""What a diagnosis worker takes back from the store before it reads its first record.

The latest topology of every job heard from recently, the correlator's open incidents (saved
with every stored revision) and their latest statuses; per restored job, its last steps and
collectives, shown to the detectors again so their baselines come back; and the NIC ports'
last states, so a port that goes down right after the takeover is seen going down. Reads
only: the worker decides what to do when the store cannot be read (retry, then go on without).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from analytics.queries import recent_topologies
from analytics.readback import Reread, port_states, recent_collectives, recent_job_steps
from analytics.store import Store, StoreError
from diagnosis.clusters import ClusterEngines
from diagnosis.engine import DiagnosisEngine, PortKey
from diagnosis.incident_store import latest_statuses, load_states
from diagnosis.incidents import OpenState
from diagnosis.lifecycle import is_final
from diagnosis.model import IncidentStatus
from ingest.schema import JobTopology, PortSeen

log = logging.getLogger(__name__)
WARM_STEPS = 60  # a restored job's detectors see its last steps again: warm-up, baseline, window
WARM_COLLECTIVES = timedelta(seconds=30)  # ... and its collectives this far before its last step
PORT_MARGIN = timedelta(seconds=30)  # ports' states are taken this far before the first re-read
PORT_LOOKBACK = timedelta(minutes=15)  # ... from samples at most this old

Keep = Callable[[list[JobTopology], list[OpenState]], tuple[list[JobTopology], list[OpenState]]]
"""Narrows what was read to what this worker owns (a scale-out member: its route keys)."""


@dataclass(frozen=True)
class Snapshot:
    """Jobs and open incidents as the store has them."""

    topologies: list[JobTopology]
    states: list[OpenState]
    statuses: dict[str, tuple[IncidentStatus, str]]  # incident id -> (status, reason)


def read_snapshot(store: Store, topologies_s: float, incidents_s: float, keep: Keep) -> Snapshot:
    """Read the jobs heard from within `topologies_s` and the incidents with evidence within
    `incidents_s`, narrowed by `keep`, with the statuses of those incidents (StoreError)."""
    topologies = recent_topologies(store, topologies_s)
    states = load_states(store, incidents_s)
    topologies, states = keep(topologies, states)
    return Snapshot(topologies, states, latest_statuses(store, [s.id for s in states]))


def warm_job(
    store: Store, engine: DiagnosisEngine, job_id: str, resume: datetime | Reread | None
) -> None:
    """Show a restored job's detectors its steps and collectives stored before `resume`
    (StoreError when the store cannot be read).

    `resume` is where the worker reads again: the bus positions of its partitions (exact: what
    is stored before them, and nothing after), or else the earliest event time it re-reads.
    """
    cluster = engine.cluster
    steps = recent_job_steps(store, job_id, WARM_STEPS, resume, cluster)
    collectives = []
    if steps:
        since = steps[-1].ts - WARM_COLLECTIVES
        window = engine.jobs[job_id].recent.maxlen or 0
        collectives = recent_collectives(store, job_id, since, window, resume, cluster)
    engine.warm(job_id, [*steps, *collectives])
    if steps:
        log.info(
            "job %s: detectors shown its last %d steps (up to step %d) and %d collectives",
            job_id,
            len(steps),
            steps[-1].step,
            len(collectives),
        )


def last_port_states(
    store: Store, nodes: Collection[str], resume: datetime | None
) -> dict[str, dict[PortKey, PortSeen]]:
    """Return, per cluster, each NIC port of `nodes` as last sampled `PORT_MARGIN`
    before `resume`, the earliest event time the worker reads again (None: the newest
    states); StoreError.

    Why a margin: the partitions a worker reads again do not all start at `resume` (a scale-out
    member's node evidence comes through the route stage, whose positions the store does not
    know), and a state taken after the first sample read again hides the change it makes: a
    port restored as DOWN is never seen going down. A state taken earlier is safe: a port that
    went down inside the margin is seen going down again when its next sample is read, and
    that finding joins the incident opened the first time (restored with the open incidents).
    """
    before = None if resume is None else resume - PORT_MARGIN
    return port_states(store, nodes, before, PORT_LOOKBACK)


def warm_ports(
    store: Store, engines: ClusterEngines, jobs: list[JobTopology], resume: datetime | None
) -> int:
    """Give each cluster's engine the last states of the ports on the restored jobs' nodes
    (where a port going down is a job's incident); return how many (StoreError)."""
    nodes = {r.node for topology in jobs for r in topology.ranks}
    count = 0
    for cluster, states in last_port_states(store, nodes, resume).items():
        engines.get(cluster).restore_ports(states)
        count += len(states)
    return count


@dataclass(frozen=True)
class Restored:
    """What a restore took back, for the worker's stats and log."""

    jobs: int
    incidents: int
    closed: set[str]
    ports: int
    store_errors: int  # parts left out because the store failed mid-way (logged)


def apply_snapshot(
    store: Store,
    snap: Snapshot,
    engines: ClusterEngines,
    resume: datetime | None,
    reread: Reread | None,
) -> Restored:
    """Give the engines back the snapshot's jobs (their detectors shown what is stored before
    `reread`, else `resume`), the ports' last states and the open incidents.

    A job whose steps, or ports whose states, cannot be read come back without them (logged):
    the rest of the restore is worth more than waiting.
    """
    errors = 0
    for topology in snap.topologies:
        engine = engines.restore_topology(topology)
        try:
            warm_job(store, engine, topology.job_id, reread or resume)
        except StoreError as exc:
            errors += 1
            log.warning("job %s restored without its recent steps: %s", topology.job_id, exc)
    ports = 0
    try:
        ports = warm_ports(store, engines, snap.topologies, resume)
    except StoreError as exc:
        errors += 1
        log.warning("NIC ports restored without their last states: %s", exc)
    closed = {i for i, (status, _reason) in snap.statuses.items() if is_final(status)}
    engines.restore_states(snap.states, closed)
    return Restored(len(snap.topologies), len(snap.states), closed, ports, errors)
