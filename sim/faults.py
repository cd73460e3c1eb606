"""Fault injection: each kind changes hardware state, logs what real systems print, and has
the effect on the job that real training shows (crash with errors on peers, hang until the
watchdog, slowdown, or NaN). Ground truth is recorded here and only here."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ingest.schema import LogSource
from sim import logtext
from sim.gpus import THROTTLE_HW_SLOWDOWN, THROTTLE_HW_THERMAL, THROTTLE_SW_THERMAL
from sim.jobs import JobRun
from sim.random_faults import draw_random_faults
from sim.scenario import (
    GpuFault,
    JobFault,
    NicFault,
    NodeFault,
    RankFault,
    StragglerFault,
    SwitchFault,
)
from sim.steps import DP_COMM
from sim.twin import KERNEL_PATH, Twin

Handler = Callable[[Twin, Any, float], None]


def schedule_faults(twin: Twin) -> None:
    """Schedule every scripted and random fault of the scenario."""
    faults = list(twin.scenario.faults) + draw_random_faults(twin.scenario, twin.hw, twin.rng)
    for fault in faults:
        onset = fault.at_s
        if isinstance(fault, GpuFault) and fault.kind == "precursor":
            onset = max(0.0, fault.at_s - fault.lead_s)
        twin.at(onset, partial(_HANDLERS[fault.kind], twin, fault))


def _truth(
    twin: Twin, fault: Any, t: float, component: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    end = t + fault.duration_s if fault.duration_s else None
    entry = {
        "kind": fault.kind,
        "component": component,
        "onset_s": t,
        "onset": twin.ts(t).isoformat(),
        "end_s": end,
        "effects": [],
        **extra,
    }
    twin.truth.append(entry)
    return entry


def _gpu_component(twin: Twin, node: int, gpu: int) -> dict[str, Any]:
    return {
        "type": "gpu",
        "node": twin.node_names[node],
        "gpu": gpu,
        "uuid": twin.state.uuids[node][gpu],
        "pci_bus_id": twin.state.pci[gpu],
    }


def job_on_gpu(twin: Twin, node: int, gpu: int) -> tuple[JobRun, int] | None:
    """Return the running job and rank on a GPU, if any."""
    for job in twin.jobs:
        if job.status in ("running", "stalled"):
            lay = job.layout
            hit = np.flatnonzero((lay.rank_node == node) & (lay.rank_gpu == gpu))
            if hit.size:
                return job, int(hit[0])
    return None


def crash(
    twin: Twin,
    job: JobRun,
    t: float,
    culprits: dict[int, list[str]],
    cause: str,
    entry: dict[str, Any] | None,
) -> None:
    """End a job: culprit ranks print their errors, peers see broken connections, the
    launcher reports the failed child."""
    if job.status not in ("running", "stalled"):
        return
    lay = job.layout
    for rank, lines in culprits.items():
        twin.log(
            int(lay.rank_node[rank]),
            t,
            LogSource.TRAIN_STDERR,
            lines,
            _stderr(job),
            job=lay.job.id,
            rank=rank,
        )
    peers = _peers(job, set(culprits))
    for rank in peers[:64]:
        node = int(lay.rank_node[rank])
        twin.log(
            node,
            t + 0.5,
            LogSource.NCCL,
            logtext.nccl_peer_closed(twin.node_names[node], rank, int(lay.rank_gpu[rank])),
            _stderr(job),
            job=lay.job.id,
            rank=rank,
        )
    first = min(culprits) if culprits else 0
    twin.log(
        int(lay.rank_node[0]),
        t + 2,
        LogSource.TRAIN_STDERR,
        logtext.child_failed(first, twin.ts(t + 1), twin.node_names[int(lay.rank_node[first])]),
        _stderr(job),
        job=lay.job.id,
        rank=0,
    )
    job.status = "crashed"
    job.crashed_at = t + 2
    job.current = None
    if entry is not None:
        entry["effects"].append(
            {"job": lay.job.id, "effect": "crash", "at_s": t + 2, "cause": cause}
        )


def crash_at(
    twin: Twin,
    at_s: float,
    job: JobRun,
    culprits: dict[int, list[str]],
    cause: str,
    entry: dict[str, Any] | None,
) -> None:
    """Schedule a crash of a job."""
    twin.at(at_s, partial(crash, twin, job, culprits=culprits, cause=cause, entry=entry))


def _stderr(job: JobRun) -> str:
    return f"/var/log/train/{job.layout.job.id}/stderr.err"


def _peers(job: JobRun, culprits: set[int]) -> list[int]:
    lay = job.layout
    out: set[int] = set()
    for members in lay.comm_ranks:
        if culprits & set(members.tolist()):
            out |= set(members.tolist())
    return sorted(out - culprits)


def _kernel(twin: Twin, node: int, t: float, lines: list[str]) -> None:
    prefixed = [
        logtext.kernel_prefix(twin.ts(t), twin.boot, twin.node_names[node]) + line for line in lines
    ]
    twin.log(node, t, LogSource.KERNEL, prefixed, KERNEL_PATH)


def _on_job_gpu(
    twin: Twin,
    node: int,
    gpu: int,
    t: float,
    delay: float,
    lines: Callable[[int], list[str]],
    cause: str,
    entry: dict[str, Any],
) -> None:
    found = job_on_gpu(twin, node, gpu)
    if found is None:
        return
    job, rank = found
    crash_at(twin, t + delay, job, {rank: lines(rank)}, cause, entry)


# ---------------------------------------------------------------------------- GPU faults


def _xid79(twin: Twin, f: GpuFault, t: float) -> None:
    entry = _truth(twin, f, t, _gpu_component(twin, f.node, f.gpu))
    fall_off_bus(twin, f.node, f.gpu, t, entry)


def fall_off_bus(twin: Twin, node: int, gpu: int, t: float, entry: dict[str, Any]) -> None:
    """GPU lost: Xid 79 in the kernel log, NVML errors from then on, the rank dies."""
    st = twin.state
    _kernel(twin, node, t, logtext.xid79_lines(st.pci[gpu], st.uuids[node][gpu]))
    st.nvml_error[(node, gpu)] = "NVML_ERROR_GPU_IS_LOST"
    _on_job_gpu(
        twin,
        node,
        gpu,
        t,
        float(twin.rng.uniform(1, 8)),
        lambda r: logtext.cuda_error("launch_failure", r),
        "gpu_lost",
        entry,
    )


def _ecc_dbe(twin: Twin, f: GpuFault, t: float) -> None:
    entry = _truth(twin, f, t, _gpu_component(twin, f.node, f.gpu))
    double_bit_ecc(twin, f.node, f.gpu, t, entry)


def double_bit_ecc(twin: Twin, node: int, gpu: int, t: float, entry: dict[str, Any]) -> None:
    """Uncorrectable ECC: Xid 48 and 95, DBE counters and a pending row remap, the rank dies."""
    st = twin.state
    for name in ("ecc_dbe_vol", "ecc_dbe_agg", "remapped_uncorrectable"):
        st.counters[name][node, gpu] += 1
    st.counters["remap_pending"][node, gpu] = 1
    _kernel(
        twin,
        node,
        t,
        logtext.xid_lines(st.pci[gpu], 48, _pid(twin))
        + logtext.xid_lines(st.pci[gpu], 95, _pid(twin)),
    )
    _on_job_gpu(
        twin,
        node,
        gpu,
        t,
        float(twin.rng.uniform(0.2, 3)),
        lambda r: logtext.cuda_error("ecc", r),
        "ecc_dbe",
        entry,
    )


def _gsp_timeout(twin: Twin, f: GpuFault, t: float) -> None:
    """GSP firmware stops answering: Xid 119, NVML times out, the rank stalls silently."""
    entry = _truth(twin, f, t, _gpu_component(twin, f.node, f.gpu))
    st = twin.state
    _kernel(twin, f.node, t, logtext.gsp_timeout_lines(f.gpu, st.pci[f.gpu], _pid(twin)))
    st.nvml_error[(f.node, f.gpu)] = "NVML_ERROR_TIMEOUT"
    found = job_on_gpu(twin, f.node, f.gpu)
    if found is not None:
        job, rank = found
        stop_rank(job, rank)
        entry["effects"].append({"job": job.layout.job.id, "effect": "hang", "at_s": t})


def _nvlink(twin: Twin, f: GpuFault, t: float) -> None:
    """NVLink errors: Xid 74, CRC/replay counters climbing, TP transfers slow on that GPU."""
    entry = _truth(twin, f, t, _gpu_component(twin, f.node, f.gpu))
    st = twin.state
    _kernel(twin, f.node, t, logtext.xid_lines(st.pci[f.gpu], 74, None))
    end = t + (f.duration_s or twin.scenario.duration_s - t)
    _ticking(twin, t, end, 1.0, lambda _t: _nvlink_errors(twin, f.node, f.gpu))
    found = job_on_gpu(twin, f.node, f.gpu)
    if found is not None:
        job, rank = found
        slow = job.comm_slow.setdefault("tp", np.ones(job.grid_shape))
        slow[job.rank_coords(rank)] = 4.0
        entry["effects"].append({"job": job.layout.job.id, "effect": "slowdown", "at_s": t})


def _nvlink_errors(twin: Twin, node: int, gpu: int) -> None:
    c = twin.state.counters
    c["nvlink_crc_flit"][node, gpu] += int(twin.rng.poisson(40))
    c["nvlink_crc_data"][node, gpu] += int(twin.rng.poisson(5))
    c["nvlink_replay"][node, gpu] += int(twin.rng.poisson(12))
    c["nvlink_recovery"][node, gpu] += int(twin.rng.random() < 0.2)


def _ticking(
    twin: Twin, start: float, end: float, every: float, action: Callable[[float], None]
) -> None:
    def tick(t: float) -> None:
        action(t)
        if t + every <= end:
            twin.at(t + every, tick)

    twin.at(start, tick)


def _nan(twin: Twin, f: GpuFault, t: float) -> None:
    """Silent data corruption: the job's loss turns NaN; per-rank grad norms show it first."""
    entry = _truth(twin, f, t, _gpu_component(twin, f.node, f.gpu))
    found = job_on_gpu(twin, f.node, f.gpu)
    if found is not None:
        job, rank = found
        job.nan_from_step = job.step + 2
        job.nan_rank = rank
        entry["effects"].append({"job": job.layout.job.id, "effect": "nan", "at_s": t})


