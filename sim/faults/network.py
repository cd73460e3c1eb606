"""Network faults: NIC ports down or flapping, leaf switches down."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from sim import logtext
from sim.faults.common import crash_at, ticking, truth_entry
from sim.jobs import JobRun
from sim.scenario import NicFault, SwitchFault
from sim.steps import DP_COMM
from sim.twin import Twin


def nic_down(twin: Twin, f: NicFault, t: float) -> None:
    entry = truth_entry(
        twin, f, t, {"type": "nic", "node": twin.node_names[f.node], "nic": f"mlx5_{f.nic}"}
    )
    link_down(twin, f.node, f.nic, t, entry)


def link_down(twin: Twin, node: int, nic: int, t: float, entry: dict[str, Any]) -> None:
    """A NIC port loses its link: NCCL IB errors on the ranks using that rail, then a crash."""
    st = twin.state
    st.nic_up[node, nic] = False
    st.nic_counters["link_downed"][node, nic] += 1
    st.nic_counters["symbol_errors"][node, nic] += int(twin.rng.integers(1, 50))
    for job in twin.jobs:
        if job.status not in ("running", "stalled") or job.layout.job.dp * job.layout.job.pp == 1:
            continue
        lay = job.layout
        hit = np.flatnonzero(
            (lay.rank_node == node) & (lay.rank_gpu % twin.hw.nics_per_node == nic)
        ).tolist()
        if not hit:
            continue
        lines = {
            r: logtext.nccl_ib_error(twin.node_names[node], r, int(lay.rank_gpu[r]), nic)
            for r in hit
        }
        delay = float(twin.rng.uniform(5, 25))  # NCCL IB retries time out, then the op fails
        crash_at(twin, t + delay, job, lines, "nic_down", entry)


def nic_flap(twin: Twin, f: NicFault, t: float) -> None:
    """A NIC port goes down for seconds at a time; NCCL survives but transfers stall."""
    entry = truth_entry(
        twin,
        f,
        t,
        {"type": "nic", "node": twin.node_names[f.node], "nic": f"mlx5_{f.nic}"},
        period_s=f.period_s,
    )
    for job in twin.jobs:
        if job.status == "running" and (job.layout.rank_node == f.node).any():
            entry["effects"].append({"job": job.layout.job.id, "effect": "slowdown", "at_s": t})
    st = twin.state
    end = t + (f.duration_s or twin.scenario.duration_s - t)

    def flap(now: float) -> None:
        st.nic_up[f.node, f.nic] = False
        st.nic_counters["link_downed"][f.node, f.nic] += 1
        st.nic_counters["link_error_recovery"][f.node, f.nic] += 1
        st.nic_counters["symbol_errors"][f.node, f.nic] += int(twin.rng.integers(5, 200))
        down_s = float(twin.rng.uniform(1, 4))
        _slow_rail(twin, f.node, f.nic, down_s)
        twin.at(now + down_s, lambda _t: _restore(twin, f.node, f.nic))

    ticking(twin, t, end, f.period_s, flap)


def nic_slow(twin: Twin, f: NicFault, t: float) -> None:
    """A NIC turns slow (a link trained down, retransmissions): every transfer crossing it, the
    data-parallel, pipeline and expert traffic of the ranks on its rail, takes `slowdown` x as
    long. Nothing in its counters shows it; only the collectives' timing can."""
    entry = truth_entry(
        twin,
        f,
        t,
        {"type": "nic", "node": twin.node_names[f.node], "nic": f"mlx5_{f.nic}"},
        slowdown=f.slowdown,
    )
    for job in twin.jobs:
        lay = job.layout
        hit = np.flatnonzero(
            (lay.rank_node == f.node) & (lay.rank_gpu % twin.hw.nics_per_node == f.nic)
        ).tolist()
        if not hit or job.status not in ("pending", "running"):
            continue
        entry["effects"].append({"job": lay.job.id, "effect": "slowdown", "at_s": t})
        _stretch(job, hit, f.slowdown)
        if f.duration_s:
            twin.at(t + f.duration_s, partial(_unstretch, job, hit))


def _unstretch(job: JobRun, ranks: list[int], _t: float) -> None:
    _stretch(job, ranks, 1.0)


def _stretch(job: JobRun, ranks: list[int], factor: float) -> None:
    """Set the transfer-time multiplier of the ranks' inter-node phases."""
    for phase in ("dp", "pp", "ep"):
        slow = job.comm_slow.setdefault(phase, np.ones(job.grid_shape))
        for r in ranks:
            slow[job.rank_coords(r)] = factor


def _slow_rail(twin: Twin, node: int, nic: int, down_s: float) -> None:
    """Stretch the inter-node transfers on a rail by the time its link is down (IB retries)."""
    for job in twin.jobs:
        lay = job.layout
        factor = 1.0 + down_s / (lay.job.step_time_s * DP_COMM)
        hit = np.flatnonzero(
            (lay.rank_node == node) & (lay.rank_gpu % twin.hw.nics_per_node == nic)
        )
        for phase in ("dp", "pp"):
            slow = job.comm_slow.setdefault(phase, np.ones(job.grid_shape))
            for r in hit.tolist():
                slow[job.rank_coords(r)] = factor
        job.current = None if job.current is not None and factor > 1 else job.current


def _restore(twin: Twin, node: int, nic: int) -> None:
    twin.state.nic_up[node, nic] = True
    _slow_rail(twin, node, nic, 0.0)


def switch_down(twin: Twin, f: SwitchFault, t: float) -> None:
    """A leaf switch fails: its rail (or every rail) of every node in the rack goes down."""
    rails = range(twin.hw.nics_per_node) if f.rail is None else [f.rail]
    names = [twin.hw.leaf_name(f.rack, r) for r in rails]
    entry = truth_entry(
        twin,
        f,
        t,
        {
            "type": "switch",
            "switches": names,
            "rack": f.rack,
            "nodes": [twin.node_names[n] for n in twin.hw.nodes_of_rack(f.rack)],
        },
    )
    for node in twin.hw.nodes_of_rack(f.rack):
        for rail in rails:
            link_down(twin, node, rail, t, entry)
