"""Builders shared by the graph and localization tests: hand-built jobs and twin runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from diagnosis.fabric import Fabric
from diagnosis.graph import CommGraph, build_comm_graph
from ingest.schema import (
    CollectiveProgress,
    CollectiveState,
    CommKind,
    Communicator,
    EventBase,
    JobTopology,
    RankPlacement,
)
from sim.scenario import parse_scenario
from sim.twin import Twin

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
JOB = "job-h"


def at(seconds: float) -> datetime:
    """Return T0 plus some seconds."""
    return T0 + timedelta(seconds=seconds)


def topology(
    placement: dict[int, tuple[str, int]], comms: dict[str, tuple[CommKind, list[int]]]
) -> JobTopology:
    """Return a topology from rank -> (node, GPU) and comm -> (kind, members)."""
    return JobTopology(
        job_id=JOB,
        ts=T0,
        world_size=len(placement),
        ranks=[RankPlacement(rank=r, node=n, gpu=g) for r, (n, g) in sorted(placement.items())],
        communicators=[Communicator(comm=c, kind=k, ranks=m) for c, (k, m) in comms.items()],
    )


def record(
    rank: int,
    comm: str,
    seq: int,
    state: str = "completed",
    start: float | None = 0.0,
    end: float | None = None,
    duration_ms: float | None = None,
    op: str = "all_reduce",
) -> CollectiveProgress:
    """Return one rank's record of one collective; times in seconds after T0."""
    done = state == "completed"
    return CollectiveProgress(
        job_id=JOB,
        rank=rank,
        comm=comm,
        op=op,
        seq=seq,
        state=CollectiveState(state),
        ts=at(end if done and end is not None else start or 0.0),
        time_created=None if start is None else at(start),
        time_started=None if start is None or state == "scheduled" else at(start),
        time_completed=at(end) if done and end is not None else None,
        duration_ms=duration_ms,
        reporter="flight_recorder",
    )


@dataclass(frozen=True)
class TwinRun:
    """One twin scenario: what it emitted, its ground truth and the job's graph."""

    events: list[EventBase]
    truth: list[dict[str, Any]]
    graph: CommGraph
    scenario_nodes: list[str]

    def progress(self, min_seq: int = 0) -> list[CollectiveProgress]:
        """Return the job's collective records from seq `min_seq` on."""
        return [
            e
            for e in self.events
            if isinstance(e, CollectiveProgress)
            and e.job_id == self.graph.job_id
            and e.seq >= min_seq
        ]


def run_twin(
    job: dict[str, Any],
    faults: list[dict[str, Any]] | None = None,
    nodes: int = 8,
    nodes_per_rack: int = 4,
    nics: int = 8,
    duration_s: float = 120,
    other_jobs: list[dict[str, Any]] | None = None,
) -> TwinRun:
    """Run (or reuse) a twin scenario and build the graph of job `job`."""
    key = json.dumps([job, faults or [], nodes, nodes_per_rack, nics, duration_s, other_jobs])
    return _run(key)


@lru_cache(maxsize=32)
def _run(key: str) -> TwinRun:
    job, faults, nodes, per_rack, nics, duration, others = json.loads(key)
    scenario = parse_scenario(
        {
            "seed": 5,
            "cluster": {
                "nodes": nodes,
                "gpus_per_node": 8,
                "nics_per_node": nics,
                "nodes_per_rack": per_rack,
            },
            "jobs": [*(others or []), {"step_time_s": 2.0, **job}],
            "duration_s": duration,
            "faults": faults,
        }
    )
    events: list[EventBase] = []
    truth = Twin(scenario, events.append).run()
    topo = next(e for e in events if isinstance(e, JobTopology) and e.job_id == job["id"])
    names = [scenario.node_name(i) for i in range(nodes)]
    fabric = Fabric.rail_optimized(names, per_rack, nics)
    return TwinRun(events, truth, build_comm_graph(topo, fabric), names)
