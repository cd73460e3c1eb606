"""Host rules: the OOM killer, machine checks, disk and NFS errors, OSError errnos (PCIe's
errors are rules_pcie's, a BMC's event log rules_bmc's, spliced in here in precedence order).

Patterns come from real lines: real_logs host-* (OOM killer, ``Killed``, ENOSPC, EIO, EFAULT,
the DataLoader bus error), public_lines torch-save-disk-full, and the kernel lines quoted in
tests/fixtures/explain/public_host_lines.jsonl (MCE/EDAC, AER, blk_update_request, nfs). How many
memory errors make a fault is ``memory_counts``'s to judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from diagnosis.catalog import Verdict
from diagnosis.explain.memory_counts import dimm_summary, error_counts, mc_status
from diagnosis.explain.rules import (
    Rule,
    gpu_hardware,
    host_hardware,
    host_storage,
    rule,
    unless_denied,
    verdict,
)
from diagnosis.explain.rules_bmc import BMC_RULES
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA, APP = B.INFRASTRUCTURE, B.APPLICATION


_RDMA_STACK = re.compile(
    r"\bUCX\b|\bucp_|\bpml_ucx|\bibv_\w+|\bmd\[\d+\]=|\bmlx5_\d|\bverbs\b|NET/(?:OFI|IB)\b"
    r"|\blibfabric\b|\bfi_\w+\(|\bfi_enable|\brdma_\w+:|\bprov_errno\b|\bprov/\w+/src/"
    r"|\bbtl_openib\w*|\berror creating qp\b"
)
"""Words of the RDMA stack's own lines: an EIO there is a registration or a send failing."""


def _memory_error(m: re.Match[str]) -> Verdict | None:
    """Return a host memory error, unless the line is the RDMA stack's (rules_rdma reads those)."""
    if _RDMA_STACK.search(m.string):
        return None
    return verdict(C.HOST_MEMORY, APP, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.7)


def _io_error(m: re.Match[str]) -> Verdict | None:
    """Return a storage error, unless the line is the RDMA stack's (rules_rdma reads those)."""
    if _RDMA_STACK.search(m.string):
        return None
    return host_storage(S.ERROR, A.CAPTURE_DIAGNOSTICS, 0.8)


_MEMORY = verdict(C.HOST_MEMORY, APP, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.9)

GPU_NAMED = re.compile(r"\[10de:|\bNVIDIA\b|\bgpu", re.IGNORECASE)
"""A line that names a GPU (NVIDIA's PCI vendor id, its name): a PCIe link of the GPU's."""


def _uncorrected(m: re.Match[str]) -> Verdict:
    """Return the host's uncorrected error, or the GPU's where an uncorrectable ECC error is
    said of a GPU (`one GPU on the host is abnormal due to Uncorrectable ECC Error`)."""
    if m["ecc"] and GPU_NAMED.search(m.string):
        return gpu_hardware(S.CRITICAL, A.ISOLATE_GPU, 0.7)
    return host_hardware(S.CRITICAL, A.ISOLATE_NODE, 0.85)


INJECTED_RULE = "host.memory_failure_injected"
THROTTLED_RULE = "host.cpu_throttled"
COOLED_RULE = "host.cpu_cooled"
SCSI_ABORT_RULE = "host.scsi_abort"
FILLED_RULE = "host.filled_on_purpose"
EXPLAINED_BY = {
    "host.disk_full": frozenset({FILLED_RULE}),
    "host.page_offlined": frozenset({INJECTED_RULE}),
    "host.mce": frozenset({THROTTLED_RULE, COOLED_RULE}),
    "kernel.hung_task": frozenset({SCSI_ABORT_RULE}),
}
"""A page taken offline in an input that shows memory failures injected (a test); machine check
events logged beside the CPU's thermal throttling, ongoing or ended (older kernels log the
throttle's interrupt as one). Whether a throttle ended is `CpuHeat`'s to say. Tasks hung beside
a disk whose commands the kernel aborted wait on that disk: the storage is the incident. A disk
or a pool filled on purpose (`filled and written until it broke`) is full by the test's design."""

_CPU_SCOPE = re.compile(r"\bCPU(\d+): (Package|Core) temperature")


