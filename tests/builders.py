"""Small builders for test events (real field names, plausible values)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ingest.schema import (
    GPU_METRIC_FIELDS,
    CollectiveProgress,
    CollectiveState,
    CommKind,
    Communicator,
    DiskSample,
    EventBase,
    GpuMetrics,
    GpuSample,
    HostMetrics,
    JobTopology,
    LogLine,
    LogSource,
    NicSample,
    ParallelLayout,
    RankPlacement,
    TrainStep,
)

T0 = datetime(2026, 11, 30, 12, 0, 0, 250_000, tzinfo=UTC)
_FLOATS = {n for n in GPU_METRIC_FIELDS if "float" in str(GpuSample.model_fields[n].annotation)}


def at(seconds: float) -> datetime:
    """Return T0 plus some seconds."""
    return T0 + timedelta(seconds=seconds)


def make_gpu(gpu: int, seed: int = 0, **fields: object) -> GpuSample:
    """Return a GPU sample with every DCGM field set (or overridden)."""
    values: dict[str, object] = {
        n: (40.0 + gpu + seed * 0.5 if n in _FLOATS else gpu + seed) for n in GPU_METRIC_FIELDS
    }
    values.update(fields)
    return GpuSample(
        gpu=gpu,
        uuid=f"GPU-{gpu:08x}-0000-0000-0000-{seed:012x}",
        pci_bus_id=f"00000000:{0x18 + gpu:02x}:00.0",
        **values,
    )  # type: ignore[arg-type]


def make_gpu_metrics(
    node: str = "n1", seconds: float = 0, gpus: int = 8, seed: int = 0
) -> GpuMetrics:
    """Return one node scrape of `gpus` GPUs."""
    return GpuMetrics(node=node, ts=at(seconds), gpus=[make_gpu(i, seed) for i in range(gpus)])


def make_host(node: str = "n1", seconds: float = 0) -> HostMetrics:
    """Return a host scrape with two NIC ports and one disk."""
    nics = [
        NicSample(
            nic=f"mlx5_{i}",
            port=1,
            state="ACTIVE" if i else "DOWN",
            phys_state="LinkUp",
            rate_gbps=400.0,
            rx_bytes=10**12 + i,
            tx_bytes=10**12 - i,
            symbol_errors=i,
            link_error_recovery=0,
            link_downed=i,
            rcv_errors=0,
            xmit_discards=3,
        )
        for i in range(2)
    ]
    return HostMetrics(
        node=node,
        ts=at(seconds),
        cpu_util=37.5,
        load1=12.25,
        mem_used_bytes=512 << 30,
        mem_total_bytes=2048 << 30,
        swap_used_bytes=0,
        disks=[DiskSample(mount="/", used_bytes=10 << 30, total_bytes=100 << 30)],
        nics=nics,
    )


def make_log(
    node: str = "n1",
    seconds: float = 0,
    seq: int = 0,
    line: str = "NVRM: Xid (PCI:0000:61:00): 79, pid=977823, GPU has fallen off the bus.",
    source: LogSource = LogSource.KERNEL,
) -> LogLine:
    """Return one log line (a real Xid 79 kernel line by default)."""
    return LogLine(node=node, ts=at(seconds), source=source, line=line, path="/dev/kmsg", seq=seq)


def make_step(job: str = "job-1", step: int = 1, rank: int | None = None) -> TrainStep:
    """Return a training-step record."""
    return TrainStep(
        job_id=job,
        step=step,
        rank=rank,
        ts=at(step),
        loss=2.5 - step * 1e-4,
        grad_norm=1.25,
        tokens_per_s=1.5e6,
        mfu=0.42,
        step_time_s=3.5,
        lr=3e-4,
        loss_scale=65536.0,
        node="n1" if rank is not None else None,
    )


def make_collective(
    job: str = "job-1",
    rank: int = 0,
    seq: int = 7,
    state: CollectiveState = CollectiveState.COMPLETED,
) -> CollectiveProgress:
    """Return one rank's progress record of one all_reduce."""
    return CollectiveProgress(
        job_id=job,
        rank=rank,
        node="n1",
        comm="dp:0",
        op="all_reduce",
        seq=seq,
        state=state,
        bytes=1 << 26,
        dtype="BFloat16",
        ts=at(seq),
        time_created=at(seq - 0.5),
        time_started=at(seq - 0.4),
        time_completed=at(seq - 0.1),
        duration_ms=300.0,
        timeout_ms=600_000.0,
        reporter="flight_recorder",
    )


def make_topology(job: str = "job-1", tp: int = 2, pp: int = 2, dp: int = 2) -> JobTopology:
    """Return a Megatron-style topology: TP innermost on a node, then DP, then PP."""
    world = tp * pp * dp
    ranks = [RankPlacement(rank=r, node=f"n{r // 8 + 1}", gpu=r % 8) for r in range(world)]
    comms = [
        Communicator(comm=f"tp:{i}", kind=CommKind.TP, ranks=list(range(i * tp, i * tp + tp)))
        for i in range(world // tp)
    ]
    comms.append(Communicator(comm="world", kind=CommKind.WORLD, ranks=list(range(world))))
    return JobTopology(
        job_id=job,
        ts=T0,
        world_size=world,
        layout=ParallelLayout(tp=tp, pp=pp, dp=dp),
        ranks=ranks,
        communicators=comms,
        scheduler="slurm",
        scheduler_job_id="4242",
    )


def one_of_each() -> list[EventBase]:
    """Return one event of every kind."""
    return [
        make_gpu_metrics(),
        make_host(),
        make_log(),
        make_step(),
        make_step(rank=3),
        make_collective(),
        make_topology(),
    ]


def nic_flap_scenario() -> dict[str, Any]:
    """Return a twin scenario: the job of `nic_down_scenario`, whose node-0002 port mlx5_1
    drops its link for 1-4 s every 30 s from 45 s while nodes report their ports every 30 s
    (at 0, 30, 60 s ...): no scrape finds the port down, only its link_downed counter rises."""
    return {
        **nic_down_scenario(),
        "duration_s": 240,
        "host_interval_s": 30,
        "faults": [{"kind": "nic_flap", "node": 2, "nic": 1, "at_s": 45, "period_s": 30}],
    }


def nic_down_scenario() -> dict[str, Any]:
    """Return a twin scenario: one 32-GPU job on four nodes; node-0002's port mlx5_1 goes
    down at 60 s; nodes report their ports every 5 s."""
    return {
        "seed": 3,
        "cluster": {"nodes": 6, "gpus_per_node": 8, "nodes_per_rack": 3},
        "jobs": [{"id": "j1", "tp": 8, "dp": 4, "step_time_s": 2.0}],
        "duration_s": 150,
        "host_interval_s": 5,
        "watchdog_timeout_s": 60,
        "faults": [{"kind": "nic_down", "node": 2, "nic": 1, "at_s": 60}],
    }