def _precursor(twin: Twin, f: GpuFault, t: float) -> None:
    """Rising single-bit ECC, remaps and temperature before a later hardware failure."""
    entry = _truth(
        twin, f, t, _gpu_component(twin, f.node, f.gpu), failure_at_s=f.at_s, then=f.then
    )
    st = twin.state

    def worsen(now: float) -> None:
        progress = min(1.0, (now - t) / max(f.at_s - t, 1.0))
        st.counters["ecc_sbe_vol"][f.node, f.gpu] += int(twin.rng.poisson(0.5 + 20 * progress**2))
        st.counters["ecc_sbe_agg"][f.node, f.gpu] = st.counters["ecc_sbe_vol"][f.node, f.gpu]
        if twin.rng.random() < 0.01 + 0.05 * progress:
            st.counters["remapped_correctable"][f.node, f.gpu] += 1
            _kernel(twin, f.node, now, logtext.xid_lines(st.pci[f.gpu], 63, _pid(twin)))
        st.temp_offset[f.node, f.gpu] = 4.0 * progress

    _ticking(twin, t, f.at_s, 10.0, worsen)
    if f.then == "xid79":
        twin.at(f.at_s, lambda t2: fall_off_bus(twin, f.node, f.gpu, t2, entry))
    elif f.then == "ecc_dbe":
        twin.at(f.at_s, lambda t2: double_bit_ecc(twin, f.node, f.gpu, t2, entry))


