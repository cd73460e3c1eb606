"""Progress verification: a restarted job must log new training steps (the `verify` phase).

The step waits on the world (phases.WAITING_KINDS): each check is one query, and a job still
loading its checkpoint leaves the step `waiting`, checked again every `TG_ACT_RECHECK_S`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed, waiting
from actions.registry import ActionRequest, make_plan
from analytics.store import Store, StoreError
from analytics.tables import cluster_filter


class ProgressProbe(Protocol):
    """How many distinct training steps a job logged since a time."""

    def steps_since(self, job: str, since: datetime, cluster: str) -> int:
        """Return distinct steps of `job` (of `cluster`) with a timestamp at or after `since`."""


class TrainStepsProgress:
    """Progress read from the `train_steps` table in ClickHouse."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def steps_since(self, job: str, since: datetime, cluster: str) -> int:
        in_cluster, params = cluster_filter(cluster)  # the default cluster is stored as ''
        frame = self.store.query_df(
            f"SELECT uniqExact(step) FROM `{self.store.database}`.`train_steps` "
            f"WHERE job_id = %(job)s AND {in_cluster} "
            f"AND (ts > %(s)s OR (ts = %(s)s AND ts_us >= %(us)s))",
            {"job": job, "s": int(since.timestamp()), "us": since.microsecond, **params},
        )
        return 0 if frame.empty else int(str(frame.iloc[0, 0]))


class VerifyProgress:
    """Pass once the restarted job logged `min_steps` new steps after the step began; fail
    at the phase timeout. A waiting step (actions.registry.Waiter): a job that takes minutes
    to load its checkpoint never holds up the engine's other incidents."""

    name = "progress"
    kind = ActionKind.VERIFY_PROGRESS
    risk = Risk.LOW

    def __init__(
        self,
        probe: ProgressProbe,
        min_steps: int = 2,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.probe, self.min_steps = probe, min_steps
        self.clock = clock or (lambda: datetime.now(UTC))

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        what = f"wait for {self.min_steps} new training steps of {job or '?'}"
        return make_plan(self, request, what, job=job)

    def execute(self, plan: ActionPlan) -> ActionResult:
        return self.check(plan, self.clock())

    def check(self, plan: ActionPlan, began: datetime) -> ActionResult:
        job = plan.params["job"]
        if not job:
            return failed("no job to verify")
        timeout = float(plan.params.get("timeout_s", 600))
        waited = (self.clock() - began).total_seconds()
        try:
            # only steps of the restarted run count; job names are unique within a cluster
            seen = self.probe.steps_since(job, began, plan.cluster)
        except StoreError as exc:  # ClickHouse away: check again later, within the timeout
            if waited >= timeout:
                return failed(f"progress of job {job} unknown at the timeout: {exc}")
            return waiting(f"cannot read job {job}'s steps yet: {exc}")
        if seen >= self.min_steps:
            return done(f"{seen} new step(s) since {began.isoformat()}", steps=seen)
        if waited >= timeout:
            return failed(f"only {seen} new step(s) of job {job} in {timeout:.0f} s")
        return waiting(f"{seen} of {self.min_steps} new step(s) of job {job} so far")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # verifying again is harmless
