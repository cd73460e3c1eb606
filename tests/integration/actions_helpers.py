"""Real implementations behind the action engine's interfaces, for integration tests."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from actions import store as db
from actions.engine import ActionEngine, CrashHook, EngineConfig
from actions.executors.scheduler import SchedulerCapacity
from actions.executors.slurm import (
    Slurm,
    SlurmDrain,
    SlurmError,
    SlurmReboot,
    SlurmRequeue,
    SlurmResume,
)
from actions.model import ActionKind, ActionPlan, ActionResult, Mode, Risk, State, done
from actions.policy import Policy, load_policy
from actions.progress import ProgressProbe, VerifyProgress
from actions.registry import ActionRegistry, ActionRequest, make_plan
from actions.safety import BreakerLimits, Budgets
from analytics.store import Store
from analytics.writer import ClickHouseWriter
from ingest.bus import Record
from ingest.schema import TrainStep
from scheduler.service import Replacement


class PoolCapacity:
    """A warm-standby pool: hands out spare nodes, takes loaned nodes back."""

    def __init__(self, spares: list[str]) -> None:
        self.spares = list(spares)
        self.granted: dict[str, Replacement] = {}
        self.loans: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def request_replacement(self, job_id: str, failed_node: str, gpus: int) -> Replacement | str:
        with self._lock:
            if job_id in self.granted:
                return self.granted[job_id]  # already granted
            if not self.spares:
                return "standby pool empty"
            node = self.spares.pop(0)
            self.granted[job_id] = Replacement(
                job_id=job_id, failed_node=failed_node, node=node, source="standby", gpus=gpus
            )
            return self.granted[job_id]

    def reclaim(self, node: str) -> list[str]:
        with self._lock:
            return self.loans.pop(node, [])


class StepLog:
    """A job's training steps as the restarted job logs them (a progress probe)."""

    def __init__(self) -> None:
        self.steps: dict[str, list[tuple[int, datetime]]] = {}

    def log(self, job: str, step: int, at: datetime) -> None:
        self.steps.setdefault(job, []).append((step, at))

    def steps_since(self, job: str, since: datetime, cluster: str) -> int:
        return len({s for s, at in self.steps.get(job, []) if at >= since})


class LoggingAction:
    """An operator endpoint stand-in that records what it was asked to do."""

    name = "recorder"
    risk = Risk.LOW

    def __init__(self, kind: ActionKind) -> None:
        self.kind = kind
        self.calls: list[str] = []

    def plan(self, request: ActionRequest) -> ActionPlan:
        return make_plan(self, request, f"record {self.kind.value}")

    def execute(self, plan: ActionPlan) -> ActionResult:
        self.calls.append(plan.action_id)
        return done("recorded")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


class AlwaysProgress:
    """A probe for a job that advances as soon as it is asked."""

    def steps_since(self, job: str, since: datetime, cluster: str) -> int:
        return 10


def slurm_registry(
    slurm: Slurm, capacity: PoolCapacity | None = None, progress: ProgressProbe | None = None
) -> ActionRegistry:
    """Return Slurm + scheduler + progress executors and recorders for the rest (a job
    progresses as soon as it is asked unless `progress` says otherwise)."""
    registry = ActionRegistry(
        [
            SlurmDrain(slurm),
            SlurmRequeue(slurm),
            SlurmReboot(slurm),
            SlurmResume(slurm),
            SchedulerCapacity(capacity or PoolCapacity([f"spare-{i}" for i in range(500)])),
            VerifyProgress(progress or AlwaysProgress()),
        ]
    )
    for kind in (
        ActionKind.CAPTURE_DIAGNOSTICS,
        ActionKind.HARDWARE_INSPECTION,
        ActionKind.NOTIFY_OWNER,
        ActionKind.ROLLBACK_CHECKPOINT,
    ):
        registry.register(LoggingAction(kind))
    return registry


def engine(
    store: Store,
    slurm: Slurm,
    mode: Mode = Mode.AUTO,
    policy: Policy | None = None,
    fleet: int = 1000,
    crash_hook: CrashHook | None = None,
    budgets: Budgets | None = None,
    registry: ActionRegistry | None = None,
) -> ActionEngine:
    """Return an engine over Slurm with the default policy."""
    config = EngineConfig(
        mode=mode, breaker=BreakerLimits(fleet_nodes=fleet), budgets=budgets or Budgets()
    )
    return ActionEngine(
        store,
        registry or slurm_registry(slurm),
        policy or load_policy(),
        config,
        crash_hook=crash_hook,
    )


def cleanup_nodes(slurm: Slurm, nodes: list[str]) -> None:
    """Undo what a test did to its nodes: cancel reboots, resume TrainGuard (and test) drains."""
    for node in nodes:
        state = slurm.node(node)
        if state.flags & {"REBOOT_REQUESTED"}:
            try:
                slurm.run(["scontrol", "cancel_reboot", node])
            except SlurmError:
                # refused when slurmctld issued the reboot between the read and the cancel
                # ("Invalid node state specified"): nothing is left to cancel then
                state = slurm.node(node)
                if "REBOOT_REQUESTED" in state.flags:
                    raise
        if state.drained and (state.ours or state.reason.startswith("human:")):
            slurm.resume(node)


_OFFSETS = itertools.count()  # the writer drops rows at offsets it stored before (replays)


def log_training_steps(store: Store, job: str, steps: int = 2) -> int:
    """Store `steps` training steps of `job`, now: the restarted job trains again. Each call
    writes at new offsets, as a consumer reading on would; return the rows stored."""
    now = datetime.now(UTC)
    rows = [TrainStep(job_id=job, step=s, rank=0, node="vm", ts=now) for s in range(1, steps + 1)]
    records = [(Record("it.train", 0, next(_OFFSETS), None, b"", 0), e) for e in rows]
    return ClickHouseWriter(store).write(records, [])


def training_until(store: Store, job: str, finished: Callable[[], bool]) -> Callable[[], bool]:
    """Return a wait condition that stores two training steps of `job`, now, at each poll and
    holds once `finished()`: a restarted job trains on, and progress verification counts only
    steps stamped after it began (which, after a takeover, may be after a single write)."""

    def condition() -> bool:
        stored = log_training_steps(store, job)
        assert stored == 2, f"the writer dropped training steps of {job} ({stored} of 2 stored)"
        return finished()

    return condition


def action_state(store: Store, incident_id: str, kind: ActionKind) -> State | None:
    """Return the state of the incident's step of this kind (None: not planned)."""
    found = [a for a in db.load_actions(store, incident_id=incident_id) if a.plan.kind == kind]
    return found[0].state if found else None


def ladder_ended(store: Store, incident_id: str) -> bool:
    """Whether the incident's ladder reached its last step's end (the node's reboot)."""
    ended = (State.DONE, State.FAILED, State.SKIPPED)
    return action_state(store, incident_id, ActionKind.REBOOT_NODE) in ended
