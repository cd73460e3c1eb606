"""Wait for a job's next checkpoint before disturbing it (a drain of a GPU predicted to fail).

A GPU drained mid-interval costs the job every step since its last checkpoint; drained right
after a save it costs only the restart. `await_checkpoint` passes when the job logs a
finished save (ingest/readers/checkpoint_log.py) after the step was planned. It never blocks
the engine: each check is one query, and a save not seen yet leaves the step `waiting`, to be
checked again (`ActionEngine.poll_waiting`) until the step's timeout, when it fails and the
ladder escalates to a person. A GPU with no job has nothing to wait for: the step is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from actions.model import (
    ActionKind,
    ActionPlan,
    ActionResult,
    Risk,
    done,
    failed,
    skipped,
    waiting,
)
from actions.registry import ActionRequest, make_plan
from analytics.store import Store, StoreError, query_scalar
from ingest.readers.checkpoint_log import NEEDLES, CheckpointSaved, parse_checkpoint_saved


@dataclass(frozen=True)
class SavedAt:
    """A finished checkpoint save of a job: when, where it was logged and what it said."""

    at: datetime
    node: str
    saved: CheckpointSaved
    line: str


class CheckpointProbe(Protocol):
    """Where a job's finished checkpoint saves are read from."""

    def saved_since(self, job: str, since: datetime) -> SavedAt | None:
        """Return the job's first finished save logged at or after `since`, or None."""


class LogCheckpoints:
    """Finished saves read from the `logs` table in ClickHouse.

    A line counts when it was read on one of the nodes of the job's latest topology and
    carries the job's id or no job id (the log agent tails files and does not know the job;
    the twin and launch integrations do); with no topology stored, when it carries the id.
    The SQL keeps only lines holding a needle (`NEEDLES`); the parser decides. Should more
    than `limit` such lines come back without a save among them, the next check starts
    after them.
    """

    def __init__(self, store: Store, limit: int = 200) -> None:
        self.store, self.limit = store, limit
        self._cursor: dict[tuple[str, datetime], tuple[int, int]] = {}

    def _nodes(self, job: str) -> list[str]:
        nodes = query_scalar(
            self.store,
            f"SELECT argMax(nodes, (ts, ts_us)) FROM `{self.store.database}`.`job_topology` "
            "WHERE job_id = %(job)s",
            {"job": job},
        )
        return [str(n) for n in nodes] if nodes is not None and len(nodes) else []

    def saved_since(self, job: str, since: datetime) -> SavedAt | None:
        s, us = self._cursor.get((job, since), (int(since.timestamp()), since.microsecond))
        nodes = self._nodes(job)
        scope = "node IN %(nodes)s AND job_id IN (%(job)s, '')" if nodes else "job_id = %(job)s"
        # ClickHouse 18.16 (Debian's) has no multiSearchAny: one position test per needle
        needles = " OR ".join(
            f"positionCaseInsensitive(line, %(n{i})s) > 0" for i in range(len(NEEDLES))
        )
        frame = self.store.query_df(
            f"SELECT toUInt32(ts) AS s, ts_us AS us, node, line "
            f"FROM `{self.store.database}`.`logs` "
            f"WHERE (ts > %(s)s OR (ts = %(s)s AND ts_us >= %(us)s)) AND ({needles}) "
            f"AND {scope} ORDER BY ts, ts_us LIMIT {int(self.limit)}",
            {
                "s": s,
                "us": us,
                **{f"n{i}": needle for i, needle in enumerate(NEEDLES)},
                "job": job,
                "nodes": tuple(nodes) or ("",),
            },
        )
        rows = list(frame.itertuples(index=False))
        for ts, ts_us, node, line in rows:
            saved = parse_checkpoint_saved(str(line))
            if saved is not None:
                at = datetime.fromtimestamp(int(ts), UTC) + timedelta(microseconds=int(ts_us))
                return SavedAt(at, str(node), saved, str(line))
        if len(rows) >= self.limit:  # a page of look-alikes: go on after them next time
            last, last_us = int(rows[-1][0]), int(rows[-1][1]) + 1
            self._cursor[(job, since)] = (last + 1, 0) if last_us > 999_999 else (last, last_us)
        return None


class AwaitCheckpoint:
    """Pass once the job has saved a checkpoint after the plan (and `settle_s` went by)."""

    name = "checkpoint"
    kind = ActionKind.AWAIT_CHECKPOINT
    risk = Risk.LOW

    def __init__(self, probe: CheckpointProbe, clock: Callable[[], datetime] | None = None) -> None:
        self.probe = probe
        self.clock = clock or (lambda: datetime.now(UTC))

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job or ""
        settle = float(request.params.get("settle_s", 0.0))
        if settle < 0:
            raise ValueError(f"settle_s must be >= 0, got {settle:g}")
        what = f"wait for job {job}'s next finished checkpoint save" if job else "no job: none"
        return make_plan(self, request, what, job=job, settle_s=settle)

    def execute(self, plan: ActionPlan) -> ActionResult:
        return self.check(plan, self.clock())

    def check(self, plan: ActionPlan, began: datetime) -> ActionResult:
        """A save after the ladder was planned counts (the prediction came then); the
        timeout counts from when the step began waiting."""
        job = plan.params["job"]
        if not job:
            return skipped("no job runs on the target: nothing to wait for")
        now = self.clock()
        timeout = float(plan.params.get("timeout_s", 600))
        waited = (now - began).total_seconds()
        try:
            found = self.probe.saved_since(job, plan.created_at)
        except StoreError as exc:  # ClickHouse away: check again later, within the timeout
            if waited >= timeout:
                return failed(f"checkpoint of job {job} unknown at the timeout: {exc}")
            return waiting(f"cannot read job {job}'s logs yet: {exc}")
        if found is not None:
            ready = found.at + timedelta(seconds=float(plan.params.get("settle_s", 0.0)))
            if now >= ready:
                what = found.saved.framework
                if found.saved.iteration is not None:
                    what += f" iteration {found.saved.iteration}"
                return done(
                    f"{what} saved at {found.at.isoformat()} (logged on {found.node})",
                    saved_at=found.at.isoformat(),
                    iteration=found.saved.iteration,
                    path=found.saved.path,
                )
            return waiting(f"checkpoint saved at {found.at.isoformat()}; settling until {ready}")
        if waited >= timeout:
            return failed(f"job {job} logged no finished checkpoint save in {timeout:.0f} s")
        return waiting(f"no checkpoint of job {job} since {plan.created_at.isoformat()}")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # a check has no side effect: check again
