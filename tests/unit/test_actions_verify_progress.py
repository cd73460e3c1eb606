"""The verify_progress step: a check of the world that waits, never a loop that blocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, Target
from actions.progress import VerifyProgress
from actions.registry import ActionRegistry, ActionRequest, make_plan
from analytics.store import StoreUnavailable
from tests.actions_builders import make_incident

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


class Steps:
    """A job's logged training steps, as the train_steps probe would count them."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, datetime]] = []
        self.down = False

    def steps_since(self, job: str, since: datetime, cluster: str) -> int:
        if self.down:
            raise StoreUnavailable("ClickHouse at 127.0.0.1:9000 unreachable")
        return len({s for s, at in self.logged if at >= since})


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _plan(step: VerifyProgress, job: str | None = "job-7") -> ActionPlan:
    request = ActionRequest(
        incident=make_incident(1, job=job),
        kind=ActionKind.VERIFY_PROGRESS,
        target=Target(node="node-0001", gpu=3, job=job),
        step=3,
        rule="hardware-fault",
        params={"timeout_s": 900.0},
    )
    return step.plan(request)


def test_only_steps_after_the_step_began_count_and_it_waits_until_enough():
    steps, clock = Steps(), Clock()
    verify = VerifyProgress(steps, min_steps=2, clock=clock)
    plan = _plan(verify)
    steps.logged += [(100, T0 - timedelta(seconds=5)), (101, T0 - timedelta(seconds=1))]
    first = verify.check(plan, T0)  # the hung run's last steps say nothing of the restart
    assert first.status == "waiting" and "0 of 2" in first.detail
    clock.now = T0 + timedelta(minutes=3)  # the relaunch loads its checkpoint meanwhile
    steps.logged.append((96, T0 + timedelta(minutes=2)))
    assert verify.check(plan, T0).status == "waiting"
    steps.logged.append((97, T0 + timedelta(minutes=2, seconds=10)))
    result = verify.check(plan, T0)
    assert result.status == "done" and result.outputs["steps"] == 2


def test_no_progress_by_the_timeout_fails_and_an_outage_only_delays():
    steps, clock = Steps(), Clock()
    verify = VerifyProgress(steps, clock=clock)
    plan = _plan(verify)
    steps.down = True
    assert verify.check(plan, T0).status == "waiting"
    clock.now = T0 + timedelta(seconds=900)
    assert "unknown at the timeout" in (verify.check(plan, T0).error or "")
    steps.down = False
    steps.logged.append((1, T0 + timedelta(seconds=30)))
    failed = verify.check(plan, T0)
    assert failed.status == "failed" and "only 1 new step(s) of job job-7 in 900 s" in (
        failed.error or ""
    )
    # the timeout counts from when the step began, not from when the ladder was planned
    assert verify.check(plan, T0 + timedelta(seconds=600)).status == "waiting"


def test_a_step_with_no_job_fails_and_execute_is_a_first_check():
    steps, clock = Steps(), Clock()
    verify = VerifyProgress(steps, clock=clock)
    assert verify.execute(_plan(verify, job=None)).status == "failed"
    steps.logged += [(1, T0), (2, T0)]  # logged as the step begins: they count
    assert verify.execute(_plan(verify)).status == "done"


class BlockingVerify:
    """A verify executor written the old way: no check(), so the engine would block on it."""

    name = "blocking"
    kind = ActionKind.VERIFY_PROGRESS
    risk = Risk.LOW

    def plan(self, request: ActionRequest) -> ActionPlan:
        return make_plan(self, request, "loop until progress")

    def execute(self, plan: ActionPlan) -> ActionResult:
        raise AssertionError("never called")

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None


def test_a_waiting_kind_registered_without_a_check_is_refused():
    with pytest.raises(TypeError, match="needs check"):
        ActionRegistry([BlockingVerify()])
    registry = ActionRegistry([VerifyProgress(Steps())])
    assert registry.waiter(ActionKind.VERIFY_PROGRESS).kind == ActionKind.VERIFY_PROGRESS
