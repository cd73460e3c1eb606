"""The recovery bench's rig: a trainer stand-in on chdb and the action engine on a bus.

A `Rig` is one embedded pipeline run: a chdb store, a `Trainer` that logs steps (and
Megatron checkpoint lines) to it, the engine with Slurm drains (or an in-memory ledger), a
warm-standby pool and a launcher that restarts the trainer from its last checkpoint, all
consuming incidents from an in-process bus as `trainguard act` does.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from actions.consumer import consume
from actions.engine import ActionEngine, EngineConfig
from actions.executors.scheduler import SchedulerCapacity
from actions.executors.slurm import Slurm, SlurmDrain
from actions.model import ActionKind, ActionPlan, ActionResult, Mode, Risk, done
from actions.policy import Policy
from actions.progress import TrainStepsProgress, VerifyProgress
from actions.registry import ActionRegistry, ActionRequest, make_plan
from actions.safety import BreakerLimits
from actions.store import audit_events
from analytics.migrations import migrate
from analytics.store import EmbeddedStore
from diagnosis.incidents import Incident
from diagnosis.model import Action, Blame, Category, ComponentKind, Suspect
from ingest.bus import InProcessBus
from scheduler.service import Replacement
from sim.logtext import megatron_checkpoint


def _insert_row(store: EmbeddedStore, table_name: str, values: dict[str, Any]) -> None:
    """Insert one row, the columns not given at their defaults (NULL, 0 or '')."""
    from analytics.tables import TABLES_BY_NAME

    table = TABLES_BY_NAME[table_name]
    types = {c.name: c.type for c in table.columns}
    row: dict[str, list[Any]] = {c.name: [None] for c in table.columns}
    row.update({k: [v] for k, v in values.items()})
    for c in table.columns:
        if row[c.name] == [None] and not c.type.startswith("Nullable"):
            row[c.name] = [0 if "Int" in c.type else ""]
    store.insert(table.name, row, types)


class Trainer:
    """A training job stand-in: logs one step every `step_s` to chdb train_steps while running.

    Every `save_every` steps it saves a checkpoint and logs Megatron-LM's line for it (rank 0,
    `logs` table); a restart resumes from the last save, so the steps since are lost.
    """

    def __init__(
        self, store: EmbeddedStore, job: str, step_s: float = 0.25, save_every: int = 40
    ) -> None:
        self.store, self.job, self.step_s, self.save_every = store, job, step_s, save_every
        self.step, self.saved, self.running = 0, 0, threading.Event()
        self.lost: list[int] = []  # steps lost at each restart
        self._lock, self._stopped = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the trainer's thread (before its store closes)."""
        self.running.clear()
        self._stopped.set()
        self._thread.join(5)

    def restart(self) -> None:
        """Stop and relaunch from the last checkpoint."""
        with self._lock:
            self.running.clear()
            self.lost.append(self.step - self.saved)
            self.step = self.saved
            self.running.set()

    def _loop(self) -> None:
        while not self._stopped.wait(self.step_s):
            with self._lock:
                if not self.running.is_set():
                    continue
                self.step += 1
                now = datetime.now(UTC)
                at = {"ts": int(now.timestamp()), "ts_us": now.microsecond, "job_id": self.job}
                _insert_row(
                    self.store,
                    "train_steps",
                    {**at, "step": self.step, "rank": 0, "node": "node-0001", "skipped": 0},
                )
                if self.save_every and self.step % self.save_every == 0:
                    self.saved = self.step
                    (line,) = megatron_checkpoint(self.step, self.job, 8, 1)[1:]
                    _insert_row(
                        self.store,
                        "logs",
                        {**at, "node": "node-0001", "source": "train_stdout", "line": line},
                    )


class NodeLedger:
    """Isolation when no Slurm is running: a set of drained node names."""

    name, kind, risk = "ledger", ActionKind.ISOLATE_NODE, Risk.HIGH

    def __init__(self) -> None:
        self.drained: set[str] = set()

    def plan(self, request: ActionRequest) -> ActionPlan:
        return make_plan(self, request, f"drain {request.target.node}", node=request.target.node)

    def execute(self, plan: ActionPlan) -> ActionResult:
        self.drained.add(plan.params["node"])
        return done("drained")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


