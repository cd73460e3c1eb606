"""GPU faults: lost GPUs, ECC, GSP, NVLink, silent corruption, precursors, stragglers."""

from __future__ import annotations

from typing import Any

import numpy as np

from sim import logtext
from sim.faults.common import (
    gpu_component,
    job_on_gpu,
    kernel_lines,
    new_pid,
    on_job_gpu,
    stop_rank,
    ticking,
    truth_entry,
)
from sim.gpus import THROTTLE_HW_SLOWDOWN, THROTTLE_HW_THERMAL, THROTTLE_SW_THERMAL
from sim.scenario import GpuFault, NodeFault, StragglerFault
from sim.twin import Twin
from sim.wear import precursor_step


def xid79(twin: Twin, f: GpuFault, t: float) -> None:
    entry = truth_entry(twin, f, t, gpu_component(twin, f.node, f.gpu))
    fall_off_bus(twin, f.node, f.gpu, t, entry)


def fall_off_bus(twin: Twin, node: int, gpu: int, t: float, entry: dict[str, Any]) -> None:
    """GPU lost: Xid 79 in the kernel log, NVML errors from then on, the rank dies."""
    st = twin.state
    kernel_lines(twin, node, t, logtext.xid79_lines(st.pci[gpu], st.uuids[node][gpu]))
    st.nvml_error[(node, gpu)] = "NVML_ERROR_GPU_IS_LOST"
    on_job_gpu(
        twin,
        node,
        gpu,
        t,
        float(twin.rng.uniform(1, 8)),
        lambda r: logtext.cuda_error("launch_failure", r),
        "gpu_lost",
        entry,
    )


def ecc_dbe(twin: Twin, f: GpuFault, t: float) -> None:
    entry = truth_entry(twin, f, t, gpu_component(twin, f.node, f.gpu))
    double_bit_ecc(twin, f.node, f.gpu, t, entry)


def double_bit_ecc(twin: Twin, node: int, gpu: int, t: float, entry: dict[str, Any]) -> None:
    """Uncorrectable ECC: Xid 48 and 95, DBE counters and a pending row remap, the rank dies."""
    st = twin.state
    for name in ("ecc_dbe_vol", "ecc_dbe_agg", "remapped_uncorrectable"):
        st.counters[name][node, gpu] += 1
    st.counters["remap_pending"][node, gpu] = 1
    kernel_lines(
        twin,
        node,
        t,
        logtext.xid_lines(st.pci[gpu], 48, new_pid(twin))
        + logtext.xid_lines(st.pci[gpu], 95, new_pid(twin)),
    )
    on_job_gpu(
        twin,
        node,
        gpu,
        t,
        float(twin.rng.uniform(0.2, 3)),
        lambda r: logtext.cuda_error("ecc", r),
        "ecc_dbe",
        entry,
    )


def gsp_timeout(twin: Twin, f: GpuFault, t: float) -> None:
    """GSP firmware stops answering: Xid 119, NVML times out, the rank stalls silently."""
    entry = truth_entry(twin, f, t, gpu_component(twin, f.node, f.gpu))
    st = twin.state
    kernel_lines(twin, f.node, t, logtext.gsp_timeout_lines(f.gpu, st.pci[f.gpu], new_pid(twin)))
    st.nvml_error[(f.node, f.gpu)] = "NVML_ERROR_TIMEOUT"
    found = job_on_gpu(twin, f.node, f.gpu)
    if found is not None:
        job, rank = found
        stop_rank(job, rank)
        entry["effects"].append({"job": job.layout.job.id, "effect": "hang", "at_s": t})


def nvlink(twin: Twin, f: GpuFault, t: float) -> None:
    """NVLink errors: Xid 74, CRC/replay counters climbing, TP transfers slow on that GPU."""
    entry = truth_entry(twin, f, t, gpu_component(twin, f.node, f.gpu))
    st = twin.state
    kernel_lines(twin, f.node, t, logtext.xid_lines(st.pci[f.gpu], 74, None))
    end = t + (f.duration_s or twin.scenario.duration_s - t)
    ticking(twin, t, end, 1.0, lambda _t: _nvlink_errors(twin, f.node, f.gpu))
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


