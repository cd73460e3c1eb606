"""The live scheduler the action engine calls: replacements, reclaiming, the snapshot."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scheduler.service import Inventory, Scheduler, SchedulerState


def test_replacement_draws_standby_first_then_loan_then_refuses() -> None:
    sched = Scheduler(training_servers=3, inference_servers=2, standbys=1)
    assert sched.place("job-a", 16) is not None
    first = sched.request_replacement("job-a", "trn-00000", 8)
    assert first is not None and first.source == "standby" and first.node == "trn-00002"
    assert sched.request_replacement("job-a", "trn-00001", 8) is None
    assert "no warm standby" in sched.refusals[-1]
    assert sched.loan(1) == ["inf-00003"]
    second = sched.request_replacement("job-a", "trn-00001", 8)
    assert second is not None and second.source == "loan" and second.node == "inf-00003"


def test_reclaim_isolates_node_and_returns_its_jobs() -> None:
    sched = Scheduler(training_servers=2, inference_servers=0)
    sched.place("job-a", 4)
    sched.place("job-b", 4)
    done = sched.reclaim("trn-00000")
    assert done.jobs == ["job-a", "job-b"]
    state = sched.snapshot()
    node = state.pools[0].servers[0]
    assert node.state == "isolated" and node.used == 0 and node.jobs == {}
    assert sched.place("job-c", 8) == ["trn-00001"]
    assert sched.place("job-d", 8) is None and sched.snapshot().queue[0].job_id == "job-d"


def test_snapshot_round_trips_as_json() -> None:
    sched = Scheduler(training_servers=2, inference_servers=2, standbys=1)
    sched.loan(1)
    state = sched.snapshot()
    assert state.loans == ["inf-00002"] and state.standbys == ["trn-00001"]
    assert SchedulerState.model_validate_json(state.model_dump_json()) == state


def test_returning_loans_preempts_fewest_jobs() -> None:
    sched = Scheduler(training_servers=0, inference_servers=2)
    sched.loan(2)
    sched.place("unused", 1)  # no training servers: queued
    sched.request_replacement("job-a", "trn-x", 8)
    assert sched.return_loans(1) == []
    assert sched.return_loans(1) == ["job-a"]


def test_a_scheduler_rebuilt_from_its_snapshot_behaves_as_the_original() -> None:
    inventory = Inventory(
        training=["a1", "a2"], standby=["s1"], inference=["i1", "i2"], inference_gpu_type="L40S"
    )
    sched = Scheduler.from_inventory(inventory)
    assert sched.place("job-a", 12) == ["a1", "a2"]
    assert sched.loan(1) == ["i1"]
    assert sched.place("job-q", 8) is None
    granted = sched.request_replacement("job-a", "a2", 8)
    assert granted is not None and granted.node == "s1"
    copy = Scheduler.from_state(
        SchedulerState.model_validate_json(sched.snapshot().model_dump_json())
    )
    assert copy.snapshot() == sched.snapshot()
    assert copy.request_replacement("job-a", "a2", 8) == granted  # the first grant, not another
    for s in (sched, copy):  # both hand the loaned server out next, and refuse after it
        assert getattr(s.request_replacement("job-b", "a1", 8), "node", None) == "i1"
        assert s.request_replacement("job-c", "a1", 8) is None
    assert copy.snapshot() == sched.snapshot()


def test_an_inventory_with_no_servers_or_repeated_names_is_refused() -> None:
    with pytest.raises(ValidationError, match="lists no servers"):
        Inventory()
    with pytest.raises(ValidationError, match="listed twice: n2"):
        Inventory(training=["n1", "n2"], inference=["n2"])
    with pytest.raises(ValidationError, match="not node names"):
        Inventory(training=["bad name"])
