"""Event-time admission, the sources' agreed clock and the replay's bounded jumps (no services)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnosis.clock import SourceClock
from diagnosis.engine import COARSE_CHECKS, FINE_CHECKS, DiagnosisEngine
from diagnosis.incidents import Correlator, incident_id
from diagnosis.model import Action, Blame, Category, Finding, Severity
from ingest.event_time import UNBOUNDED, EventTimePolicy
from ingest.schema import SchemaError, decode_event
from tests.builders import T0, at, make_log, make_step, make_topology

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ts", "words"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), "storable range"),
        (datetime(1969, 12, 31, tzinfo=UTC), "storable range"),
        (datetime(2200, 1, 1, tzinfo=UTC), "storable range"),
        (NOW + timedelta(seconds=301), "ahead of the receiving clock"),
        (NOW - timedelta(days=3651), "behind the receiving clock"),
        (datetime(2000, 1, 1, tzinfo=UTC), "behind the receiving clock"),
    ],
)
def test_times_far_from_the_receiving_clock_are_refused_with_the_reason(ts, words):
    refusal = EventTimePolicy().refusal(ts, NOW)
    assert refusal is not None and words in refusal


@pytest.mark.parametrize("offset_s", [-3649 * 86400, -3600, 0, 299])
def test_times_near_the_receiving_clock_are_accepted(offset_s):
    assert EventTimePolicy().refusal(NOW + timedelta(seconds=offset_s), NOW) is None


def test_unbounded_still_refuses_what_cannot_be_stored():
    assert UNBOUNDED.refusal(NOW + timedelta(days=3650), NOW) is None
    assert UNBOUNDED.refusal(datetime(1, 1, 1, tzinfo=UTC), NOW) is not None


@given(
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)),
    st.none() | st.floats(0, 1e10),
    st.none() | st.floats(0, 1e10),
)
def test_the_admitted_range_is_exactly_what_refusal_accepts(ts, now, lead, age):
    policy = EventTimePolicy(max_lead_s=lead, max_age_s=age)
    earliest, latest = policy.admitted(now)
    assert (earliest <= ts <= latest) == (policy.refusal(ts, now) is None)


@given(st.datetimes(timezones=st.timezones()))
def test_any_time_decodes_or_is_a_schema_error_never_a_crash(ts):
    raw = f'{{"kind":"log","ts":"{ts.isoformat()}","node":"n1","source":"kernel","line":"x"}}'
    try:
        event = decode_event(raw)
    except SchemaError:
        return
    assert event.ts.tzinfo is not None
    EventTimePolicy().refusal(event.ts, NOW)  # answers for every decodable time


def test_the_clock_is_the_second_latest_source_heard_from_recently():
    clock = SourceClock(idle_s=5)
    assert clock.now(0) is None
    clock.observe("n1", at(10), 0)
    assert clock.now(0) == at(10)  # one source: its own time
    clock.observe("n2", at(12), 0)
    clock.observe("liar", at(1200), 0)
    assert clock.now(1) == at(12)  # one source ahead moves nothing
    clock.observe("n1", at(20), 2)
    assert clock.now(3) == at(20)
    # n2 and the liar fall silent; n1 alone is heard from: its time is the clock
    clock.observe("n1", at(30), 9)
    assert clock.now(9) == at(30)


def test_a_silent_source_stops_holding_the_clock_back():
    clock = SourceClock(idle_s=5)
    clock.observe("hung-job", at(0), 0)
    clock.observe("n1", at(1), 0)
    clock.observe("n2", at(1), 0)
    for t in range(2, 40):
        clock.observe("n1", at(t), t)
        clock.observe("n2", at(t), t)
    assert clock.now(39) == at(39)


def test_a_gap_of_centuries_is_checked_in_a_bounded_number_of_steps():
    replay = DiagnosisEngine()
    checks = []
    replay._check = checks.append  # type: ignore[method-assign]  # count, do not detect
    replay.feed(make_log("n1", 0))
    replay.advance(T0 + timedelta(days=365 * 200))
    assert len(checks) <= FINE_CHECKS + COARSE_CHECKS + 1
    assert checks[:3] == [at(1).replace(microsecond=0) + timedelta(seconds=i) for i in range(3)]
    assert checks[-1] == (T0 + timedelta(days=365 * 200)).replace(microsecond=0)


def test_a_hang_is_still_found_within_seconds_across_a_long_gap():
    replay = DiagnosisEngine()
    replay.feed(make_topology("job-1"))
    for step in range(1, 10):
        replay.feed(make_step("job-1", step))
    replay.advance(at(9 + 86400))
    (incident,) = replay.correlator.incidents()
    assert incident.category == Category.HANG
    assert incident.detected_at - at(9) < timedelta(minutes=2)


def _finding() -> Finding:
    return Finding(
        category=Category.GPU_HARDWARE,
        blame=Blame.INFRASTRUCTURE,
        severity=Severity.CRITICAL,
        action=Action.ISOLATE_GPU,
        line="NVRM: Xid (PCI:0000:61:00): 79, GPU has fallen off the bus.",
        confidence=0.95,
        rule="xid.79",
        node="n1",
        gpu=2,
    )


def test_a_restored_correlator_goes_on_where_the_first_stopped():
    first = Correlator()
    first.add(_finding(), at(0))
    (opened,) = first.incidents()
    second = Correlator()
    second.restore(first.states([opened.id]))
    second.add(_finding(), at(30))
    (continued,) = second.incidents()
    assert continued.id == opened.id and continued.findings == 2
    assert continued.revision == opened.revision + 1


def test_an_episode_id_carries_its_start_so_no_recurrence_reuses_it():
    key = ("gpu", "n1", "2")
    assert incident_id(key, at(0)) == incident_id(key, at(0))
    assert incident_id(key, at(0)) != incident_id(key, at(3600))
    first, fresh = Correlator(), Correlator()
    first.add(_finding(), at(0))
    first.close(first.incidents()[0].id)
    fresh.add(_finding(), at(3600))  # a restarted worker that restored nothing
    assert fresh.incidents()[0].id != first.incidents()[0].id