def nan(twin: Twin, f: GpuFault, t: float) -> None:
    """Silent data corruption: the job's loss turns NaN; per-rank grad norms show it first."""
    entry = truth_entry(twin, f, t, gpu_component(twin, f.node, f.gpu))
    found = job_on_gpu(twin, f.node, f.gpu)
    if found is not None:
        job, rank = found
        job.nan_from_step = job.step + 2
        job.nan_rank = rank
        entry["effects"].append({"job": job.layout.job.id, "effect": "nan", "at_s": t})


def precursor(twin: Twin, f: GpuFault, t: float) -> None:
    """Rising errors (memory, thermal or PCIe, per `style`) before a later hardware failure."""
    entry = truth_entry(
        twin,
        f,
        t,
        gpu_component(twin, f.node, f.gpu),
        failure_at_s=f.at_s,
        then=f.then,
        style=f.style,
        intensity=f.intensity,
    )
    st = twin.state
    every = max(10.0, twin.scenario.metrics_interval_s)

    def worsen(now: float) -> None:
        progress = min(1.0, (now - t) / max(f.at_s - t, 1.0))
        if precursor_step(st, twin.rng, f.node, f.gpu, progress, every, f.style, f.intensity):
            kernel_lines(twin, f.node, now, logtext.xid_lines(st.pci[f.gpu], 63, new_pid(twin)))

    ticking(twin, t, f.at_s, every, worsen)
    if f.then == "xid79":
        twin.at(f.at_s, lambda t2: fall_off_bus(twin, f.node, f.gpu, t2, entry))
    elif f.then == "ecc_dbe":
        twin.at(f.at_s, lambda t2: double_bit_ecc(twin, f.node, f.gpu, t2, entry))


def straggler(twin: Twin, f: StragglerFault, t: float) -> None:
    """One GPU slows down; thermal and clock causes show in its metrics, PCIe does not."""
    entry = truth_entry(
        twin, f, t, gpu_component(twin, f.node, f.gpu), slowdown=f.slowdown, cause=f.cause
    )
    st = twin.state
    n, g = f.node, f.gpu
    twin.fault_slow[n, g] = compute_slowdown(twin, n, [g], f.slowdown, f.relative_to)[g]
    entry["gpu_slowdown"] = round(float(twin.fault_slow[n, g]), 4)
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


def compute_slowdown(
    twin: Twin, node: int, gpus: list[int], slowdown: float, relative_to: str
) -> dict[int, float]:
    """Return each GPU's compute-time multiplier for a slowdown of its own time or the job's pace.

    Relative to the job: the GPU ends up `slowdown` x the compute time of the job's slowest
    other GPU (the pace the job already runs at), never faster than it was.
    """
    if relative_to == "gpu":
        return dict.fromkeys(gpus, slowdown)
    out = {}
    for g in gpus:
        found = job_on_gpu(twin, node, g)
        if found is None:
            out[g] = slowdown
            continue
        lay = found[0].layout
        others = ~((lay.rank_node == node) & np.isin(lay.rank_gpu, gpus))
        pace = float((1 / twin.speed[lay.rank_node[others], lay.rank_gpu[others]]).max())
        out[g] = max(slowdown, slowdown * pace * float(twin.speed[node, g]))
    return out


def host_slow(twin: Twin, f: NodeFault, t: float) -> None:
    """Every GPU of a host computes slower (CPU contention, a PCIe switch, host memory); only
    timing shows it."""
    gpus = list(range(twin.hw.gpus_per_node))
    entry = truth_entry(
        twin, f, t, {"type": "node", "node": twin.node_names[f.node]}, slowdown=f.slowdown
    )
    factors = compute_slowdown(twin, f.node, gpus, f.slowdown, f.relative_to)
    for g, factor in factors.items():
        twin.fault_slow[f.node, g] = factor
    entry["gpu_slowdown"] = round(max(factors.values()), 4)
    jobs = {found[0].layout.job.id for g in gpus if (found := job_on_gpu(twin, f.node, g))}
    entry["effects"].extend({"job": j, "effect": "slowdown", "at_s": t} for j in sorted(jobs))
    if f.duration_s:

        def recover(_t: float) -> None:
            twin.fault_slow[f.node, :] = 1.0

        twin.at(t + f.duration_s, recover)
