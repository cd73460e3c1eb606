"""The await_checkpoint step's decisions, over a probe that returns what the logs hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actions.checkpoint import AwaitCheckpoint, SavedAt
from actions.model import ActionKind, Target
from actions.registry import ActionRequest
from analytics.store import StoreUnavailable
from ingest.readers.checkpoint_log import parse_checkpoint_saved
from tests.actions_builders import make_incident

LINE = "  successfully saved checkpoint from iteration     500 to /ckpt/j [ t 1/8, p 1/1 ]"


class Logs:
    """The job's finished saves as the ClickHouse probe would return them."""

    def __init__(self) -> None:
        self.saves: list[SavedAt] = []
        self.down = False

    def saved_since(self, job: str, since: datetime) -> SavedAt | None:
        if self.down:
            raise StoreUnavailable("ClickHouse at 127.0.0.1:9000 unreachable")
        return next((s for s in self.saves if s.at >= since), None)


def _plan(step: AwaitCheckpoint, job: str | None = "j", **params: float):
    request = ActionRequest(
        incident=make_incident(1, job=job),
        kind=ActionKind.AWAIT_CHECKPOINT,
        target=Target(node="node-0001", gpu=3, job=job),
        step=0,
        rule="predicted-failure",
        params={"timeout_s": 3600.0, **params},
    )
    return step.plan(request)


def _saved(at: datetime) -> SavedAt:
    saved = parse_checkpoint_saved(LINE)
    assert saved is not None
    return SavedAt(at, "node-0002", saved, LINE)


@pytest.fixture
def clock():
    box = [datetime.now(UTC)]

    def now() -> datetime:
        return box[0]

    now.box = box  # type: ignore[attr-defined]
    return now


def test_waits_until_a_save_after_the_plan_then_passes(clock):
    logs = Logs()
    step = AwaitCheckpoint(logs, clock=clock)
    plan = _plan(step)
    logs.saves.append(_saved(plan.created_at - timedelta(minutes=5)))  # before the alert
    assert step.check(plan, plan.created_at).status == "waiting"
    logs.saves.append(_saved(plan.created_at + timedelta(minutes=20)))
    clock.box[0] = plan.created_at + timedelta(minutes=21)
    result = step.check(plan, plan.created_at)
    assert result.status == "done" and result.outputs["iteration"] == 500
    assert "megatron iteration 500" in result.detail and "node-0002" in result.detail


def test_settle_time_after_the_line_is_waited_out(clock):
    logs = Logs()
    step = AwaitCheckpoint(logs, clock=clock)
    plan = _plan(step, settle_s=120.0)
    logs.saves.append(_saved(plan.created_at + timedelta(minutes=1)))
    clock.box[0] = plan.created_at + timedelta(minutes=2)
    assert step.check(plan, plan.created_at).status == "waiting"
    clock.box[0] = plan.created_at + timedelta(minutes=3, seconds=1)
    assert step.check(plan, plan.created_at).status == "done"


def test_timeout_fails_and_an_outage_only_delays(clock):
    logs = Logs()
    step = AwaitCheckpoint(logs, clock=clock)
    plan = _plan(step)
    logs.down = True
    waiting = step.check(plan, plan.created_at)
    assert waiting.status == "waiting" and "unreachable" in waiting.detail
    clock.box[0] = plan.created_at + timedelta(hours=1, seconds=1)
    assert "unknown at the timeout" in (step.check(plan, plan.created_at).error or "")
    logs.down = False
    failed = step.check(plan, plan.created_at)
    assert failed.status == "failed" and "no finished checkpoint save in 3600 s" in (
        failed.error or ""
    )


def test_no_job_has_nothing_to_wait_for_and_bad_params_are_refused(clock):
    step = AwaitCheckpoint(Logs(), clock=clock)
    assert step.execute(_plan(step, job=None)).status == "skipped"
    with pytest.raises(ValueError, match="settle_s must be >= 0"):
        _plan(step, settle_s=-1.0)
