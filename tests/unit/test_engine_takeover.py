"""A diagnosis taken over mid-stream (a restart, a rebalance) gives the incidents of one that
never stopped: the same engine restored the way a worker restores it (topologies, the last
steps and collectives shown to the detectors, the open incidents' states) goes on from there.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from bench.fault_rig import workload
from diagnosis.engine import DiagnosisEngine, PortKey
from diagnosis.incidents import Incident
from diagnosis.model import Category
from diagnosis.restore import PORT_MARGIN, WARM_COLLECTIVES, WARM_STEPS
from ingest.schema import (
    CollectiveProgress,
    EventBase,
    HostMetrics,
    JobTopology,
    PortSeen,
    TrainStep,
)
from sim.scenario import parse_scenario
from sim.twin import Twin
from tests.builders import nic_down_scenario, nic_flap_scenario


def _view(incidents: list[Incident]) -> dict[str, tuple[Any, ...]]:
    def top(i: Incident) -> tuple[Any, ...]:
        s = i.suspects[0] if i.suspects else None
        return (s.component, s.node, s.gpu, s.rank) if s else ()

    return {i.id: (i.category, i.job, top(i)) for i in incidents}


def _port_states(events: list[EventBase]) -> dict[PortKey, PortSeen]:
    """Return each port as last sampled in these events (what the store query returns)."""
    return {
        (e.node, nic.nic, nic.port): nic.seen()
        for e in events
        if isinstance(e, HostMetrics)
        for nic in e.nics
    }


def _taken_over(events: list[EventBase], cut: datetime) -> list[Incident]:
    """Diagnose up to `cut`, then hand over to a new engine restored as a worker restores
    (the first event read again is at `cut`)."""
    first = DiagnosisEngine()
    before = [e for e in events if e.ts < cut]
    for event in before:
        first.feed(event)
    opened = [i.id for i in first.correlator.drain_updates()]
    second = DiagnosisEngine()
    topologies = {e.job_id: e for e in before if isinstance(e, JobTopology)}
    for topology in topologies.values():
        second.restore(topology)
        job = topology.job_id
        steps = [e for e in before if isinstance(e, TrainStep) and e.job_id == job]
        steps = [s for s in steps if s.rank is None][-WARM_STEPS:]
        since = steps[-1].ts - WARM_COLLECTIVES if steps else cut
        collectives = [
            e
            for e in before
            if isinstance(e, CollectiveProgress) and e.job_id == job and e.ts >= since
        ]
        second.warm(job, [*steps, *collectives])
    second.correlator.restore(first.correlator.states(opened), set())
    second.restore_ports(_port_states([e for e in before if e.ts < cut - PORT_MARGIN]))
    for event in events:
        if event.ts >= cut:
            second.feed(event)
    return second.finish()


@pytest.mark.parametrize("cut_s", [120, 160, 170, 185])
def test_a_takeover_gives_the_incidents_of_a_diagnosis_that_never_stopped(cut_s: int) -> None:
    # a straggling GPU from 60 s and a GPU off the bus at 150 s in one job: after a takeover
    # the straggler's episode is seen again while the GPU's incident is open; it joins that
    # incident as evidence and must not replace its suspects (it named the straggler's GPU)
    work = workload(1, 240.0)
    cut = work.events[0].ts + timedelta(seconds=cut_s)
    assert _view(_taken_over(work.events, cut)) == _view(list(work.expected.values()))


@pytest.mark.parametrize(
    "before_fault_s", [-6.0, -4.0, -2.5, -1.0, -0.2, 1.0, 20.0, 29.0, 32.0, 45.0]
)
def test_a_takeover_just_before_a_nic_goes_down_sees_it_go_down(before_fault_s: float) -> None:
    # the engine that takes over has not seen the port's last "up" sample: it is shown the
    # ports' states stored at least PORT_MARGIN before the first event it reads again
    events: list[EventBase] = []
    Twin(parse_scenario(nic_down_scenario()), events.append).run()
    events.sort(key=lambda e: e.ts)
    never_stopped = DiagnosisEngine()
    for event in events:
        never_stopped.feed(event)
    cut = events[0].ts + timedelta(seconds=60 + before_fault_s)
    expected = _view(never_stopped.finish())
    assert [i[0] for i in expected.values()] == [Category.NETWORK]
    assert _view(_taken_over(events, cut)) == expected


def _flap_events() -> list[EventBase]:
    events: list[EventBase] = []
    Twin(parse_scenario(nic_flap_scenario()), events.append).run()
    events.sort(key=lambda e: e.ts)
    return events


def test_a_link_that_drops_between_scrapes_is_a_network_incident_naming_its_nic() -> None:
    events = _flap_events()
    port = [
        nic
        for e in events
        if isinstance(e, HostMetrics) and e.node == "node-0002"
        for nic in e.nics
        if nic.nic == "mlx5_1"
    ]
    assert {nic.state for nic in port} == {"ACTIVE"}  # no scrape ever saw it down...
    assert port[-1].link_downed and port[-1].link_downed > port[0].link_downed  # ...it dropped
    engine = DiagnosisEngine()
    for event in events:
        engine.feed(event)
    incidents = engine.finish()
    assert len(incidents) == 1, [(i.category, i.suspects[:1]) for i in incidents]
    top = incidents[0].suspects[0]
    assert incidents[0].category == Category.NETWORK and incidents[0].job == "j1"
    assert (top.node, top.nic) == ("node-0002", "mlx5_1")


@pytest.mark.parametrize("cut_s", [50.0, 80.0, 100.0, 130.0])
def test_a_takeover_between_link_drops_gives_the_same_incident(cut_s: float) -> None:
    # the engine that takes over is shown each port's counter as stored PORT_MARGIN before
    # the first event it reads again, so a drop around the cut is seen once, not lost
    events = _flap_events()
    never_stopped = DiagnosisEngine()
    for event in events:
        never_stopped.feed(event)
    cut = events[0].ts + timedelta(seconds=cut_s)
    assert _view(_taken_over(events, cut)) == _view(never_stopped.finish())
