"""The log lines the twin emits, in the shapes real machines print them.

Each format follows a real sample in ../shared/data (real_logs.jsonl labels are named per
function); the values (PCI ids, pids, ranks, sequence numbers) come from the simulation.
"""

from __future__ import annotations

import math
from datetime import datetime

from ingest.schema import TrainStep

# Xid detail texts after "NVRM: Xid (PCI:...): N, pid=..., name=..., "; shapes from the real
# lines of xid-13/31/63/79/94/119 and NVIDIA's catalog descriptions for the others.
_XID_DETAIL = {
    13: "Graphics Exception: ESR 0x50e730=0x107000e 0x50e734=0x20 0x50e728=0x4c1eb72 "
    "0x50e72c=0x174",
    31: "Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_11 faulted @ "
    "0x7f95_4afff000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
    "partition 6, subpartition 0.",
    63: "Row Remapper: New row marked for remapping, reset gpu to activate.",
    74: "NVLink: fatal error detected on link 7(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
    95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
}


def _pci_xid(pci_bus_id: str) -> str:
    """'00000000:18:00.0' -> '0000:18:00' (the form Xid lines use)."""
    domain, bus, rest = pci_bus_id.split(":")
    return f"{domain[-4:]}:{bus.lower()}:{rest.split('.')[0]}"


def kernel_prefix(ts: datetime, boot: datetime, host: str) -> str:
    """Return the prefix `dmesg --time-format iso` prints (as the agent reads it)."""
    return ts.strftime("%Y-%m-%dT%H:%M:%S,%f+00:00 ")


def xid_lines(pci_bus_id: str, xid: int, pid: int | None, process: str = "python") -> list[str]:
    """Return the kernel line(s) of one Xid (label xid-N in real_logs.jsonl)."""
    who = f"pid={pid}, name={process}, " if pid is not None else "pid='<unknown>', name=<unknown>, "
    return [f"NVRM: Xid (PCI:{_pci_xid(pci_bus_id)}): {xid}, {who}{_XID_DETAIL[xid]}"]


def xid79_lines(pci_bus_id: str, uuid: str) -> list[str]:
    """Return the lines a driver prints when a GPU falls off the bus (label xid-79)."""
    pci = _pci_xid(pci_bus_id)
    return [
        f"NVRM: GPU at PCI:{pci}: {uuid}",
        f"NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        f"NVRM: GPU {pci}.0: GPU has fallen off the bus.",
        "NVRM: A GPU crash dump has been created. If possible, please run",
        "NVRM: nvidia-bug-report.sh as root to collect this data before",
        "NVRM: the NVIDIA kernel module is unloaded.",
    ]


def gsp_timeout_lines(gpu: int, pci_bus_id: str, pid: int) -> list[str]:
    """Return a GSP heartbeat timeout then Xid 119 (labels gsp-timeout, xid-119)."""
    pci = _pci_xid(pci_bus_id)
    return [
        f"NVRM: GPU{gpu} _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 812751949 "
        "heartbeat 1899482 heartbeatWithOffsetMs 812745879 diff 6070 timeout 5200",
        f"NVRM: GPU{gpu} _kgspLogRpcTimeout: ********************************* GSP Timeout "
        "**********************************",
        f"NVRM: Xid (PCI:{pci}): 119, pid={pid}, name=python, Timeout waiting for RPC from GSP! "
        "Expected function 76 (GSP_RM_CONTROL) (0x20800157 0x0).",
    ]


def cuda_error(kind: str, rank: int) -> list[str]:
    """Return a rank's stderr for a CUDA failure (labels cuda-ecc, cuda-illegal-address)."""
    message = {
        "ecc": "CUDA error: uncorrectable ECC error encountered",
        "illegal_address": "CUDA error: an illegal memory access was encountered",
        "launch_failure": "CUDA error: unspecified launch failure",
    }[kind]
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/workspace/megatron/training.py", line 1204, in train_step',
        f"[rank{rank}]:     optimizer.step()",
        f"[rank{rank}]: RuntimeError: {message}",
        f"[rank{rank}]: CUDA kernel errors might be asynchronously reported at some other API "
        "call, so the stacktrace below might be incorrect.",
        f"[rank{rank}]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    ]


def _nccl(host: str, rank: int, gpu: int) -> str:
    pid = 20_000 + rank
    return f"{host}:{pid}:{pid + 93} [{gpu}]"


