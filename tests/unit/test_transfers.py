"""The transfer log fail-slow localization reads: per inter-node communicator, the floor of
its transfer times before a change point and after it."""

from __future__ import annotations

import math
from datetime import timedelta

from diagnosis.graph import build_comm_graph
from diagnosis.localize.failslow import slowed_comms
from diagnosis.transfers import TransferLog
from ingest.schema import CommKind
from tests.localize_builders import at, record, topology

# Two nodes; the DP pairs cross them, the TP pairs do not.
PLACE = {0: ("h1", 0), 1: ("h1", 1), 2: ("h2", 0), 3: ("h2", 1)}
COMMS = {
    "t0": (CommKind.TP, [0, 1]),
    "t1": (CommKind.TP, [2, 3]),
    "d0": (CommKind.DP, [0, 2]),
    "d1": (CommKind.DP, [1, 3]),
}
GRAPH = build_comm_graph(topology(PLACE, COMMS))


def collectives(log: TransferLog, comm: str, first: int, seconds: list[float]) -> None:
    """Log one collective a second of `comm`: the last to arrive took `s`, its peer 5 s more."""
    members = COMMS[comm][1]
    for k, s in enumerate(seconds):
        seq = first + k
        waited = record(
            members[0], comm, seq, start=seq - 5, end=seq + s, duration_ms=(s + 5) * 1e3
        )
        log.observe(waited)
        log.observe(record(members[1], comm, seq, start=seq, end=seq + s, duration_ms=s * 1e3))


def test_a_link_that_slowed_shows_in_its_floor_and_bursts_do_not():
    log = TransferLog(GRAPH)
    collectives(log, "d0", 0, [0.1] * 10)
    collectives(log, "d0", 10, [0.4] * 10)  # slow from 10 s on
    collectives(log, "d1", 0, [0.1] * 10)
    collectives(log, "d1", 10, [0.1, 0.9, 0.8, 0.1, 0.6, 0.7, 0.1, 0.9, 0.1, 0.5])  # bursts
    change = log.change(at(9.5), skip=timedelta(0))
    assert math.isclose(change["d0"], math.log(4), rel_tol=1e-9)
    assert change["d1"] == 0.0
    assert "t0" not in change and "t1" not in change  # within one node: no inter-node transfer


def test_the_step_in_flight_at_the_change_is_skipped():
    log = TransferLog(GRAPH)
    collectives(log, "d0", 0, [0.1] * 10 + [0.1, 0.1, 0.4, 0.4, 0.4, 0.4])
    collectives(log, "d1", 0, [0.1] * 16)
    assert log.change(at(9.5), skip=timedelta(seconds=2))["d0"] == math.log(4)


def test_the_floors_before_a_change_outlive_the_collectives_they_came_from():
    log = TransferLog(GRAPH, keep=12)
    collectives(log, "d0", 0, [0.1] * 10)
    collectives(log, "d1", 0, [0.1] * 10)
    collectives(log, "d0", 10, [0.3] * 4)
    collectives(log, "d1", 10, [0.1] * 4)
    first = log.change(at(9.5), skip=timedelta(0))
    collectives(log, "d0", 14, [0.3] * 20)  # everything before the change leaves the log
    collectives(log, "d1", 14, [0.1] * 20)
    later = log.change(at(9.5), skip=timedelta(0))
    assert first == later and later["d0"] > 1.0


def test_too_few_collectives_on_either_side_say_nothing():
    log = TransferLog(GRAPH)
    collectives(log, "d0", 0, [0.1, 0.1])
    collectives(log, "d0", 2, [0.4] * 10)
    assert log.change(at(1.5), skip=timedelta(0)) == {}


def test_only_links_slowed_far_beyond_the_others_count():
    steady = {f"c{i}": 0.01 * (i % 3) for i in range(40)}
    assert slowed_comms({**steady, "slow": math.log(1.9)}) == {"slow"}
    assert slowed_comms({**steady, "a bit": math.log(1.1)}) == set()  # under 20%
    assert slowed_comms({"only": math.log(3)}) == set()  # nothing to compare with
