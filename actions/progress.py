"""Progress verification: a restarted job must log new training steps (the `verify` phase)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed
from actions.registry import ActionRequest, make_plan
from analytics.store import Store


class ProgressProbe(Protocol):
    """How many distinct training steps a job logged since a time."""

    def steps_since(self, job: str, since: datetime) -> int:
        """Return distinct steps of `job` with a timestamp at or after `since`."""


class TrainStepsProgress:
    """Progress read from the `train_steps` table in ClickHouse."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def steps_since(self, job: str, since: datetime) -> int:
        frame = self.store.query_df(
            f"SELECT uniqExact(step) FROM `{self.store.database}`.`train_steps` "
            f"WHERE job_id = %(job)s AND (ts > %(s)s OR (ts = %(s)s AND ts_us >= %(us)s))",
            {"job": job, "s": int(since.timestamp()), "us": since.microsecond},
        )
        return 0 if frame.empty else int(str(frame.iloc[0, 0]))


class VerifyProgress:
    """Pass when the restarted job logs `min_steps` new steps before the phase timeout."""

    name = "progress"
    kind = ActionKind.VERIFY_PROGRESS
    risk = Risk.LOW

    def __init__(
        self,
        probe: ProgressProbe,
        min_steps: int = 2,
        poll_s: float = 1.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.probe, self.min_steps, self.poll_s = probe, min_steps, poll_s
        self.clock = clock or (lambda: datetime.now(UTC))

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        what = f"wait for {self.min_steps} new training steps of {job or '?'}"
        return make_plan(self, request, what, job=job)

    def execute(self, plan: ActionPlan) -> ActionResult:
        if not plan.params["job"]:
            return failed("no job to verify")
        since = self.clock()  # only steps of the restarted run count
        deadline = time.monotonic() + float(plan.params.get("timeout_s", 600)) * 0.95
        while True:
            seen = self.probe.steps_since(plan.params["job"], since)
            if seen >= self.min_steps:
                return done(f"{seen} new step(s) since {since.isoformat()}", steps=seen)
            if time.monotonic() >= deadline:
                return failed(f"only {seen} new step(s) before the phase timed out")
            time.sleep(self.poll_s)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # verifying again is harmless