class TrainerRestart:
    """Restart the trainer from its checkpoint (stop, relaunch)."""

    name, kind, risk = "launcher", ActionKind.RESTART_JOB, Risk.HIGH

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def plan(self, request: ActionRequest) -> ActionPlan:
        return make_plan(self, request, f"relaunch {request.target.job}", job=request.target.job)

    def execute(self, plan: ActionPlan) -> ActionResult:
        self.trainer.restart()
        return done("relaunched")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


class Standby:
    """A warm-standby pool."""

    def request_replacement(self, job_id: str, failed_node: str, gpus: int) -> Replacement:
        return Replacement(
            job_id=job_id, failed_node=failed_node, node="standby-0001", source="standby", gpus=gpus
        )

    def reclaim(self, node: str) -> list[str]:
        return []


def make_incident(
    n: int, node: str, job: str, category: Category = Category.GPU_HARDWARE
) -> Incident:
    now = datetime.now(UTC)
    return Incident(
        id=f"inc-bench-{n:06d}-{int(now.timestamp())}-{category.value}",
        category=category,
        blame=Blame.INFRASTRUCTURE,
        job=job,
        detected_at=now,
        suspects=[
            Suspect(component=ComponentKind.GPU, score=0.9, node=node, gpu=3, explanation="Xid 79")
        ],
        summary=f"gpu.hardware on {node} GPU 3",
        action=Action.ISOLATE_NODE,
    )


def audit_time(row: Any) -> float:
    """Return an audit row's time in epoch seconds (its columns are unsigned: never subtract)."""
    return int(row["at"]) + int(row["at_us"]) / 1e6


class Rig:
    """One run: store, trainer and engine (register more executors before `start`)."""

    def __init__(
        self,
        name: str,
        tmp: str,
        slurm: Slurm | None,
        node: str,
        policy: Policy,
    ) -> None:
        self.store = EmbeddedStore(str(Path(tmp) / name), f"bench_{name}")
        migrate(self.store)
        self.trainer = Trainer(self.store, "job-bench")
        self.trainer.running.set()
        self.slurm, self.node = slurm, node
        registry = ActionRegistry(
            [
                SlurmDrain(slurm) if slurm else NodeLedger(),
                SchedulerCapacity(Standby()),
                TrainerRestart(self.trainer),
                VerifyProgress(TrainStepsProgress(self.store)),
            ]
        )
        config = EngineConfig(mode=Mode.AUTO, breaker=BreakerLimits(fleet_nodes=1200))
        self.engine = ActionEngine(self.store, registry, policy, config)
        self.bus = InProcessBus()
        self.bus.consumer("act", [self.bus.topics.incidents]).close()
        self.stop = threading.Event()
        self.worker: threading.Thread | None = None

    def start(self, recheck_s: float = 10.0) -> None:
        """Start consuming incidents (waiting steps re-checked every `recheck_s`)."""
        consumer = self.bus.consumer("act", [self.bus.topics.incidents])
        args = (self.engine, consumer, self.stop, 0.05, recheck_s)
        self.worker = threading.Thread(target=consume, args=args, daemon=True)
        self.worker.start()

    def sleep_into_interval(self, seed: list[int]) -> None:
        """Let the job run 1 s plus a random part of one checkpoint interval."""
        rng = np.random.default_rng(seed)
        time.sleep(1.0 + rng.uniform(0, self.trainer.save_every * self.trainer.step_s))

    def send(self, incident: Incident) -> float:
        """Publish an incident; return the monotonic time it went out."""
        t0 = time.monotonic()
        self.bus.producer().send_raw(
            self.bus.topics.incidents, incident.id.encode(), incident.model_dump_json().encode()
        )
        return t0

    def events(self, incident_id: str) -> pd.DataFrame:
        """Return the incident's audit rows."""
        return audit_events(self.store, incident_id=incident_id)

    def wait_closed(self, incident_id: str, t0: float, limit_s: float = 120.0) -> None:
        """Wait (from `t0`, at most `limit_s`) until the engine closed the incident."""
        while time.monotonic() - t0 < limit_s:
            if (self.events(incident_id)["event"] == "closed").any():
                return
            time.sleep(0.02)

    def close(self) -> None:
        """Stop the engine and the trainer, put the node back, close the store."""
        self.stop.set()
        if self.worker is not None:
            self.worker.join(10)
        self.trainer.stop()
        if self.slurm:
            self.slurm.resume(self.node)
        self.store.close()
