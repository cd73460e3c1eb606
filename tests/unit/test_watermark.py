"""Where feeding is safe: partitions with unread records hold it, silent ones stop holding."""

from __future__ import annotations

from diagnosis.watermark import InputProgress
from ingest.bus import TopicPartition
from tests.builders import at

A, B = TopicPartition("t", 0), TopicPartition("t", 1)
OWNED = {A, B}


def _progress() -> InputProgress:
    return InputProgress(lateness_s=2.0, idle_partition_s=5.0, now=0.0)


def test_a_partition_behind_without_a_record_yet_holds_everything():
    progress = _progress()
    flow = progress.arrived(1.0, OWNED)
    progress.heard(A, flow)
    progress.reached(A, at(10))
    assert progress.holding(1.0, OWNED, caught_up={A}) is None  # B has records, time unknown


def test_partitions_behind_hold_at_the_time_they_reached():
    progress = _progress()
    flow = progress.arrived(1.0, OWNED)
    for tp, seconds in ((A, 10), (B, 4)):
        progress.heard(tp, flow)
        progress.reached(tp, at(seconds))
    assert sorted(progress.holding(1.5, OWNED, caught_up=set()) or []) == [at(4), at(10)]
    assert progress.holding(1.5, OWNED, caught_up=OWNED) == []  # both read to their end


def test_an_empty_partition_after_a_burst_stops_holding_once_the_input_stops():
    """The stall a whole-stack test met: a short burst after a pause, then no more input."""
    progress = _progress()
    flow = progress.arrived(3.0, OWNED)  # a pause of 3 s: every partition unconfirmed
    progress.heard(A, flow)
    progress.reached(A, at(10))
    assert progress.holding(3.5, OWNED, caught_up=OWNED) is None  # B may deliver any moment
    assert progress.holding(5.0, OWNED, caught_up=OWNED) == []  # fetched since: B is empty


def test_flowing_time_stops_while_all_input_pauses():
    progress = _progress()
    progress.arrived(1.0, OWNED)
    assert progress.flow(3.0) == 3.0  # within the lateness allowance: still flowing
    assert progress.flow(60.0) == progress.flow(3.0)  # a pause in all input does not count
