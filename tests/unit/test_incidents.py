"""The correlator on hand-built findings: root causes, sympathetic errors, deduplication."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from diagnosis.incidents import Correlator
from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def make_xid(node: str = "n1", gpu: int = 3, xid: int = 79) -> Finding:
    app = xid in (13, 31)
    return Finding(
        category=Category.GPU_APPLICATION if app else Category.GPU_HARDWARE,
        blame=Blame.APPLICATION if app else Blame.INFRASTRUCTURE,
        component=ComponentKind.GPU,
        xid=xid,
        severity=Severity.CRITICAL,
        action=Action.FIX_APPLICATION if app else Action.RESET_GPU,
        line=f"NVRM: Xid (PCI:0000:{gpu:02x}:00): {xid}, pid=1, name=python",
        confidence=0.9,
        rule="gpu.xid",
        node=node,
        gpu=gpu,
    )


def make_log(rule: str, category: Category, node: str = "n2", rank: int = 9) -> Finding:
    return Finding(
        category=category,
        blame=Blame.APPLICATION if category == Category.APPLICATION else Blame.INFRASTRUCTURE,
        component=ComponentKind.JOB if category == Category.APPLICATION else ComponentKind.NODE,
        severity=Severity.ERROR,
        action=Action.FIX_APPLICATION if category == Category.APPLICATION else Action.CHECK_NETWORK,
        line=f"[rank{rank}] {rule} evidence",
        confidence=0.8,
        rule=rule,
        node=node,
        rank=rank,
    )


def test_peer_errors_after_a_gpu_failure_attach_to_the_hardware_incident():
    c = Correlator()
    c.add(make_xid(), at(0), job="j")
    for rank in range(8):
        c.add(make_log("nccl.connection_closed", Category.NETWORK, rank=rank), at(8), job="j")
    c.add(make_log("hang.watchdog_timeout", Category.HANG, rank=3), at(20), job="j")
    c.add(make_xid(xid=45), at(1), job="j")
    (incident,) = c.incidents()
    assert incident.category == Category.GPU_HARDWARE and incident.job == "j"
    assert (incident.suspects[0].node, incident.suspects[0].gpu) == ("n1", 3)
    assert len(incident.evidence) == 11
    assert incident.detected_at == at(0)


def test_peer_errors_of_another_job_are_not_absorbed():
    c = Correlator()
    c.add(make_xid(), at(0), job="j")
    c.add(make_log("nccl.ib_completion_error", Category.NETWORK), at(5), job="other")
    assert [i.category for i in c.incidents()] == [Category.GPU_HARDWARE, Category.NETWORK]


def test_application_xid_burst_is_one_application_incident():
    c = Correlator()
    for node in ("n1", "n2", "n3"):
        for gpu in range(8):
            c.add(make_xid(node, gpu, 31), at(0), job="j")
    c.add(make_log("nccl.connection_closed", Category.NETWORK), at(2), job="j")
    (incident,) = c.incidents()
    assert incident.blame == Blame.APPLICATION and incident.job == "j"
    assert [s.component for s in incident.suspects] == [ComponentKind.JOB]
    assert "24 GPUs" in incident.summary


def test_tracebacks_on_many_ranks_are_one_application_incident():
    c = Correlator()
    for rank in range(64):
        c.add(make_log("python.exception", Category.APPLICATION, rank=rank), at(0.5), job="j")
    (incident,) = c.incidents()
    assert incident.category == Category.APPLICATION and "64 ranks" in incident.summary


def test_same_root_cause_is_deduplicated_within_the_window_and_reopens_after():
    c = Correlator(window=timedelta(minutes=5))
    c.add(make_xid(xid=48), at(0), job="j")
    c.add(make_xid(xid=95), at(1), job="j")
    c.add(make_xid(xid=48), at(3600), job="j")
    first, second = c.incidents()
    assert first.id != second.id
    again = Correlator()
    again.add(make_xid(xid=48), at(0), job="j")
    assert again.incidents()[0].id == first.id  # deterministic from the root-cause key


def test_benign_and_unexplained_lines_open_nothing():
    c = Correlator()
    c.add(make_log("nccl.connect_retry", Category.BENIGN), at(0), job="j")
    c.add(make_log("elastic.child_failed", Category.UNKNOWN), at(1), job="j")
    assert c.incidents() == []


def test_a_single_row_remap_is_a_watch_item_but_repeats_open_an_incident():
    from datetime import UTC, datetime, timedelta

    from diagnosis.explain import explain
    from diagnosis.incidents import DEGRADED_REPEATS, Correlator

    line = (
        "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for "
        "remapping, reset gpu to activate."
    )
    (finding,) = explain(line, node="node-0003")
    t0 = datetime(2026, 11, 2, tzinfo=UTC)
    correlator = Correlator()
    for i in range(DEGRADED_REPEATS - 1):
        assert correlator.add(finding, t0 + timedelta(seconds=30 * i)) is None
    assert correlator.incidents() == []
    assert correlator.add(finding, t0 + timedelta(seconds=90)) is not None
    (incident,) = correlator.incidents()
    assert incident.category.value == "gpu.degraded"
    other = Correlator()
    other.add(finding, t0)
    other.add(finding, t0 + timedelta(hours=1))  # far apart: still normal wear
    assert other.incidents() == []


def test_updates_are_drained_once_with_growing_revisions():
    c = Correlator()
    c.add(make_xid(), at(0), job="j")
    first = c.drain_updates()
    assert [(i.revision, i.findings) for i in first] == [(1, 1)]
    assert c.drain_updates() == []  # nothing changed since
    c.add(make_xid(), at(5), job="j")
    c.add(make_xid(), at(6), job="j")
    again = c.drain_updates()
    assert [i.id for i in again] == [first[0].id]
    assert again[0].revision == 3 and again[0].findings == 3
    assert again[0].updated_at == at(6) and again[0].severity == Severity.CRITICAL


def test_a_closed_incident_takes_no_more_evidence_and_a_recurrence_is_new():
    c = Correlator()
    c.add(make_xid(), at(0), job="j")
    (resolved,) = c.drain_updates()
    c.close(resolved.id)
    peer = make_log("nccl.remote_error", Category.NETWORK)
    c.add(peer, at(10), job="j")  # a consequence: absorbed, not attached, no new incident
    assert c.drain_updates() == []
    c.add(make_xid(), at(30), job="j")  # same GPU, same fault, after the restart
    (recurrence,) = c.drain_updates()
    assert recurrence.id != resolved.id
    assert [i.findings for i in c.incidents()] == [1, 1]


def test_the_lifecycle_allows_only_forward_moves():
    import pytest

    from diagnosis.lifecycle import LifecycleError, check_transition, is_final
    from diagnosis.model import IncidentStatus as S

    check_transition(S.OPEN, S.MITIGATING)
    check_transition(S.MITIGATING, S.OPEN)  # the mitigation failed
    check_transition(S.MITIGATING, S.RESOLVED)
    check_transition(S.OPEN, S.FALSE_ALARM)
    for final in (S.RESOLVED, S.FALSE_ALARM):
        assert is_final(final)
        for to in S:
            with pytest.raises(LifecycleError, match="none \\(final\\)"):
                check_transition(final, to)
    with pytest.raises(LifecycleError, match="allowed: false_alarm, mitigating, resolved"):
        check_transition(S.OPEN, S.OPEN)


def make_hang(rule: str = "implicit.hang") -> Finding:
    return Finding(
        category=Category.HANG,
        blame=Blame.UNKNOWN,
        component=ComponentKind.JOB,
        severity=Severity.CRITICAL,
        action=Action.CAPTURE_DIAGNOSTICS,
        line=f"{rule}: no step for 25s",
        confidence=0.9,
        rule=rule,
    )


def test_late_watchdog_timeouts_and_the_crash_join_the_open_hang_incident():
    c = Correlator()
    c.progress("j", at(0))
    c.add(make_hang(), at(25), job="j")
    for minutes in (5, 17, 29):  # watchdog timeouts far past the 5-minute window
        late = at(25 + minutes * 60)
        for rank in range(4):
            c.add(make_log("hang.watchdog_timeout", Category.HANG, rank=rank), late, job="j")
        c.add(make_log("nccl.connection_closed", Category.NETWORK, rank=7), late, job="j")
        c.add(make_log("elastic.child_failed", Category.APPLICATION, rank=0), late, job="j")
    (incident,) = c.incidents()
    assert incident.category == Category.HANG and incident.findings == 1 + 3 * 6


def test_a_step_after_the_stall_ends_the_causal_chain():
    c = Correlator()
    c.add(make_hang(), at(25), job="j")
    c.progress("j", at(60))  # the job stepped again: the stall is over
    c.add(make_log("hang.watchdog_timeout", Category.HANG), at(25 + 20 * 60), job="j")
    assert len(c.incidents()) == 2


def test_late_consequences_stay_with_their_own_job_and_within_the_bound():
    c = Correlator()
    c.add(make_xid(), at(0), job="j")
    c.add(make_log("hang.watchdog_timeout", Category.HANG), at(20 * 60), job="other")
    c.add(make_log("hang.watchdog_timeout", Category.HANG), at(3 * 3600), job="j")
    c.add(make_log("nccl.ib_completion_error", Category.NETWORK), at(20 * 60), job="j")
    assert [i.category for i in c.incidents()] == [
        Category.GPU_HARDWARE,
        Category.HANG,
        Category.HANG,
        Category.NETWORK,
    ]


def test_a_slow_job_does_not_absorb_a_later_crash():
    c = Correlator()
    slow = make_hang("implicit.straggler.step_time").model_copy(
        update={"category": Category.STRAGGLER}
    )
    c.add(slow, at(0), job="j")
    c.add(make_log("hang.watchdog_timeout", Category.HANG), at(20 * 60), job="j")
    assert [i.category for i in c.incidents()] == [Category.STRAGGLER, Category.HANG]
