"""What a diagnosis worker takes back from the store before it reads its first record.

The latest topology of every job heard from recently, the correlator's open incidents (saved
with every stored revision) and their latest statuses; and, per restored job, its last steps
and collectives, shown to the detectors again so their baselines come back. Reads only: the
worker decides what to do when the store cannot be read (retry, then go on without).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from analytics.queries import recent_topologies
from analytics.readback import Reread, recent_collectives, recent_job_steps
from analytics.store import Store
from diagnosis.engine import DiagnosisEngine
from diagnosis.incident_store import latest_statuses, load_states
from diagnosis.incidents import OpenState
from diagnosis.model import IncidentStatus
from ingest.schema import JobTopology

log = logging.getLogger(__name__)
WARM_STEPS = 60  # a restored job's detectors see its last steps again: warm-up, baseline, window
WARM_COLLECTIVES = timedelta(seconds=30)  # ... and its collectives this far before its last step

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