@dataclass
class CpuHeat:
    """Which CPUs' packages or cores an input leaves throttled: a throttle ends with a later
    `temperature/speed normal` of the same CPU and scope (another CPU's ends nothing)."""

    hot: set[tuple[str, str]] = field(default_factory=set)
    cooled: bool = False

    def feed(self, rule_id: str, body: str) -> None:
        """Read a line the throttle or the cooled rule matched."""
        m = _CPU_SCOPE.search(body)
        if m is None:
            return
        if rule_id == COOLED_RULE:
            self.hot.discard((m[1], m[2]))
            self.cooled = True
        else:
            self.hot.add((m[1], m[2]))

    def ended(self) -> bool:
        """Whether every throttle the input showed was said to end."""
        return self.cooled and not self.hot


KERNEL_RULES: tuple[Rule, ...] = (
    rule(
        "host.oom_killer",
        r"Out of memory(?: and no killable processes)?: Kill(?:ed)? process|oom-kill:constraint="
        r"|oom_reaper: reaped process|Memory cgroup out of memory|invoked oom-killer"
        r"|\boom_kill_process\b|\bout_of_memory(?:\.part\.\d+)?\+0x|mem_cgroup_out_of_memory"
        r"|\[ pid \]\s+uid\s+tgid\s+total_vm\s+rss|Tasks state \(memory values in pages\)"
        r"|^Killed process \d+ \(.*\) total-vm:|Memory cgroup stats for /"
        r"|\bkilled as a result of limit of /"
        r"|\bmemory(?:\+swap)?: usage \d+kB, limit \d+kB, failcnt \d+"
        # Kubernetes (kubelet's pod and node events, a container's last state) and the
        # userspace OOM killer (systemd-oomd)
        r"|\b(?:Cgroup|System) OOM encountered, victim process|\bReason:\s+OOMKilled\b"
        r"|\bOOMKilled\b|systemd-oomd killed \d+ process|\boomd attempting to kill\b"
        r"|\bsystemd-oomd(?:\[\d+\])?: Killed /\S+"
        r"|\bKilled \S+ due to memory pressure\b"
        # Slurm's step daemon counting the cgroup's OOM kills
        r"|\bDetected [1-9]\d* oom[-_ ]kill event|killed by the cgroup out-of-memory handler"
        # the node's own OOM killer as kubelet reports it; batch schedulers' memory kills
        # (Slurm, LSF, PBS Pro and Torque)
        r"|\bSystemOOM\b|\bSystem OOM encountered\b|Exceeded job memory limit"
        r"|TERM_MEMLIMIT: job killed after reaching LSF memory usage limit"
        r"|PBS: job killed: v?mem \d+\w* exceeded limit \d+"
        # a panic the OOM killer asked for (panic_on_oom), no task left to kill; systemd's unit
        # result, earlyoom's kills, docker's event, Ray's memory monitor
        r"|Kernel panic - not syncing: (?:Out of memory|System is deadlocked on memory)"
        r"|\bOut of memory and no killable processes"
        r"|\bhas been killed by the OOM killer\b|\bFailed with result 'oom-kill'"
        r"|\bearlyoom(?:\[\d+\])?: (?:low memory!|sending SIG(?:TERM|KILL) to process)"
        r"|\bcontainer oom [0-9a-f]{64}\b"
        r"|\bray\.exceptions\.OutOfMemoryError\b|\bnode running low on memory\b"
        # Talos' userspace OOM controller
        r"|Sending SIGKILL to cgroup\b.*\bOOMController\b"
        # Dask's nanny restarting a worker past its memory budget
        r"|\bdistributed\.nanny\S* - WARNING - Worker\b[^\n]{0,60}?\bexceeded \d+% memory budget\b",
        (
            *("systemoom", "system oom", "exceeded job memory", "term_memlimit", "pbs: job killed"),
            *("kernel panic", "oom killer", "earlyoom", "container oom", "outofmemoryerror"),
            *("running low on memory", "sending sigkill to cgroup", "memory budget"),
            "out of memory",
            "oom-kill",
            "oom_reaper",
            "oom-killer",
            "oom_kill",
            "out_of_memory",
            "[ pid ]",
            "tasks state",
            "killed process",
            "memory cgroup stats",
            "killed as a result of limit",
            "memory: usage",
            "memory+swap: usage",
            "oom encountered",
            "oomkilled",
            "oomd",
            "due to memory pressure",
            "out-of-memory handler",
        ),
        "The kernel OOM killer ended a process, in every phrasing the kernel has used (Killed "
        "/ Kill process ... or sacrifice child, cgroup, oom-kill constraint, oom_reaper, the "
        "stack frames, the task dump header, and the cgroup v1 report lines of "
        "mm/memcontrol.c: 'Task in ... killed as a result of limit of ...', 'memory: usage "
        "NkB, limit NkB, failcnt N'), Kubernetes' OOM events and OOMKilled state, and "
        "systemd-oomd's kills under memory pressure. Blame application: the victim is the largest "
        "consumer, in practice the job (data loaders, pinned buffers); debatable.",
        _MEMORY,
    ),
    rule(
        "host.mce_uncorrected",
        r"\[Hardware Error\]: (?:Uncorrected|Fatal)|mce: Uncorrected hardware memory error"
        r"|Memory error not recovered|EDAC MC\d+: \d+ UE |EDAC MC\d+: UE page 0x"
        # mce/core.c: an exception in progress, its severity; mcelog's and rasdaemon's records
        r"|\[Hardware Error\]: (?:CPU \d+: Machine Check Exception:|Machine check: )"
        r"|Uncorrected hardware memory error in user-access|^\s*Uncorrected error\s*$"
        # a BMC's system event log (Supermicro, HPE iLO, ipmitool): asserted, not deasserted
        r"|\b(?P<ecc>Uncorrectable (?:ECC|Memory Error))\b(?![^\n]*\bDeassert)"
        r"|^\s*Processor context corrupt\s*$|\b\d+ (?:Uncorrected|Fatal) errors?:"
        r"|\bKernel panic: CPU context corrupt\b"
        # VMware ESXi's vmkernel (`Machine Check Exception on PCPU12 in world ...`, its purple
        # screen's `System has encountered a Hardware Error`, an SRAR machine check)
        r"|\bMachine Check Exception on PCPU\w*|\bSystem has encountered a Hardware Error\b"
        r"|\bUncorrectable/recoverable memory error in world\b|\bMCA: \d+: SRAR Excp\b"
        # ras-mc-ctl --summary: a DIMM's uncorrected errors
        r"|\bUncorrected on DIMM Label\(s\):[^\n]*\berrors: [1-9]",
        (
            *("hardware error", "memory error", "edac", "uncorrected", "context corrupt"),
            *("fatal", "uncorrectable", "machine check exception on", "srar excp"),
        ),
        "An uncorrected machine check or DIMM error: the host's CPU or memory failed (an "
        "uncorrectable ECC error said of a GPU is the GPU's).",
        judge=_uncorrected,
    ),
    *BMC_RULES,
    rule(
        "host.gpu_hardware_error",
        # a GPU driver's own report of a hardware error (amdgpu's RAS and ACA records), not the
        # CPU's or the memory's
        r"\bamdgpu \S+: (?:\{\d+\})?(?:uncorrectable hardware error\b|\[Hardware Error\])",
        ("amdgpu",),
        "A GPU driver reports a hardware error on its GPU (amdgpu's uncorrectable RAS event, "
        "its Accelerator Check Architecture records): the GPU, not the host's CPU or memory.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.6),
    ),
    rule(
        THROTTLED_RULE,
        # therm_throt.c (`mce: ` before it on older kernels)
        # (`Core temperature is above threshold, cpu clock is throttled` since Linux 5.6)
        r"\bCPU\d+: (?:Package|Core) temperature (?:is )?above threshold, "
        r"cpu clock (?:is )?throttled",
        ("above threshold",),
        "The CPU throttled for heat: a cooling problem while it lasts, no fault once a later "
        "line says the same CPU's package or core is normal again (CpuHeat).",
        host_hardware(S.WARNING, A.MONITOR, 0.6),
    ),
    rule(
        COOLED_RULE,
        r"\bCPU\d+: (?:Package|Core) temperature/speed normal\b",
        ("temperature/speed normal",),
        "The CPU's temperature is back to normal after a thermal throttle (therm_throt.c).",
        verdict(C.BENIGN, B.UNKNOWN, K.NODE, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "host.mce",
        r"Machine check events logged|\[Hardware Error\]|EDAC MC\d+: \d+ CE |mce: \["
        # rasdaemon's ras-mc-ctl summaries, mcelog's threshold trigger, the CPU's thermal
        # throttling (therm_throt.c)
        r"|\bCorrected error\(s\): memory \w+ error\b|\berror: Corrected error, no action required"
        r"|\bCorrected memory errors on page \S+ exceed threshold"
        # mcelog's header over each decoded record (old and new spellings)
        r"|\bHardware event\. This is not a software error\b"
        r"|\bHARDWARE ERROR\. This is \*NOT\* a software problem\b",
        (
            *("machine check", "hardware error", "edac", "mce: [", "corrected error"),
            *("corrected memory errors", "hardware event"),
        ),
        "A machine check was logged (corrected or deferred unless an uncorrected line follows) "
        "or corrected DIMM errors passed their threshold. Beside the CPU's thermal throttling "
        "the events logged are the throttle's (EXPLAINED_BY).",
        host_hardware(S.WARNING, A.MONITOR, 0.6),
    ),
    rule(
        "host.mc_status",
        r"\b(?:IA32_)?MC\d+_STATUS\s*[=:]\s*0x(?P<status>[0-9A-Fa-f]{16})\b",
        ("_status",),
        "A machine-check bank's status register holds an error (its VAL bit), uncorrected when "
        "its UC bit is set: the CPU, its caches or the memory behind them failed.",
        judge=mc_status,
    ),
    rule(
        "host.dimm_summary",
        r"\b(?P<kind>Corrected|Uncorrected) on DIMM Label\(s\): .*\berrors: (?P<n>\d+)"
        # edac-util -v's csrow counts
        r"|\bcsrow\d+: (?:\S+: )?(?P<n2>\d+) (?P<kind2>Uncorrected|Corrected) Errors\b"
        # ras-mc-ctl --error-count's table: a DIMM's label, its CE, its UE
        r"|^\s*(?P<label>\S*DIMM\S*)\s+(?P<ce_row>\d+)\s+(?P<ue_row>\d+)\s*$",
        ("on dimm label", "errors", "dimm"),
        "rasdaemon's or edac-util's counts of a DIMM's memory errors: uncorrected ones, or "
        "corrected ones past ten days' worth of mcelog's threshold (the counts have no "
        "window), are a DIMM to replace.",
        judge=dimm_summary,
        flags=re.MULTILINE,
    ),
    rule(
        INJECTED_RULE,
        r"\bInjecting memory failure\b|\bhwpoison[\w-]*\s+(?:injection|test)|\bmce-inject\b",
        ("injecting memory failure", "hwpoison", "mce-inject"),
        "A memory failure injected on purpose (the kernel's hwpoison injector, mce-inject): a "
        "test; the pages it takes offline are no fault (EXPLAINED_BY).",
        verdict(C.BENIGN, INFRA, K.NODE, S.INFO, A.NONE, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "host.page_offlined",
        # the kernel's corrected-error collector (drivers/ras/cec.c) taking a page with too
        # many corrected errors offline, and mm/memory-failure.c acting on a page's failure
        r"\bRAS: Soft-offlining pfn: 0x[0-9a-f]+"
        r"|\bMemory failure: 0x[0-9a-f]+: (?:soft offline|recovery action|unhandl|Sending SIGBUS"
        r"|already hardware poisoned|hard offline|page migration failed)"
        r"|\bMemory failure: soft offline: 0x[0-9a-f]+: page migration failed"
        # older kernels' words for the same event (mm/memory-failure.c)
        r"|\bMCE 0x[0-9a-f]+: Killing \S+ due to hardware memory corruption",
        ("soft-offlining", "memory failure:", "hardware memory corruption"),
        "The kernel took a memory page offline (too many corrected errors on it, or an "
        "uncorrected one): a DIMM is failing; the page's processes may be killed with SIGBUS. "
        "An injection test's (`Injecting memory failure`, hwpoison) is no fault.",
        host_hardware(S.WARNING, A.HARDWARE_INSPECTION, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "host.memory_error_counts",
        r"\bCorrectable\s*[:=]?\s*(?P<ce>\d+)\s*,\s*Uncorrectable\s*[:=]?\s*(?P<uc>\d+)\b",
        ("uncorrectable",),
        "A socket's or DIMM's memory error counts: uncorrected errors, or corrected ones at or "
        "past mcelog's threshold (100 in 24 h), are a DIMM to replace.",
        judge=error_counts,
        flags=re.IGNORECASE,
    ),
)

DISK_RULES: tuple[Rule, ...] = (
    rule(
        "host.disk_io",
        # (not a floppy drive's, `dev fd0`: a VM's empty virtual drive probed at boot)
        r"blk_update_request: I/O error(?!, dev fd\d)|I/O error, dev (?!fd\d)\w+, sector"
        r"|Buffer I/O error on dev(?:ice)? (?!fd\d)"
        r"|EXT4-fs error|EXT4-fs \(\w+\): I/O error|XFS \(\w+\): .*I/O error"
        # a filesystem mounted with errors recorded (ext4: `warning: mounting fs with errors,
        # running e2fsck is recommended`); btrfs' error counters (`btrfs dev stats`)
        r"|EXT4-fs \(\w+\): warning: mounting fs with errors\b"
        r"|\]\.(?:write_io|read_io|flush_io|corruption|generation)_errs\s+[1-9]",
        ("i/o error", "ext4-fs error", "mounting fs with errors", "_errs"),
        "The kernel failed a block device I/O: a disk or its controller is failing.",
        host_storage(S.ERROR, A.ISOLATE_NODE, 0.8),
    ),
    rule(
        SCSI_ABORT_RULE,
        # the SCSI midlayer aborting a command the disk did not complete in time (`sd 2:0:0:0:
        # [sda] abort`, `[sda] tag#99 task abort on host 0`)
        r"\bsd \d+:\d+:\d+:\d+: \[\w+\] (?:tag#\d+ )?(?:task )?abort\b"
        # the SAS HBA drivers' wording (mpt2sas/mpt3sas: `sd 4:0:1:0: attempting task abort!`,
        # mptscsih: `ioc0: attempting task abort!`)
        r"|\bsd \d+:\d+:\d+:\d+: attempting task abort!|\bioc\d+: attempting task abort!",
        ("abort",),
        "The kernel aborted a command a disk did not complete in time: the disk, its controller "
        "or (in a VM) the hypervisor's storage stalls; tasks that wait on it hang (EXPLAINED_BY).",
        host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.6),
    ),
    rule(
        "host.nfs",
        r"nfs: server (\S+) not responding(?![^\n]*\bnfs: server \1 OK\b)",
        ("not responding",),
        "The NFS server stopped answering: every rank reading or checkpointing through it stalls.",
        host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.7),
    ),
)

_NOT_A_DISK = re.compile(
    r"\bcgroup|\bmemory cg\b|/sys/fs/cgroup|\bCSS IDs?\b|\binotify",
    re.IGNORECASE,
)
"""ENOSPC from a kernel table, not a disk: a memory cgroup's CSS ids exhausted by short jobs
(Slurm's `unable to add task ... to memory cg`), inotify's watches."""


def _disk_full(m: re.Match[str]) -> Verdict | None:
    """Return the full disk's verdict unless the line's ENOSPC is a kernel table's."""
    return None if _NOT_A_DISK.search(m.string) else host_storage(S.ERROR, A.FREE_DISK, 0.9)


PROCESS_RULES: tuple[Rule, ...] = (
    rule(
        "host.shm_full",
        r"unable to write to file </torch_\d+|/dev/shm\b.*(?:No space left|is full)"
        r"|insufficient shared memory \(shm\)"
        # NCCL's shared memory (NVIDIA/nccl shmutils): older builds print no errno
        r"|Error while (?:creating|attaching to) shared memory segment"
        # NCCL's shmutils when the segment cannot grow (`failed to extend /dev/shm/nccl-X to N
        # bytes`)
        r"|failed to extend /dev/shm/\S+ to \d+ bytes"
        # df's row for /dev/shm at 95 % or more (`tmpfs 24G 23G 1.1G 96% /dev/shm`)
        r"|^\s*(?:tmpfs|shm|none|overlay)\s+(?:\S+\s+){3}(?:9[5-9]|100)%\s+/dev/shm\s*$",
        ("torch_", "/dev/shm", "shared memory (shm)", "shared memory segment"),
        "The DataLoader could not write to shared memory: /dev/shm is full (a container's "
        "default 64 MB); raise --shm-size or lower num_workers.",
        verdict(C.HOST_MEMORY, APP, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.85),
    ),
    rule(
        "host.shm_bus_error",
        r"killed by signal: Bus error|out of shared memory",
        ("bus error", "shared memory"),
        "A DataLoader worker died of SIGBUS because /dev/shm is full (real_logs "
        "host-bus-error-shm): the container's shm size or the worker count.",
        verdict(C.HOST_MEMORY, APP, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.85),
    ),
    rule(
        FILLED_RULE,
        # a speaker's test that fills a disk or a pool to see what breaks (`a 1 GiB thin device on
        # a 256 MiB pool — filled and written until it broke`)
        r"\b(?:filled|wrote|written)\s+(?:and\s+(?:filled|written|wrote)\s+)?until\s+it\s+broke\b"
        r"|\b(?:deliberately|intentionally|on\s+purpose)\s+(?:filled|filling|fill)\b",
        ("until it", "deliberately", "intentionally", "on purpose"),
        "A disk or a pool filled on purpose, to see what breaks: its `No space left on device` "
        "is the test's result, no fault (EXPLAINED_BY); not when the sentence denies or asks "
        "it.",
        judge=unless_denied(verdict(C.BENIGN, INFRA, K.NODE, S.INFO, A.NONE, 0.5), asked=True),
        flags=re.IGNORECASE,
    ),
    rule(
        "host.disk_full",
        r"No space left on device|\[Errno 28\]|\[Errno 122\]|Disk quota exceeded|ENOSPC",
        ("space left", "errno 28", "errno 122", "quota exceeded", "enospc"),
        "The filesystem is full (or the quota is): checkpoints and logs fail to write. Not the "
        "ENOSPC of a kernel table that is no disk (a memory cgroup's ids, inotify's watches).",
        judge=_disk_full,
    ),
    rule(
        "host.save_failed",
        r"PytorchStreamWriter failed writing file|unexpected pos \d+ vs \d+"
        # numpy's short write (ndarray.tofile under np.save): fewer bytes written than asked
        r"|\b(?:OSError|IOError): \d+ requested and \d+ written\b",
        ("pytorchstreamwriter failed", "unexpected pos", "requested and"),
        "torch.save or np.save could not write the file (numpy's `N requested and 0 written`): "
        "usually the disk filled mid-write (public_lines torch-save-disk-full), or the "
        "filesystem failed the write.",
        host_storage(S.ERROR, A.FREE_DISK, 0.6),
    ),
    rule(
        "host.io_error",
        # (Go's errno strings are lower case: restic's `read ...: input/output error`)
        r"\[Errno 5\]|[Ii]nput/output error|\[Errno 116\]|[Ss]tale [Ff]ile [Hh]andle|\[Errno 121\]"
        r"|Remote I/O error|\[Errno 30\]|[Rr]ead-only file system"
        # ENOLCK: no lock manager answered (NFS's lockd or statd down, or not running)
        r"|\[Errno 37\] No locks available|(?i:\bno locks available\b)",
        (
            "errno 5]",
            "input/output error",
            "errno 116",
            "stale file handle",
            "errno 121",
            "remote i/o error",
            "errno 30",
            "read-only file system",
            "no locks available",
        ),
        "The filesystem returned EIO/ESTALE/EREMOTEIO/EROFS/ENOLCK: a failing disk or network "
        "filesystem (real_logs host-fs-io-error); an EIO the RDMA stack returns (UCX, verbs: "
        "a memory registration or a send) is not the disk's.",
        judge=_io_error,
    ),  # fmt: skip
    rule(
        "host.bad_address",
        r"OSError: \[Errno 14\] Bad address",
        ("errno 14",),
        "EFAULT from a Python write: pure Python cannot pass a bad pointer, so the buffer's "
        "backing (an mmapped NFS/FUSE file) failed (real_logs host-fs-nfs-error).",
        host_storage(S.ERROR, A.CAPTURE_DIAGNOSTICS, 0.5),
    ),
    rule(
        "host.memory_error",
        r"^(?:\w+\.)*MemoryError\b|\[Errno 12\]|Cannot allocate memory",
        ("memoryerror", "errno 12", "cannot allocate memory"),
        "The process could not get host memory (Python MemoryError / ENOMEM); an ENOMEM the RDMA "
        "stack returns (a queue pair, a memory registration) is the NIC's resources, not the "
        "host's memory.",
        judge=_memory_error,
    ),
    rule(
        "host.killed",
        # (a paste's emphasis around it too: `**Killed**`)
        r"^\s*(?:\*\*|__|\*|_)?Killed(?:\*\*|__|\*|_)?\s*$"
        # zsh's job report of a process killed (`[1]    26478 killed     python test.py`)
        r"|\[\d+\]\s+(?:[+-]\s+)?\d+\s+killed\s+\S",
        ("killed",),
        "A bare 'Killed' on the job's stdout (or zsh's job report of it): SIGKILL, most often a "
        "cgroup/Slurm memory kill "
        "(real_logs host-cpu-oom); could also be a scancel, so confidence is low.",
        verdict(C.HOST_MEMORY, APP, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.35),
    ),
    rule(
        "host.bus_error",
        r"Bus error \(core dumped\)|Fatal Python error: Bus error",
        ("bus error",),
        "SIGBUS outside a DataLoader: a truncated mmapped file or a memory fault on the host.",
        host_hardware(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.35),
    ),
)
