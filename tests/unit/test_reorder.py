"""The worker's reorder buffer: event-time order, arrival order among equal times, offsets."""

from __future__ import annotations

from diagnosis.reorder import Buffered, ReorderBuffer
from ingest.bus import TopicPartition
from tests.builders import at, make_step

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def _held(*items: tuple[float, TopicPartition, int]) -> ReorderBuffer:
    held = ReorderBuffer()
    for seconds, tp, offset in items:
        held.push(Buffered(at(seconds), tp, offset, make_step(step=offset)))
    return held


def test_events_come_out_by_time_then_by_arrival():
    held = _held((3, A, 0), (1, B, 0), (3, B, 1), (1, A, 1), (2, A, 2))
    order = [(item.ts, item.tp, item.offset) for item in held.upto(None)]
    assert order == [
        (at(1), B, 0),
        (at(1), A, 1),
        (at(2), A, 2),
        (at(3), A, 0),
        (at(3), B, 1),
    ]
    assert len(held) == 0 and held.oldest() is None


def test_upto_takes_only_what_is_due_and_keeps_the_rest():
    held = _held((1, A, 0), (2, A, 1), (5, B, 0))
    assert [i.offset for i in held.upto(at(2))] == [0, 1]
    assert len(held) == 1 and held.oldest() == at(5)
    assert held.pop().tp == B


def test_pending_is_the_lowest_offset_held_per_partition():
    held = _held((9, A, 4), (1, A, 7), (5, B, 2), (2, B, 3))
    assert held.pending() == {A: 4, B: 2}
    list(held.upto(at(5)))
    assert held.pending() == {A: 4}
