"""Each fault kind leaves its real-world signature in the telemetry, and only there."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.schema import (
    CollectiveProgress,
    CollectiveState,
    EventBase,
    GpuMetrics,
    HostMetrics,
    JobTopology,
    LogLine,
    TrainStep,
    decode_event,
    encode_event,
)
from sim.scenario import ScenarioError, parse_scenario
from sim.twin import DEFAULT_START, Twin

BASE = {
    "seed": 3,
    "cluster": {"nodes": 8, "gpus_per_node": 8, "nodes_per_rack": 4},
    "jobs": [{"id": "j", "tp": 8, "pp": 2, "dp": 4, "step_time_s": 2.0}],
    "duration_s": 240,
}


class Recorded:
    """Everything a scenario emitted, by kind."""

    def __init__(self, faults: list[dict], **overrides: object) -> None:
        scenario = parse_scenario({**BASE, **overrides, "faults": faults})
        self.events: list[EventBase] = []
        self.truth = Twin(scenario, self.events.append).run()
        self.by_kind: dict[type, list] = defaultdict(list)
        for event in self.events:
            self.by_kind[type(event)].append(event)

    def steps(self, job: str = "j") -> list[TrainStep]:
        return [s for s in self.by_kind[TrainStep] if s.job_id == job and s.rank is None]

    def lines(self, node: str | None = None, contains: str = "") -> list[LogLine]:
        return [
            e
            for e in self.by_kind[LogLine]
            if (node is None or e.node == node) and contains in e.line
        ]

    def gpu(self, node: str, gpu: int) -> list:
        return [(m.ts, m.gpus[gpu]) for m in self.by_kind[GpuMetrics] if m.node == node]


@pytest.fixture(scope="module")
def healthy() -> Recorded:
    return Recorded([])


def test_healthy_run_has_only_benign_noise(healthy):
    steps = healthy.steps()
    assert len(steps) > 100
    times = np.array([s.step_time_s for s in steps[5:]])
    assert times.std() / times.mean() < 0.02
    assert all(not math.isnan(s.loss) for s in steps)
    assert not [e for e in healthy.by_kind[LogLine] if "Xid" in e.line and ": 63," not in e.line]
    assert not [e for e in healthy.by_kind[LogLine] if "WARN" in e.line or "Error" in e.line]
    assert all(g.nvml_error is None for m in healthy.by_kind[GpuMetrics] for g in m.gpus)
    assert all(n.state == "ACTIVE" for h in healthy.by_kind[HostMetrics] for n in h.nics)
    states = {c.state for c in healthy.by_kind[CollectiveProgress]}
    assert states == {CollectiveState.COMPLETED}
    assert healthy.truth == []


def test_warmup_steps_are_slower(healthy):
    steps = healthy.steps()
    assert steps[0].step_time_s > 1.5 * steps[10].step_time_s


def test_events_are_valid_wire_events_without_ground_truth(healthy):
    for event in healthy.events[:: max(1, len(healthy.events) // 500)]:
        raw = encode_event(event)
        assert decode_event(raw) == event
        assert b"truth" not in raw and b"fault" not in raw.lower()


def test_topology_is_published_once_with_every_communicator(healthy):
    (topo,) = healthy.by_kind[JobTopology]
    kinds = {c.kind.value for c in topo.communicators}
    assert kinds == {"tp", "dp", "pp"}
    assert topo.world_size == 64 and len(topo.ranks) == 64


def test_xid79_loses_the_gpu_and_crashes_the_job():
    rec = Recorded([{"kind": "xid79", "node": 2, "gpu": 3, "at_s": 100}])
    xid = rec.lines("node-0002", "): 79,")
    assert xid and "fallen off the bus" in xid[0].line
    after = [g for ts, g in rec.gpu("node-0002", 3) if ts.timestamp() > xid[0].ts.timestamp()]
    assert after and all(g.nvml_error == "NVML_ERROR_GPU_IS_LOST" for g in after)
    assert all(g.nvml_error is None for _, g in rec.gpu("node-0002", 2))
    assert max(s.ts for s in rec.steps()) < xid[0].ts + timedelta(seconds=15)
    assert rec.lines(contains="ChildFailedError")
    assert rec.truth[0]["effects"][0]["effect"] == "crash"


def test_straggler_slows_the_job_and_shows_thermal_throttling():
    rec = Recorded([{"kind": "straggler", "node": 5, "gpu": 1, "at_s": 60, "slowdown": 1.3}])
    steps = rec.steps()
    before = np.median(
        [s.step_time_s for s in steps if s.ts.timestamp() < steps[0].ts.timestamp() + 50][5:]
    )
    after = np.median([s.step_time_s for s in steps[-20:]])
    assert 1.2 < after / before < 1.35
    late = [g for _, g in rec.gpu("node-0005", 1)][-10:]
    peer = [g for _, g in rec.gpu("node-0005", 2)][-10:]
    assert min(g.gpu_temp for g in late) > max(g.gpu_temp for g in peer) + 10
    assert all(g.throttle_reasons & 0x40 for g in late)
    assert all(g.sm_clock < 1700 for g in late)
    assert not rec.lines(contains="Xid")


def test_coarse_ticks_never_apply_a_fault_to_steps_that_ended_before_it():
    rec = Recorded(
        [{"kind": "straggler", "node": 5, "gpu": 1, "at_s": 120, "slowdown": 2.0}],
        metrics_interval_s=30.0,
        host_interval_s=30.0,
    )
    onset = DEFAULT_START + timedelta(seconds=120)
    ended_before = [s.step_time_s for s in rec.steps()[5:] if s.ts <= onset]
    assert len(ended_before) > 40 and max(ended_before) < 2.3


def test_pcie_straggler_has_no_metric_signal():
    rec = Recorded(
        [{"kind": "straggler", "node": 5, "gpu": 1, "at_s": 60, "slowdown": 1.5, "cause": "pcie"}]
    )
    late = [g for _, g in rec.gpu("node-0005", 1)][-10:]
    assert all(g.throttle_reasons == 0 and g.sm_clock > 1900 for g in late)
    assert rec.steps()[-1].step_time_s > 2.6


def test_hang_stalls_exactly_the_culprits_communicators_then_times_out():
    rec = Recorded([{"kind": "hang", "job": "j", "rank": 13, "at_s": 50}], watchdog_timeout_s=120)
    started = [c for c in rec.by_kind[CollectiveProgress] if c.state == CollectiveState.STARTED]
    stuck_seq = max(c.seq for c in started)
    tp_stuck = {c.comm for c in started if c.comm.startswith("tp")}
    assert tp_stuck == {"tp-p0-d1"}  # rank 13 = pp 0, dp 1, tp 5
    assert 13 not in {c.rank for c in started}
    last_13 = max(c.seq for c in rec.by_kind[CollectiveProgress] if c.rank == 13)
    assert last_13 == stuck_seq - 1
    timeouts = rec.lines(contains="Watchdog caught collective operation timeout")
    assert timeouts and "Timeout(ms)=120000" in timeouts[0].line
    assert timeouts[0].ts.timestamp() - started[0].ts.timestamp() == pytest.approx(120, abs=5)
    assert not rec.lines(contains="Xid")
    spinning = [g for _, g in rec.gpu("node-0001", 6)][100:110]  # a waiting TP peer
    assert all(g.gpu_util > 90 for g in spinning)
    culprit = [g for _, g in rec.gpu("node-0001", 5)][100:110]
    assert all(g.gpu_util < 10 for g in culprit)


def test_nic_down_shows_port_down_and_nccl_errors_on_that_rail():
    rec = Recorded([{"kind": "nic_down", "node": 4, "nic": 2, "at_s": 60}])
    last = [h for h in rec.by_kind[HostMetrics] if h.node == "node-0004"][-1]
    states = {n.nic: n.state for n in last.nics}
    assert states["mlx5_2"] == "DOWN" and states["mlx5_3"] == "ACTIVE"
    errors = rec.lines("node-0004", "NET/IB : Got completion from peer")
    assert errors and {e.rank % 8 for e in errors} == {2}
    assert rec.steps()[-1].ts.timestamp() < errors[0].ts.timestamp() + 60


def test_switch_down_takes_a_rail_of_every_node_in_the_rack():
    rec = Recorded([{"kind": "switch_down", "rack": 1, "rail": 0, "at_s": 60}])
    last = {h.node: h for h in rec.by_kind[HostMetrics]}
    down = {n for n, h in last.items() if any(p.state == "DOWN" for p in h.nics)}
    assert down == {"node-0004", "node-0005", "node-0006", "node-0007"}


def test_nan_turns_the_loss_nan_and_rank_grad_norms_show_the_culprit_first():
    rec = Recorded(
        [{"kind": "nan", "node": 3, "gpu": 4, "at_s": 60}],
        jobs=[{**BASE["jobs"][0], "per_rank_grad_norm": True}],
    )
    steps = rec.steps()
    first_nan = next(s.step for s in steps if math.isnan(s.loss))
    ranks = [s for s in rec.by_kind[TrainStep] if s.rank is not None and s.step == first_nan - 1]
    bad = [s.rank for s in ranks if math.isnan(s.grad_norm)]
    assert bad == [3 * 8 + 4]
    assert not rec.lines(contains="Xid")


def test_user_error_blames_nothing_in_hardware():
    rec = Recorded([{"kind": "user_error", "job": "j", "at_s": 60}])
    assert rec.lines(contains="KeyError")
    assert not rec.lines(contains="Xid") and not rec.lines(contains="NCCL WARN NET/IB")
    assert all(g.nvml_error is None for m in rec.by_kind[GpuMetrics] for g in m.gpus)


def test_app_xid_hits_many_gpus_at_once():
    rec = Recorded([{"kind": "app_xid", "job": "j", "at_s": 60}])
    xids = rec.lines(contains="NVRM: Xid")
    assert len({(e.node, e.line.split(")")[0]) for e in xids}) == 64


@pytest.mark.parametrize(
    "kind,check",
    [
        ("ecc_dbe", lambda r: r.lines(contains="): 48,") and r.lines(contains="uncorrectable ECC")),
        ("gsp_timeout", lambda r: r.lines(contains="): 119,")),
        (
            "nvlink",
            lambda r: (
                r.lines(contains="): 74,") and r.gpu("node-0002", 3)[-1][1].nvlink_crc_flit > 100
            ),
        ),
        (
            "precursor",
            lambda r: (
                r.gpu("node-0002", 3)[150][1].ecc_sbe_vol
                < r.gpu("node-0002", 3)[199][1].ecc_sbe_vol
            ),
        ),
    ],
)
def test_gpu_fault_signatures(kind, check):
    fault = {"kind": kind, "node": 2, "gpu": 3, "at_s": 200}
    if kind == "precursor":
        fault["lead_s"] = 180
    rec = Recorded([fault])
    assert check(rec)


def test_host_faults_are_visible_on_the_host():
    oom = Recorded([{"kind": "host_oom", "node": 1, "at_s": 60}])
    assert oom.lines("node-0001", "Out of memory: Killed process")
    disk = Recorded([{"kind": "disk_full", "node": 1, "at_s": 60}])
    last = [h for h in disk.by_kind[HostMetrics] if h.node == "node-0001"][-1]
    assert last.disks[0].used_bytes == last.disks[0].total_bytes
    assert disk.lines(contains="No space left on device")


@pytest.mark.parametrize(
    "fault,message",
    [
        ({"kind": "xid79", "node": 99, "gpu": 0, "at_s": 1}, "faults.0 (xid79).node"),
        ({"kind": "xid79", "node": 0, "gpu": 8, "at_s": 1}, "faults.0 (xid79).gpu"),
        ({"kind": "hang", "job": "nope", "rank": 0, "at_s": 1}, "unknown job"),
        ({"kind": "hang", "job": "j", "rank": 64, "at_s": 1}, "rank: 64 out of range"),
        ({"kind": "xid79", "node": 0, "gpu": 0, "at_s": 1, "colour": "red"}, "colour: unknown key"),
    ],
)
def test_impossible_faults_are_rejected_naming_the_key(fault, message):
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_scenario({**BASE, "faults": [fault]})


@pytest.mark.parametrize(
    "seed,layout",
    [
        (1, {"tp": 8, "pp": 1, "dp": 8}),
        (2, {"tp": 4, "pp": 4, "dp": 4}),
        (3, {"tp": 8, "pp": 2, "dp": 4, "ep": 2}),
        (4, {"tp": 2, "pp": 8, "dp": 4}),
    ],
)
def test_healthy_scenarios_show_no_fault_signature_for_any_seed_or_layout(seed, layout):
    rec = Recorded([], seed=seed, duration_s=120, jobs=[{"id": "j", "step_time_s": 1.5, **layout}])
    steps = rec.steps()
    times = np.array([s.step_time_s for s in steps[4:]])
    assert len(times) > 50 and times.max() / np.median(times) < 1.05
    assert all(c.state == CollectiveState.COMPLETED for c in rec.by_kind[CollectiveProgress])
    assert not [e for e in rec.by_kind[LogLine] if "Xid" in e.line and ": 63," not in e.line]
    assert all(
        g.nvml_error is None and g.throttle_reasons == 0 and g.ecc_dbe_vol == 0
        for m in rec.by_kind[GpuMetrics]
        for g in m.gpus
    )
    (topo,) = rec.by_kind[JobTopology]
    comms = {c.comm for c in topo.communicators}
    assert {c.comm for c in rec.by_kind[CollectiveProgress]} <= comms


def test_expert_parallel_jobs_run_all_to_all_on_their_ep_groups():
    rec = Recorded(
        [], jobs=[{"id": "j", "tp": 8, "pp": 1, "dp": 8, "ep": 4, "step_time_s": 2}], duration_s=30
    )
    ep = [c for c in rec.by_kind[CollectiveProgress] if c.op == "all_to_all"]
    assert {c.comm for c in ep} == {f"ep-p0-t{t}-e{e}" for t in range(8) for e in range(2)}


def test_nic_flap_toggles_the_port_and_slows_steps_without_crashing():
    rec = Recorded([{"kind": "nic_flap", "node": 4, "nic": 2, "at_s": 30, "period_s": 20}])
    states = [
        next(n.state for n in h.nics if n.nic == "mlx5_2")
        for h in rec.by_kind[HostMetrics]
        if h.node == "node-0004"
    ]
    last = [h for h in rec.by_kind[HostMetrics] if h.node == "node-0004"][-1]
    assert next(n.link_downed for n in last.nics if n.nic == "mlx5_2") >= 5
    assert "ACTIVE" in states
    steps = rec.steps()
    assert steps[-1].ts.timestamp() > steps[0].ts.timestamp() + 200  # still training
    assert max(s.step_time_s for s in steps[10:]) > 1.5 * np.median([s.step_time_s for s in steps])


def test_random_faults_follow_the_rate_and_the_llama3_mix():
    from sim.cluster import Hardware
    from sim.random_faults import draw_random_faults

    scenario = parse_scenario(
        {
            **BASE,
            "cluster": {"nodes": 512},
            "duration_s": 86_400,
            "random_faults": {"rate_per_gpu_day": 0.01},
        }
    )
    faults = draw_random_faults(scenario, Hardware.of(scenario), np.random.default_rng(0))
    assert 4096 * 0.01 * 0.7 < len(faults) < 4096 * 0.01 * 1.3
    kinds = [f.kind for f in faults]
    assert kinds.count("xid79") > kinds.count("hang")
    assert all(0 <= f.at_s <= 86_400 for f in faults)


def test_stack_dumps_on_request_show_the_culprit_in_the_dataloader():
    scenario = parse_scenario(
        {**BASE, "faults": [{"kind": "hang", "job": "j", "rank": 13, "at_s": 20}], "duration_s": 60}
    )
    twin = Twin(scenario, lambda _e: None)
    twin.run()
    culprit, peer = twin.stack_dump("j", 13), twin.stack_dump("j", 12)
    assert culprit.startswith("Process ") and "dataloader.py" in culprit
    assert "all_reduce" in peer and "dataloader.py" not in peer
    assert "Thread " in peer and '(idle): "MainThread"' in peer


def test_benign_noise_is_only_retries_and_row_remaps(healthy):
    retries = healthy.lines(contains="Call to connect returned")
    assert retries and all(e.source.value == "nccl" for e in retries)
    remaps = healthy.lines(contains="Xid")
    assert all(": 63," in e.line for e in remaps)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.integers(1, 6),
    step=st.floats(0.5, 5.0),
)
def test_property_healthy_runs_never_look_faulty(seed, tp, pp, dp, step):
    nodes = -(-tp * pp * dp // 8)
    rec = Recorded(
        [],
        seed=seed,
        duration_s=40,
        cluster={"nodes": nodes, "nodes_per_rack": 2},
        jobs=[{"id": "p", "tp": tp, "pp": pp, "dp": dp, "step_time_s": step}],
    )
    assert all(c.state == CollectiveState.COMPLETED for c in rec.by_kind[CollectiveProgress])
    assert not [e for e in rec.by_kind[LogLine] if "Xid" in e.line and ": 63," not in e.line]
    assert not [e for e in rec.by_kind[LogLine] if "WARN" in e.line or "Error" in e.line]
    assert all(
        g.nvml_error is None and g.throttle_reasons == 0
        for m in rec.by_kind[GpuMetrics]
        for g in m.gpus
    )
    steps = [s for s in rec.by_kind[TrainStep] if s.job_id == "p"]
    assert steps and all(not math.isnan(s.loss) for s in steps)
    late = [s.step_time_s for s in steps[4:]]
    assert not late or max(late) / min(late) < 1.1
    assert rec.truth == []


def test_nic_slow_stretches_only_the_inter_node_transfers_of_its_rail():
    fault = {"kind": "nic_slow", "node": 1, "nic": 2, "at_s": 100, "slowdown": 3.0}
    rec = Recorded([fault])
    before = [s.step_time_s for s in rec.steps() if s.ts < DEFAULT_START + timedelta(seconds=90)]
    after = [s.step_time_s for s in rec.steps() if s.ts > DEFAULT_START + timedelta(seconds=110)]
    assert np.median(after) > 1.05 * np.median(before[5:])  # DP traffic slowed 3x
    onset = DEFAULT_START + timedelta(seconds=100)

    def transfer_ms(prefix: str, after: bool) -> float:
        """Return the shortest member's duration (the transfer alone) over the steps."""
        return min(
            p.duration_ms or 0.0
            for p in rec.by_kind[CollectiveProgress]
            if p.comm.startswith(prefix)
            and (p.ts > onset + timedelta(seconds=10)) == after
            and (after or p.ts < onset)
        )

    assert transfer_ms("tp-", True) < 1.1 * transfer_ms("tp-", False)  # inside the node
    assert transfer_ms("dp-", True) < 1.1 * transfer_ms("dp-", False)  # other rails' rings
    slowed = [
        p.duration_ms
        for p in rec.by_kind[CollectiveProgress]
        if p.comm == "dp-p0-t2" and p.ts > onset + timedelta(seconds=10)
    ]
    assert min(slowed) > 2.5 * transfer_ms("dp-", False)  # the ring through mlx5_2: 3x
    assert rec.truth[0]["component"] == {"type": "nic", "node": "node-0001", "nic": "mlx5_2"}
    assert not rec.lines(contains="mlx5_2")  # nothing in its logs: only timing shows it


def test_host_slow_slows_every_gpu_of_the_host_relative_to_the_jobs_pace():
    fault = {"kind": "host_slow", "node": 3, "at_s": 100, "slowdown": 1.1, "relative_to": "job"}
    rec = Recorded([fault])
    (truth,) = rec.truth
    assert truth["component"] == {"type": "node", "node": "node-0003"}
    assert truth["gpu_slowdown"] >= 1.1
    before = [s.step_time_s for s in rec.steps() if s.ts < DEFAULT_START + timedelta(seconds=90)]
    after = [s.step_time_s for s in rec.steps() if s.ts > DEFAULT_START + timedelta(seconds=110)]
    assert np.median(after) > 1.07 * np.median(before[5:])


def test_collective_records_are_sampled_in_bursts_when_asked():
    rec = Recorded([], collective_every_steps=10, collective_burst_steps=3)
    seqs = {p.seq for p in rec.by_kind[CollectiveProgress]}
    steps = {s.step for s in rec.steps()}
    assert len(steps) > 30  # every step is still logged
    assert seqs == {k for k in steps if k % 10 >= 7}