def _straggler(twin: Twin, f: StragglerFault, t: float) -> None:
    """One GPU slows down; thermal and clock causes show in its metrics, PCIe does not."""
    entry = _truth(
        twin, f, t, _gpu_component(twin, f.node, f.gpu), slowdown=f.slowdown, cause=f.cause
    )
    st = twin.state
    n, g = f.node, f.gpu
    twin.fault_slow[n, g] = f.slowdown
    if f.cause == "thermal":
        st.temp_offset[n, g] = 22.0
        st.throttle[n, g] |= THROTTLE_HW_THERMAL | THROTTLE_SW_THERMAL
        st.clock_factor[n, g] = 1 / f.slowdown
    elif f.cause == "clock":
        st.throttle[n, g] |= THROTTLE_HW_SLOWDOWN
        st.clock_factor[n, g] = 1 / f.slowdown
    found = job_on_gpu(twin, n, g)
    if found is not None:
        entry["effects"].append({"job": found[0].layout.job.id, "effect": "slowdown", "at_s": t})
    if f.duration_s:

        def recover(_t: float) -> None:
            twin.fault_slow[n, g] = 1.0
            st.temp_offset[n, g] = 0.0
            st.throttle[n, g] = 0
            st.clock_factor[n, g] = 1.0

        twin.at(t + f.duration_s, recover)


