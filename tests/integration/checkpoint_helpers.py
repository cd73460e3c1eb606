"""Builders for the checkpoint-drain tests: a job's stored telemetry, risk rows, an engine."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pandas as pd

from actions import store as db
from actions.checkpoint import AwaitCheckpoint, LogCheckpoints
from actions.engine import ActionEngine, EngineConfig
from actions.model import ActionKind, Mode, State
from actions.policy import load_policy
from actions.safety import BreakerLimits
from analytics.writer import ClickHouseWriter
from diagnosis.incident_store import (
    IncidentFilter,
    all_incidents,
    record_transition,
    save_incidents,
)
from diagnosis.lifecycle import Transition
from diagnosis.model import Category, IncidentStatus
from ingest.bus import Record
from ingest.schema import (
    CommKind,
    Communicator,
    EventBase,
    JobTopology,
    LogLine,
    LogSource,
    ParallelLayout,
    RankPlacement,
    TrainStep,
)
from prediction.alerts import predicted_incidents
from tests.integration.actions_helpers import slurm_registry

_OFFSETS = itertools.count(1)
SAVED = "  successfully saved checkpoint from iteration    1200 to /ckpt/{job} [ t 1/8, p 1/1 ]"


class Clock:
    """The checkpoint step's clock, moved forward by a test (the engine's stays real)."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


def store_events(store, events: list[EventBase]) -> None:
    """Write events as the sink does (one offset each, so nothing is taken for a replay)."""
    records = [(Record("it.events", 0, next(_OFFSETS), None, b"", 0), e) for e in events]
    ClickHouseWriter(store).write(records, [])


def running_job(store, job: str, nodes: list[str], at: datetime) -> None:
    """Store a job's topology over `nodes` and a step it logged at `at`."""
    ranks = [
        RankPlacement(rank=i * 8 + g, node=n, gpu=g) for i, n in enumerate(nodes) for g in range(8)
    ]
    world = len(ranks)
    topo = JobTopology(
        job_id=job,
        ts=at - timedelta(hours=1),
        world_size=world,
        layout=ParallelLayout(tp=8, pp=1, dp=len(nodes)),
        ranks=ranks,
        communicators=[Communicator(comm="world", kind=CommKind.WORLD, ranks=list(range(world)))],
        scheduler="slurm",
    )
    step = TrainStep(job_id=job, step=1199, ts=at, step_time_s=2.0, loss=2.0)
    store_events(store, [topo, step])


def log(store, node: str, line: str, at: datetime, job: str | None = None) -> None:
    """Store one training-log line read on `node` (no job id: as the log agent reads it)."""
    store_events(
        store,
        [
            LogLine(
                node=node,
                ts=at,
                source=LogSource.TRAIN_STDOUT,
                line=line,
                path="/var/log/train/stdout.log",
                seq=next(_OFFSETS),
                job_id=job,
            )
        ],
    )


def saved_soon(store, job: str, with_id: bool = False) -> None:
    """Store the job's finished save a second from now, on rank 0's node (node-0079)."""
    at = datetime.now(UTC) + timedelta(seconds=1)
    log(store, "node-0079", SAVED.format(job=job), at, job=job if with_id else None)


def risk_rows(
    node: str, gpu: int, at: datetime, risk: float = 0.97, alert: int = 1
) -> pd.DataFrame:
    """Return one GPU's row as `predict score` writes it to gpu_risk."""
    return pd.DataFrame(
        {
            "ts": [int(at.timestamp())],
            "node": [node],
            "gpu": [gpu],
            "uuid": [f"GPU-{node}-{gpu}"],
            "horizon_h": [24],
            "risk": [risk],
            "alert": [alert],
            "model": ["vote"],
            "reason": ["sbe_growth_24h=41, remap_pending=1"],
        }
    )


def engine(
    store,
    slurm,
    clock: Clock | None = None,
    ttl_s: float = 3600.0,
    mode: Mode = Mode.AUTO,
    probe=None,
) -> ActionEngine:
    """Return the default policy's engine over Slurm, waiting on `probe` (default: the logs)."""
    registry = slurm_registry(slurm)
    registry.register(AwaitCheckpoint(probe or LogCheckpoints(store), clock=clock))
    config = EngineConfig(mode=mode, breaker=BreakerLimits(fleet_nodes=1000), incident_ttl_s=ttl_s)
    return ActionEngine(store, registry, load_policy(), config)


def ladder_states(store, incident_id: str) -> dict[ActionKind, State]:
    return {a.plan.kind: a.state for a in db.load_actions(store, incident_id=incident_id)}


def predicted_incident(store, node: str, gpu: int, job: str | None):
    now = datetime.now(UTC)
    if job is not None:
        running_job(store, job, [node, "node-0079"], now - timedelta(seconds=30))
    incidents, skipped = predicted_incidents(store, risk_rows(node, gpu, now), now)
    assert skipped == 0 and len(incidents) == 1
    save_incidents(store, incidents)
    return incidents[0]


def mine(store, node: str):
    """Return the gpu.predicted incidents blaming a node."""
    found = all_incidents(store, IncidentFilter(category=Category.GPU_PREDICTED.value))
    return [i for i in found if i.suspects and i.suspects[0].node == node]


class Flaky:
    """The ClickHouse probe, except that its first `fails` checks raise (a driver bug, a hang)."""

    def __init__(self, inner: LogCheckpoints, fails: int) -> None:
        self.inner, self.fails = inner, fails

    def saved_since(self, job: str, since: datetime):
        if self.fails:
            self.fails -= 1
            raise RuntimeError("connection reset mid-query")
        return self.inner.saved_since(job, since)


def set_status(store, incident_id: str, status: IncidentStatus, reason: str, at: datetime) -> None:
    """Record a person's (or the engine's) status change of an incident."""
    record_transition(
        store,
        Transition(incident_id=incident_id, status=status, reason=reason, actor="oncall", at=at),
    )
