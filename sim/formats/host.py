"""Host faults as the kernel log and training stderr show them: OOM kills, full and failing disks.

- Kernel OOM killer: the ``oom-kill:``, ``Out of memory: Killed process`` and ``oom_reaper:``
  lines of real_logs host-oom-killer (QAConv#19). Only the global-OOM form is real here; the
  cgroup form (``Memory cgroup out of memory: ...``) had no sample, so it is not offered.
- A cgroup/Slurm CPU-OOM kill shows only ``Killed`` on the job's stdout (real_logs host-cpu-oom).
- ``OSError: [Errno N] text[: 'path']``: Python's own ``OSError.__str__`` (real_logs
  host-disk-full, host-fs-io-error, host-fs-nfs-error); errno texts are Linux's strerror.
- torch.save on a full disk (public_lines torch-save-disk-full) and a DataLoader worker's bus
  error when /dev/shm is exhausted (real_logs host-bus-error-shm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

LINUX_STRERROR: Mapping[int, str] = {
    5: "Input/output error",
    14: "Bad address",
    28: "No space left on device",
}
"""strerror texts of the errnos with a real training-stderr sample."""


@dataclass(frozen=True)
class OomVictim:
    """The process the OOM killer picked, with its memory in kB as the kernel reports it."""

    pid: int
    process: str
    uid: int
    total_vm_kb: int
    anon_rss_kb: int
    file_rss_kb: int
    shmem_rss_kb: int
    pgtables_kb: int
    oom_score_adj: int = 0


def oom_kill_lines(
    victim: OomVictim,
    task_memcg: str = "/",
    mems_allowed: str = "0",
    cpuset: str = "/",
    reaped_file_rss_kb: int | None = None,
    reaped_shmem_rss_kb: int | None = None,
) -> list[str]:
    """Return the kernel's three OOM-kill lines for a global OOM (real_logs host-oom-killer).

    The reaper reports what is left after the kill; by default the victim's file and shmem RSS.
    """
    v = victim
    file_left = v.file_rss_kb if reaped_file_rss_kb is None else reaped_file_rss_kb
    shmem_left = v.shmem_rss_kb if reaped_shmem_rss_kb is None else reaped_shmem_rss_kb
    return [
        f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset={cpuset},"
        f"mems_allowed={mems_allowed},global_oom,task_memcg={task_memcg},task={v.process},"
        f"pid={v.pid},uid={v.uid}",
        f"Out of memory: Killed process {v.pid} ({v.process}) total-vm:{v.total_vm_kb}kB, "
        f"anon-rss:{v.anon_rss_kb}kB, file-rss:{v.file_rss_kb}kB, shmem-rss:{v.shmem_rss_kb}kB, "
        f"UID:{v.uid} pgtables:{v.pgtables_kb}kB oom_score_adj:{v.oom_score_adj}",
        f"oom_reaper: reaped process {v.pid} ({v.process}), now anon-rss:0kB, "
        f"file-rss:{file_left}kB, shmem-rss:{shmem_left}kB",
    ]


def shell_killed_line() -> str:
    """Return what a job's stdout shows when its process is SIGKILLed (real_logs host-cpu-oom)."""
    return "Killed"


def os_error_line(errno: int, filename: str | None = None, exc_type: str = "OSError") -> str:
    """Return a Python ``OSError: [Errno 28] No space left on device: '/ckpt/x'`` line."""
    text = f"{exc_type}: [Errno {errno}] {LINUX_STRERROR[errno]}"
    return text if filename is None else f"{text}: {filename!r}"


def torch_save_disk_full_lines(file_index: int, pos: int, expected: int) -> list[str]:
    """Return the two RuntimeErrors torch.save raises when the disk fills mid-write."""
    return [
        "RuntimeError: [enforce fail at inline_container.cc:858] . PytorchStreamWriter failed "
        f"writing file data/{file_index}: file write failed",
        f"RuntimeError: [enforce fail at inline_container.cc:664] . unexpected pos {pos} vs "
        f"{expected}",
    ]


def dataloader_bus_error_line(worker_pid: int) -> str:
    """Return the DataLoader error for a worker killed by SIGBUS (shared memory exhausted)."""
    return (
        f"RuntimeError: DataLoader worker (pid {worker_pid}) is killed by signal: Bus error. It "
        "is possible that dataloader's workers are out of shared memory. Please try to raise "
        "your shared memory limit."
    )