def nccl_ib_error(host: str, rank: int, gpu: int, nic: int) -> list[str]:
    """Return NCCL's lines when its IB transport fails (label nccl-ib-error)."""
    p = _nccl(host, rank, gpu)
    return [
        f"{p} transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
        f"10.{nic}.{rank % 250}.{(rank * 7) % 250}<53249> with error 12, opcode 32564, len 32564, "
        "vendor err 129 (Send)",
        f"{p} NCCL INFO transport/net.cc:1008 -> 6",
        f"{p} NCCL INFO proxy.cc:679 -> 6",
        f"{p} NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]",
        f"[rank{rank}]: RuntimeError: NCCL error: remote process exited or there was a network "
        "error, NCCL version 2.21.5",
        f"[rank{rank}]: ncclRemoteError: A call failed possibly due to a network error or a remote "
        "process exiting prematurely.",
    ]


def nccl_peer_closed(host: str, rank: int, gpu: int) -> list[str]:
    """Return a peer's NCCL lines when the other side died (label nccl-connection-closed)."""
    p = _nccl(host, rank, gpu)
    return [
        f"{p} misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
        f"{host}<55693>",
        f"{p} NCCL INFO misc/socket.cc:749 -> 6",
    ]


def watchdog_timeout(rank: int, seq: int, op: str, timeout_ms: int, ran_ms: int) -> list[str]:
    """Return PyTorch's NCCL watchdog lines for a timed-out collective (label nccl-timeout)."""
    return [
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=262144000, "
        f"NumelOut=262144000, Timeout(ms)={timeout_ms}) ran for {ran_ms} milliseconds before "
        "timing out.",
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:577] [Rank {rank}] Some NCCL operations have failed "
        "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
        "might run on corrupted/incomplete data.",
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:583] [Rank {rank}] To avoid data inconsistency, we "
        "are taking the entire process down.",
    ]


def child_failed(rank: int, ts: datetime, host: str) -> list[str]:
    """Return torchrun's summary when a worker fails (torch.distributed.elastic)."""
    return [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "pretrain_gpt.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {ts.strftime('%Y-%m-%d_%H:%M:%S')}",
        f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {rank % 8})",
        "  exitcode  : 1 (pid: 2200689)",
        "============================================================",
    ]


def user_exception(rank: int) -> list[str]:
    """Return an application exception on one rank, torchrun-prefixed."""
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/workspace/data/indexed_dataset.py", line 512, in __getitem__',
        f"[rank{rank}]:     sample = self._index[idx]",
        f"[rank{rank}]: KeyError: 'input_ids'",
    ]


def oom_kill_lines(pid: int) -> list[str]:
    """Return the kernel's OOM-killer lines (label host-oom-killer)."""
    return [
        f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
        f"task_memcg=/system.slice/slurmstepd.scope,task=python,pid={pid},uid=1000",
        f"Out of memory: Killed process {pid} (python) total-vm:249978204kB, anon-rss:212918388kB, "
        "file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:449772kB oom_score_adj:0",
        f"oom_reaper: reaped process {pid} (python), now anon-rss:0kB, file-rss:68664kB, "
        "shmem-rss:53172kB",
    ]


def sigkill_lines(rank: int) -> list[str]:
    """Return what torchrun prints when a worker was killed by SIGKILL."""
    return [
        f"[rank{rank}]: Signals.SIGKILL: 9",
        "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process "
        f"{2200689 + rank} closing signal SIGTERM",
        f"torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
        f"local_rank: {rank % 8} (pid: {2200689 + rank}) of binary: /usr/bin/python",
    ]


def disk_full_lines(rank: int) -> list[str]:
    """Return a checkpoint save failing with ENOSPC (label host-disk-full)."""
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/workspace/megatron/checkpointing.py", line 402, in '
        "save_checkpoint",
        f"[rank{rank}]:     torch.save(state_dict, checkpoint_name)",
        f"[rank{rank}]: OSError: [Errno 28] No space left on device",
    ]


def megatron_iteration(step: TrainStep, ts: datetime, total: int = 500_000) -> str:
    """Return Megatron-LM's training_log line for one iteration (labels nan-loss, loss-spike)."""
    loss = "nan" if step.loss is None or math.isnan(step.loss) else f"{step.loss:.6E}"
    grad = (
        "nan" if step.grad_norm is None or math.isnan(step.grad_norm) else f"{step.grad_norm:.3f}"
    )
    skipped = 1 if step.skipped else 0
    nan_iters = 1 if loss == "nan" else 0
    return (
        f" [{ts.strftime('%Y-%m-%d %H:%M:%S')}] iteration {step.step:>8}/{total:>8} | "
        f"consumed samples: {step.step * 1024:>12} | elapsed time per iteration (ms): "
        f"{(step.step_time_s or 0) * 1000:.1f} | learning rate: {step.lr or 0:.3E} | "
        f"global batch size: {1024:>5} | lm loss: {loss} | loss scale: {step.loss_scale:.1f} | "
        f"grad norm: {grad} | number of skipped iterations: {skipped:>3} | "
        f"number of nan iterations: {nan_iters:>3} |"
    )
