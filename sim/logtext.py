"""The twin's log lines: the twin's values poured into the real formats of `sim.formats`.

This module decides which real message each simulated event produces (and with which ids);
`sim.formats` owns the text of every message, each copied from a recorded real line.
"""

from __future__ import annotations

import math
from datetime import datetime

from ingest.schema import TrainStep
from sim.formats import cuda, gpu_events, host, nccl, pyspy, traceback, training, watchdog, xid
from sim.formats.kernel import kernel_prefix as _kernel_prefix

SCRIPT = "pretrain_gpt.py"
_TRAIN_FRAMES = (
    traceback.PyFrame("/workspace/megatron/training.py", 1204, "train_step", "optimizer.step()"),
)
_USER_FRAMES = (
    traceback.PyFrame(
        "/workspace/megatron/training.py", 1187, "train_step", "batch = next(data_iterator)"
    ),
    traceback.PyFrame(
        "/workspace/data/indexed_dataset.py", 512, "__getitem__", "sample = self._index[idx]"
    ),
)


def _pid(rank: int) -> int:
    return 2_200_000 + rank


def kernel_prefix(ts: datetime, boot: datetime, host_name: str) -> str:
    """Return the prefix of a kernel line as the agent reads it (`dmesg --time-format iso`)."""
    return _kernel_prefix(ts, "iso", boot, host_name)


def xid_lines(pci_bus_id: str, code: int, pid: int | None, process: str = "python") -> list[str]:
    """Return the kernel line of one Xid, attributed as the driver does for that code."""
    return [xid.xid_event(pci_bus_id, code, pid, process)]


def xid79_lines(pci_bus_id: str, uuid: str) -> list[str]:
    """Return the driver's lines when a GPU falls off the bus."""
    return gpu_events.fallen_off_bus_lines(pci_bus_id, uuid)


def gsp_timeout_lines(gpu: int, pci_bus_id: str, pid: int) -> list[str]:
    """Return a GSP heartbeat timeout sequence followed by its Xid 119."""
    return [
        *gpu_events.gsp_timeout_lines(gpu, 812_751_949, 1_899_482, 24_105_122),
        xid.xid_event(pci_bus_id, 119, pid, "python"),
    ]


def cuda_error(kind: str, rank: int) -> list[str]:
    """Return a rank's traceback for a CUDA failure (ecc, illegal_address, launch_failure)."""
    lines = traceback.python_traceback(_TRAIN_FRAMES, cuda.cuda_error_lines(kind)[0])
    return traceback.rank_prefixed([*lines, *cuda.cuda_error_lines(kind)[1:]], rank)


def _thread(host_name: str, rank: int, gpu: int) -> nccl.NcclThread:
    return nccl.NcclThread(host_name, _pid(rank), _pid(rank) + 93, gpu)


def nccl_ib_error(host_name: str, rank: int, gpu: int, nic: int) -> list[str]:
    """Return NCCL's IB completion error and the abort it leads to, on one rank."""
    thread = _thread(host_name, rank, gpu)
    peer = f"10.{nic}.{rank % 250}.{(rank * 7) % 250}"
    ib = nccl.ib_completion_error_lines(thread, peer, 53249)
    last_error = ib[0].split("NCCL WARN ", 1)[1]
    return [*ib, *nccl.dist_backend_error_lines("remote", "2.21.5", last_error, rank=rank)]


def nccl_peer_closed(host_name: str, rank: int, gpu: int) -> list[str]:
    """Return a peer's NCCL lines when the other side of its connection died."""
    return nccl.connection_closed_lines(
        _thread(host_name, rank, gpu), host_name, 55693, 0x7F4774CC9620 + rank
    )


def nccl_connect_retry(host_name: str, rank: int, gpu: int) -> str:
    """Return the benign bootstrap retry NCCL logs while a peer is not listening yet."""
    return nccl.connect_retry_line(_thread(host_name, rank, gpu))


def watchdog_timeout(
    ts: datetime, rank: int, seq: int, op: str, timeout_ms: int, ran_ms: int
) -> list[str]:
    """Return one rank's PyTorch NCCL watchdog timeout report."""
    work = watchdog.WorkNccl(seq, op, 262_144_000, 262_144_000, timeout_ms)
    return watchdog.watchdog_timeout_lines(ts, rank, work, ran_ms, seq, seq - 1)


def child_failed(rank: int, ts: datetime, host_name: str) -> list[str]:
    """Return torchrun's ChildFailedError summary naming the first failed rank."""
    return traceback.child_failed_lines(SCRIPT, ts, host_name, rank, rank % 8, 1, _pid(rank))


def user_exception(rank: int) -> list[str]:
    """Return an application exception on one rank (the job's bug, not the hardware's)."""
    return traceback.user_exception_lines(rank, _USER_FRAMES, "KeyError", "'input_ids'")


def oom_kill_lines(pid: int) -> list[str]:
    """Return the kernel's OOM-killer lines for a training process."""
    victim = host.OomVictim(pid, "python", 1000, 249_978_204, 212_918_388, 68_668, 53_352, 449_772)
    return host.oom_kill_lines(
        victim, task_memcg="/system.slice/slurmstepd.scope", mems_allowed="0-1"
    )


def sigkill_lines(rank: int, ts: datetime) -> list[str]:
    """Return torchrun's report of a worker killed by SIGKILL."""
    return [
        traceback.elastic_failed_line(ts, rank % 8, _pid(rank), -9, "/usr/bin/python", 2_199_000)
    ]


def disk_full_lines(rank: int) -> list[str]:
    """Return a checkpoint save failing on a full disk."""
    return traceback.rank_prefixed(
        [*host.torch_save_disk_full_lines(3, 1_835_008, 2_097_152), host.os_error_line(28)], rank
    )


def megatron_checkpoint(iteration: int, job: str, tp: int, pp: int) -> list[str]:
    """Return Megatron-LM rank 0's lines for one checkpoint save of a job."""
    return training.megatron_checkpoint_lines(iteration, f"/checkpoints/{job}", tp, pp)


def megatron_iteration(step: TrainStep, ts: datetime, total: int = 500_000) -> str:
    """Return Megatron-LM's training_log line for one step."""
    nan = step.loss is None or math.isnan(step.loss)
    losses = {"lm loss": float("nan") if nan else float(step.loss or 0.0)}
    grad = None if step.grad_norm is None or math.isnan(step.grad_norm) else step.grad_norm
    return training.megatron_iteration_line(
        training.MegatronIteration(
            iteration=step.step,
            train_iters=total,
            consumed_samples=step.step * 1024,
            elapsed_ms=(step.step_time_s or 0.0) * 1000,
            learning_rate=step.lr or 0.0,
            global_batch_size=1024,
            losses=losses,
            loss_scale=step.loss_scale or 1.0,
            grad_norm=grad,
            skipped=int(step.skipped),
            nan=int(nan),
        ),
        ts,
    )


def stack_dump(rank: int, state: str) -> str:
    """Return `py-spy dump` of a rank: computing, waiting in a collective, or stalled on data."""
    stack = {
        "compute": pyspy.COMPUTE_STACK,
        "waiting": pyspy.ALL_REDUCE_WAIT_STACK,
        "stalled": pyspy.DATALOADER_STACK,
    }[state]
    status = "idle" if state == "waiting" else "active"
    thread = pyspy.rank_main_thread(_pid(rank), stack, status)  # type: ignore[arg-type]
    return pyspy.pyspy_dump(
        _pid(rank),
        f"/usr/bin/python -u {SCRIPT} --local_rank={rank % 8}",
        "3.10.12",
        "/usr/bin/python3.10",
        [thread],
    )