# ---------------------------------------------------------------------------- network


def _nic_down(twin: Twin, f: NicFault, t: float) -> None:
    entry = _truth(
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


def _nic_flap(twin: Twin, f: NicFault, t: float) -> None:
    """A NIC port goes down for seconds at a time; NCCL survives but transfers stall."""
    entry = _truth(
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

    _ticking(twin, t, end, f.period_s, flap)


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


def _switch_down(twin: Twin, f: SwitchFault, t: float) -> None:
    """A leaf switch fails: its rail (or every rail) of every node in the rack goes down."""
    rails = range(twin.hw.nics_per_node) if f.rail is None else [f.rail]
    names = [twin.hw.leaf_name(f.rack, r) for r in rails]
    entry = _truth(
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


# ---------------------------------------------------------------------------- job and host


def stop_rank(job: JobRun, rank: int) -> None:
    """Make a rank stop arriving at collectives from its current step on."""
    absent = job.absent if job.absent is not None else np.zeros(job.grid_shape, bool)
    absent[job.rank_coords(rank)] = True
    job.absent = absent
    job.current = None


def _hang(twin: Twin, f: RankFault, t: float) -> None:
    """One rank stops progressing silently: no error, its communicators stall, peers wait."""
    job = next(j for j in twin.jobs if j.layout.job.id == f.job)
    lay = job.layout
    gpu = _gpu_component(twin, int(lay.rank_node[f.rank]), int(lay.rank_gpu[f.rank]))
    entry = _truth(twin, f, t, {**gpu, "type": "rank", "job": f.job, "rank": f.rank})
    if job.status == "running":
        stop_rank(job, f.rank)
        entry["effects"].append({"job": f.job, "effect": "hang", "at_s": t})


def watchdog_timeout(twin: Twin, job: JobRun, t: float) -> None:
    """The NCCL watchdog fires on every waiting rank; the job aborts."""
    if job.status != "stalled":
        return
    lay = job.layout
    timeout_ms = int(twin.scenario.watchdog_timeout_s * 1000)
    waiting = [r for r in range(lay.world) if job.absent is None or not job.absent.ravel()[r]]
    lines = {
        r: logtext.watchdog_timeout(
            twin.ts(t),
            r,
            job.step,
            "ALLREDUCE",
            timeout_ms,
            timeout_ms + int(twin.rng.integers(10, 900)),
        )
        for r in waiting[:256]
    }
    entry = next(
        (
            e
            for e in twin.truth
            for eff in e["effects"]
            if eff.get("job") == lay.job.id and eff["effect"] == "hang"
        ),
        None,
    )
    crash(twin, job, t, culprits=lines, cause="watchdog_timeout", entry=entry)


def _user_error(twin: Twin, f: JobFault, t: float) -> None:
    """An application exception on every rank: the job's fault, not the hardware's."""
    job = next(j for j in twin.jobs if j.layout.job.id == f.job)
    entry = _truth(twin, f, t, {"type": "job", "job": f.job})
    lines = {r: logtext.user_exception(r) for r in range(min(job.layout.world, 256))}
    crash(twin, job, t, culprits=lines, cause="user_error", entry=entry)


def _app_xid(twin: Twin, f: JobFault, t: float) -> None:
    """An application bug trips Xid 13/31 on many GPUs at once; the job dies."""
    job = next(j for j in twin.jobs if j.layout.job.id == f.job)
    entry = _truth(twin, f, t, {"type": "job", "job": f.job})
    lay = job.layout
    xid = int(twin.rng.choice([13, 31]))
    for node in lay.nodes.tolist():
        gpus = lay.rank_gpu[lay.rank_node == node].tolist()
        lines: list[str] = []
        for g in gpus:
            lines += logtext.xid_lines(twin.state.pci[g], xid, _pid(twin))
        _kernel(twin, node, t, lines)
    culprits = {r: logtext.cuda_error("illegal_address", r) for r in range(min(lay.world, 256))}
    crash(twin, job, t + 1, culprits=culprits, cause="app_xid", entry=entry)


def _host_oom(twin: Twin, f: NodeFault, t: float) -> None:
    """The host runs out of memory; the OOM killer kills a rank; the job fails."""
    entry = _truth(twin, f, t, {"type": "node", "node": twin.node_names[f.node]})
    twin.state.mem_used[f.node] = twin.state.mem_total - (64 << 20)
    _kernel(twin, f.node, t, logtext.oom_kill_lines(_pid(twin)))
    for job in twin.jobs:
        ranks = np.flatnonzero(job.layout.rank_node == f.node).tolist()
        if ranks and job.status in ("running", "stalled"):
            crash_at(
                twin,
                t + 1,
                job,
                {ranks[0]: logtext.sigkill_lines(ranks[0], twin.ts(t + 1))},
                "host_oom",
                entry,
            )


def _disk_full(twin: Twin, f: NodeFault, t: float) -> None:
    """The local disk fills; the next checkpoint write fails with ENOSPC."""
    entry = _truth(twin, f, t, {"type": "node", "node": twin.node_names[f.node]})
    twin.state.disk_used[f.node] = twin.state.disk_total
    for job in twin.jobs:
        ranks = np.flatnonzero(job.layout.rank_node == f.node).tolist()
        if ranks and job.status in ("running", "stalled"):
            delay = float(twin.rng.uniform(10, 60))
            lines = {ranks[0]: logtext.disk_full_lines(ranks[0])}
            crash_at(twin, t + delay, job, lines, "disk_full", entry)


def _pid(twin: Twin) -> int:
    return int(twin.rng.integers(1000, 4_000_000))


_HANDLERS: dict[str, Handler] = {
    "xid79": _xid79,
    "ecc_dbe": _ecc_dbe,
    "gsp_timeout": _gsp_timeout,
    "nvlink": _nvlink,
    "nan": _nan,
    "precursor": _precursor,
    "straggler": _straggler,
    "nic_down": _nic_down,
    "nic_flap": _nic_flap,
    "switch_down": _switch_down,
    "hang": _hang,
    "user_error": _user_error,
    "app_xid": _app_xid,
    "host_oom": _host_oom,
    "disk_full": _disk_full,
}
