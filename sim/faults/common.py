"""Shared machinery of fault injection: ground truth, crashes, kernel lines, scheduling."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ingest.schema import LogSource
from sim import logtext
from sim.jobs import JobRun
from sim.twin import KERNEL_PATH, Twin


def truth_entry(
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


def gpu_component(twin: Twin, node: int, gpu: int) -> dict[str, Any]:
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
            stderr_path(job),
            job=lay.job.id,
            rank=rank,
        )
    peers = peers_of(job, set(culprits))
    for rank in peers[:64]:
        node = int(lay.rank_node[rank])
        twin.log(
            node,
            t + 0.5,
            LogSource.NCCL,
            logtext.nccl_peer_closed(twin.node_names[node], rank, int(lay.rank_gpu[rank])),
            stderr_path(job),
            job=lay.job.id,
            rank=rank,
        )
    first = min(culprits) if culprits else 0
    twin.log(
        int(lay.rank_node[0]),
        t + 2,
        LogSource.TRAIN_STDERR,
        logtext.child_failed(first, twin.ts(t + 1), twin.node_names[int(lay.rank_node[first])]),
        stderr_path(job),
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


def stderr_path(job: JobRun) -> str:
    return f"/var/log/train/{job.layout.job.id}/stderr.err"


def peers_of(job: JobRun, culprits: set[int]) -> list[int]:
    lay = job.layout
    out: set[int] = set()
    for members in lay.comm_ranks:
        if culprits & set(members.tolist()):
            out |= set(members.tolist())
    return sorted(out - culprits)


def kernel_lines(twin: Twin, node: int, t: float, lines: list[str]) -> None:
    prefixed = [
        logtext.kernel_prefix(twin.ts(t), twin.boot, twin.node_names[node]) + line for line in lines
    ]
    twin.log(node, t, LogSource.KERNEL, prefixed, KERNEL_PATH)


def on_job_gpu(
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


def ticking(
    twin: Twin, start: float, end: float, every: float, action: Callable[[float], None]
) -> None:
    def tick(t: float) -> None:
        action(t)
        if t + every <= end:
            twin.at(t + every, tick)

    twin.at(start, tick)


def stop_rank(job: JobRun, rank: int) -> None:
    """Make a rank stop arriving at collectives from its current step on."""
    absent = job.absent if job.absent is not None else np.zeros(job.grid_shape, bool)
    absent[job.rank_coords(rank)] = True
    job.absent = absent
    job.current = None


def new_pid(twin: Twin) -> int:
    """Return a plausible process id."""
    return int(twin.rng.integers(1000, 4_000_000))
