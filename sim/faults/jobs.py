"""Job and host faults: hangs, application errors, host memory and disk."""

from __future__ import annotations

import numpy as np

from sim import logtext
from sim.faults.common import (
    crash,
    crash_at,
    gpu_component,
    kernel_lines,
    new_pid,
    stop_rank,
    truth_entry,
)
from sim.jobs import JobRun
from sim.scenario import JobFault, NodeFault, RankFault
from sim.twin import Twin


def hang(twin: Twin, f: RankFault, t: float) -> None:
    """One rank stops progressing silently: no error, its communicators stall, peers wait."""
    job = next(j for j in twin.jobs if j.layout.job.id == f.job)
    lay = job.layout
    gpu = gpu_component(twin, int(lay.rank_node[f.rank]), int(lay.rank_gpu[f.rank]))
    entry = truth_entry(twin, f, t, {**gpu, "type": "rank", "job": f.job, "rank": f.rank})
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


def user_error(twin: Twin, f: JobFault, t: float) -> None:
    """An application exception on every rank: the job's fault, not the hardware's."""
    job = next(j for j in twin.jobs if j.layout.job.id == f.job)
    entry = truth_entry(twin, f, t, {"type": "job", "job": f.job})
    lines = {r: logtext.user_exception(r) for r in range(min(job.layout.world, 256))}
    crash(twin, job, t, culprits=lines, cause="user_error", entry=entry)


def app_xid(twin: Twin, f: JobFault, t: float) -> None:
    """An application bug trips Xid 13/31 on many GPUs at once; the job dies."""
    job = next(j for j in twin.jobs if j.layout.job.id == f.job)
    entry = truth_entry(twin, f, t, {"type": "job", "job": f.job})
    lay = job.layout
    xid = int(twin.rng.choice([13, 31]))
    for node in lay.nodes.tolist():
        gpus = lay.rank_gpu[lay.rank_node == node].tolist()
        lines: list[str] = []
        for g in gpus:
            lines += logtext.xid_lines(twin.state.pci[g], xid, new_pid(twin))
        kernel_lines(twin, node, t, lines)
    culprits = {r: logtext.cuda_error("illegal_address", r) for r in range(min(lay.world, 256))}
    crash(twin, job, t + 1, culprits=culprits, cause="app_xid", entry=entry)


def host_oom(twin: Twin, f: NodeFault, t: float) -> None:
    """The host runs out of memory; the OOM killer kills a rank; the job fails."""
    entry = truth_entry(twin, f, t, {"type": "node", "node": twin.node_names[f.node]})
    twin.state.mem_used[f.node] = twin.state.mem_total - (64 << 20)
    kernel_lines(twin, f.node, t, logtext.oom_kill_lines(new_pid(twin)))
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


def disk_full(twin: Twin, f: NodeFault, t: float) -> None:
    """The local disk fills; the next checkpoint write fails with ENOSPC."""
    entry = truth_entry(twin, f, t, {"type": "node", "node": twin.node_names[f.node]})
    twin.state.disk_used[f.node] = twin.state.disk_total
    for job in twin.jobs:
        ranks = np.flatnonzero(job.layout.rank_node == f.node).tolist()
        if ranks and job.status in ("running", "stalled"):
            delay = float(twin.rng.uniform(10, 60))
            lines = {ranks[0]: logtext.disk_full_lines(ranks[0])}
            crash_at(twin, t + delay, job, lines, "disk_full", entry)
