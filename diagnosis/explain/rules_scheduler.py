"""What the job's scheduler says about it: Slurm's job output and daemons, Kubernetes' events and
NVIDIA's device plugin.

Read from the producers' sources, not from examples (catalogued in the session notes of
2026-12-05: SchedMD/slurm's slurmstepd, srun, slurmctld and error tables; kubernetes' kubelet
events, eviction messages and node conditions; NVIDIA/k8s-device-plugin's health checks):

- Slurm: a node lost under the job (``srun: error: Node failure on <node>``, the step's ``***
  ... DUE TO NODE FAILURE ... ***`` banner, slurmctld's ``Killing JobId=... on failed node``,
  ``Nodes ... not responding, setting DOWN``, ``Node ... unexpectedly rebooted``): host hardware
  at moderate confidence (a network partition reads the same); ``UNCORRECTABLE MEMORY ERROR``;
  a step that would not die (``DUE TO JOB NOT ENDING WITH SIGNALS``, the drain reason ``Kill
  task failed``): a hang on the node; a memory limit enforced by polling (``exceeded memory
  limit (N > M), being killed``, a task's ``Out Of Memory``); the wall-clock limit (``DUE TO
  TIME LIMIT``, ``Time limit exhausted``): the job's own budget; a task's non-zero exit
  (``task N: Exited with exit code K``): the application, at the lowest confidence, since the
  cause is printed before it. A user's ``CANCELLED AT ... ***`` without a reason, a preemption,
  a requeue, ``Job step aborted: Waiting up to 32 seconds`` are no fault and stay silent.
- Kubernetes: an eviction or admission refusal for memory (``The node was low on resource:
  memory``, ``The node had condition: [MemoryPressure]``, ``kubelet has insufficient memory
  available``) is host memory; for ephemeral storage, inodes or ``DiskPressure`` host storage;
  ``Kubelet stopped posting node status`` a node gone dark; ``UnexpectedAdmissionError`` with
  devices unavailable for ``nvidia.com/gpu`` a GPU lost after scheduling where the kubelet
  still counts some of the node's GPUs, the device plugin out of step (the node's setup) where
  it counts none (``Available: 0``, ``OutOfnvidia.com/gpu``); a crash loop (``Back-off
  restarting failed container``) the application at low confidence. Conditions that say all is
  well (``kubelet has sufficient memory``, ``has no disk pressure``) stay silent.
- NVIDIA's device plugin: ``XidCriticalError: Xid=N on Device=...; marking device as
  unhealthy`` takes the Xid catalogue's verdict for N; a device or all devices marked unhealthy
  otherwise is GPU hardware.

Guarantees: each pattern is anchored on the producer's own wording, so a person quoting a word
(``node failure``) in prose is not read; the verdicts that stand for a cause printed elsewhere
(a task's exit code, a crash loop, a time limit) rank below any finding of that cause.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import (
    Rule,
    gpu_hardware,
    host_hardware,
    host_storage,
    rule,
    unit_failed,
    verdict,
)
from diagnosis.explain.rules_gpu import xid_policy
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE


_MEMORY = re.compile(r"memory|MemoryPressure", re.IGNORECASE)
_DISK = re.compile(
    r"ephemeral-storage|inodes|DiskPressure|disk pressure|EmptyDir|nodefs|imagefs", re.IGNORECASE
)


def _evicted(m: re.Match[str]) -> Verdict | None:
    """Return host memory for an eviction for memory, host storage for one for disk (memory
    first when both are named), the application for one for PIDs (a process leak)."""
    if _MEMORY.search(m[0]):
        return verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.7)
    if _DISK.search(m[0]):
        return host_storage(S.ERROR, A.FREE_DISK, 0.7)
    if "pids" in m[0].lower() or "PID" in m[0]:
        return verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.5)
    return None


NODE_REFUSED = re.compile(
    r"\bnode\s+(?:\S+\s+)?(?:was|is|went|goes|got)\s+(?:\w+\s+)?(?:down|drained|invalid)\b"
    r"|\bState=\S*(?:DOWN|DRAIN|INVAL)|\s(?:down|drain(?:ed)?|inval)\s+\S+\s*$",
    re.IGNORECASE | re.MULTILINE,
)
"""A line that shows a node down, drained or invalid (`the localhost node was down`, sinfo's
state column, scontrol's `State=`); NODE_REFUSED_WORDS gate it (lower case)."""
NODE_REFUSED_WORDS = ("down", "drain", "inval")
DEFINITION_DIFFERS = "slurm.definition_differs"
NEEDS_NODE_REFUSED = frozenset({DEFINITION_DIFFERS})
"""Findings that stand only where the input shows a node refused (NODE_REFUSED, the engine's
`node_refused`): slurmd's `Node configuration differs from hardware` is a fault where the node
went down or drained for it; alone it is the check's notice (the controller takes the
hardware's figures where they are larger: a CI runner logs it and runs its jobs)."""


_AVAILABLE = re.compile(r"\bAvailable:\s*(\d+)")


def _admission(m: re.Match[str]) -> Verdict:
    """A GPU lost where the kubelet still counts some of the node's GPUs (`Requested: 8,
    Available: 7`), the node's setup where it counts none or gives no count."""
    available = _AVAILABLE.search(m.string, m.end())
    if available is not None and int(available[1]) > 0:
        return gpu_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.5)
    return verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.45)


VOLUME_SOURCE_MISSING = "k8s.volume_source_missing"
"""The kubelet's event that a pod's ConfigMap or Secret volume does not exist."""
VOLUME_MOUNTED = "k8s.volume_mounted"
"""The kubelet's event that a pod's volume attached or mounted."""

PLUGIN_NO_DEVICES = "k8s.plugin_no_devices"
NO_GPU_CLAIM = re.compile(
    r"If this is (?:not )?a GPU node|non-NVML platform|CPU-only|\bno\s+GPUs?\b|\bwithout\s+GPUs?\b",
    re.IGNORECASE,
)
"""A line that names a GPU without saying the node has one (the plugin's own hint `If this is a
GPU node, did you ...`, `a CPU-only node`)."""
NEEDS_GPUS_NAMED = frozenset({PLUGIN_NO_DEVICES})
"""Findings that stand only where the input names a GPU elsewhere (the engine's `gpu_named`):
a device plugin's `No devices found` on a node the text says has GPUs is its setup; alone it is
the plugin's notice on a node without GPUs."""


RULES: tuple[Rule, ...] = (
    rule(
        "slurm.node_failure",
        r"\bNode failure on \S+|\*\*\* .* DUE TO NODE FAILURE\b|\bKilling \S+ on failed node \S+"
        r"|\bNodes? \S+ not responding, setting DOWN|\bNode \S+ unexpectedly rebooted"
        # sacct's State column
        r"|^\s*\d+(?:\.\w+)?\s+(?:\S+\s+)*?NODE_FAIL\s",
        ("node failure", "failed node", "setting down", "unexpectedly rebooted", "node_fail"),
        "Slurm lost a node under the job (node failure, not responding and set DOWN, an "
        "unexpected reboot): the node's hardware, power or kernel, or a network partition; "
        "slurmctld's log and the node's console say which. The job must restart elsewhere.",
        host_hardware(S.ERROR, A.ISOLATE_NODE, 0.55),
    ),
    rule(
        "slurm.memory_error",
        r"\*\*\* .* UNCORRECTABLE MEMORY ERROR AT ",
        ("uncorrectable memory error",),
        "Slurm ended the job because its node saw an uncorrectable memory error: the node's "
        "memory is failing; drain it and inspect the DIMMs.",
        host_hardware(S.CRITICAL, A.ISOLATE_NODE, 0.8),
    ),
    rule(
        "slurm.unkillable_step",
        r"DUE TO JOB NOT ENDING WITH SIGNALS|DUE TO JOB NOT RUNNING\b|Reason=Kill task failed"
        r"|^\s*Kill task failed\s{2,}\S"  # sinfo -R's REASON column
        # the reason quoted as what a command showed (`sinfo -R ... got 'Kill task failed'`)
        r"|\b(?:got|gets|shows?|showed|says|said|reports?|reported)\s+['\"`]Kill task failed['\"`]",
        ("not ending with signals", "not running", "kill task failed"),
        "The job's processes would not die when Slurm killed them: they are stuck in the kernel "
        "(D state on storage I/O, or in the GPU driver); the node is drained. Its kernel log "
        "says which.",
        verdict(C.HANG, INFRA, K.NODE, S.ERROR, A.REBOOT_NODE, 0.6),
    ),
    rule(
        "slurm.memory_limit",
        r"exceeded (?:virtual )?memory limit \(\d+ > \d+\), being killed"
        r"|\btasks? [\d,\-]+: Out Of Memory\b"
        # sacct's State column (`OUT_OF_ME+` when the column is narrow)
        r"|^\s*\d+(?:\.\w+)?\s+(?:\S+\s+)*?OUT_OF_ME(?:MORY|\+)(?:\s|$)"
        # seff's and scontrol's state of the job (`State: OUT_OF_MEMORY (exit code 0)`,
        # `JobState=OUT_OF_MEMORY Reason=OutOfMemory`)
        r"|\b(?:State: |JobState=)OUT_OF_MEMORY\b",
        ("memory limit", "out of memory", "out_of_me"),
        "Slurm killed the job for exceeding its memory request (job accounting's polling, or a "
        "task that died of the OOM signal): host memory, the job's own limit; ask for more "
        "memory or use less.",
        verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.75),
    ),
    rule(
        "slurm.time_limit",
        r"\*\*\* .* CANCELLED AT \S+ DUE TO TIME LIMIT|\bTime limit exhausted for \S+"
        r"|Inactivity time limit reached for \S+",
        ("time limit",),
        "Slurm ended the job at its wall-clock limit, as the job asked (slurmstepd words it "
        "`error:`): the job's own budget, no fault; a job that had stopped making progress "
        "before is a hang, which its own lines tell.",
        verdict(C.BENIGN, B.APPLICATION, K.JOB, S.INFO, A.NONE, 0.4),
    ),
    rule(
        "slurm.task_killed",
        r"\btasks? [\d,\-]+: Killed\b",
        ("killed",),
        "srun says a task was killed (SIGKILL): most often a memory kill, but srun prints the "
        "same after a time limit, a node failure or a cancel; those, printed in the same "
        "input, explain it (EXPLAINED_BY).",
        verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.35),
    ),
    rule(
        "slurm.cancelled",
        r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+"
        r"(?: DUE TO (?:PREEMPTION|JOB REQUEUE))? \*\*\*",
        ("cancelled at",),
        "Slurm cancelled the job or step on request (a user's or an administrator's scancel, a "
        "preemption, a requeue): no fault.",
        verdict(C.BENIGN, B.UNKNOWN, K.JOB, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "slurm.spank_plugin_error",
        # a SPANK plugin's own error (pyxis, enroot: `spank-epilog: error: pyxis: mkdir: cannot
        # create directory ...`) or slurmd's refusal of one (`spank: required plugin pyxis.so:
        # init() failed with rc=-1`)
        r"\bspank(?:-(?:prolog|epilog))?: error: \w+:|\bspank: required plugin \S+ ?: ?\w+\(\) "
        r"failed\b|\berror: (?:pyxis|enroot): ",
        ("spank", "pyxis", "enroot"),
        "A Slurm SPANK plugin failed (pyxis or enroot could not set up the job's container: a "
        "directory it may not create, an image it cannot import, a plugin that would not "
        "load): the job's or the node's container setup, not the hardware; a failure in the "
        "epilog drains the node (`Kill task failed`).",
        verdict(C.APPLICATION, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "slurm.slurmd_fatal",
        # slurmd that will not start on its configuration (`fatal: can't stat gres.conf file
        # /dev/nvidia0`, `fatal: Unable to determine this slurmd's NodeName`)
        r"\bslurmd(?:\[\d+\])?: (?:slurmd: )?fatal: (?:can't stat gres\.conf file"
        r"|Unable to determine this slurmd's NodeName"
        r"|Unable to (?:read|parse) \S*(?:slurm|gres|cgroup)\.conf|Invalid (?:GRES|gres)"
        r"|[^\n]*\b(?:config(?:uration)?|(?:slurm|gres|cgroup|topology)\.conf)\b)",
        ("fatal:",),
        "slurmd exits at start on its configuration (a gres.conf naming a device the node lacks, "
        "a node name it cannot find): the node's Slurm setup, not its hardware; the node stays "
        "down until the configuration is fixed.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "slurm.node_config_mismatch",
        # slurmctld rejecting a node whose CPUs are fewer than slurm.conf says, or whose
        # slurm.conf differs from its own; sinfo -R's drain reason for it (truncated to 20
        # characters), or with less memory than it declares (a cloud shape's memory written in
        # too high: a dead DIMM gives it too, more rarely). (Fewer GPUs is not read: a lost GPU
        # gives it too, and so the registration's `Invalid argument` that follows.)
        r"\bNode \S+ has low (?:socket\*core\*thread|cpu) count \(\d+ < \d+\)"
        r"|(?:^\s*|\bReason=)Low (?:socket\*core\*thre\w*|RealMemory)(?:\s|$)"
        r"|\bappears to have a different slurm\.conf than the slurmctld\b"
        r"|\bNode \S+ has low real_memory size \(\d+ < \d+\)",
        (
            "low socket",
            "low cpu count",
            "different slurm.conf",
            "low realmemory",
            "low real_memory",
        ),
        "Slurm rejects or drains a node whose CPUs are fewer than slurm.conf declares, or whose "
        "slurm.conf differs from the controller's: the node's definition is wrong (a cloud "
        "instance counted in vCPUs, a container), not its hardware; fix slurm.conf.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
        flags=re.IGNORECASE | re.MULTILINE,
    ),
    rule(
        DEFINITION_DIFFERS,
        r"\bNode configuration differs from hardware\b",
        ("differs from hardware",),
        "slurmd finds the node's definition in slurm.conf unlike its hardware, and the input "
        "shows the node down or drained (NEEDS_NODE_REFUSED): fix the node's definition "
        "(sockets, cores, threads), not the hardware. Alone (a CI runner's log) it is no "
        "finding.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.45),
    ),
    rule(
        "slurm.slurmd_not_started",
        # systemd's words for the node daemon's unit (`slurmd.service: Failed with result
        # 'timeout'`, `Failed to start Slurm node daemon`)
        unit_failed("slurmd", "Slurm node daemon"),
        ("slurmd.service", "slurm node daemon"),
        "Slurm's node daemon did not start (a configuration it cannot fetch or parse, munge, a "
        "gres.conf): the node stays out of the cluster; its journal says why. A hardware "
        "finding beside it in the same input outranks this warning.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.4),
    ),
    rule(
        "slurm.prolog_missing",
        # a prolog or epilog path that is not there (`/etc/slurm/prolog.d: No such file or
        # directory`): the job fails to launch and the node drains with `Prolog error`
        r"\b(?:prolog|epilog)(?:\.d)?[\w./-]*'?:? No such file or directory\b",
        ("no such file or directory",),
        "Slurm's prolog or epilog names a path that is not on the node: every job fails to "
        "launch there (`Job prolog failed`) and the node drains; the node's Slurm setup.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "k8s.plugin_unregistered",
        # the device plugin that cannot reach the kubelet's registration socket
        r"\bCould not (?:register|start) device plugin: context deadline exceeded\b"
        r"|\bCould not contact Kubelet, retrying\b",
        ("device plugin:", "could not contact kubelet"),
        "A device plugin cannot register with the kubelet (`context deadline exceeded`, `Could "
        "not contact Kubelet`): the kubelet's device-plugin socket or feature gate, the node's "
        "setup; its GPUs are not offered to pods.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.45),
    ),
    rule(
        "k8s.pleg_unhealthy",
        # the kubelet's pod lifecycle event generator, stuck behind a container runtime that
        # stopped answering (`PLEG is not healthy: pleg was last seen active 16h17m50s ago`)
        r"\bPLEG is not healthy: pleg (?:was last seen active \S+ ago|has yet to be successful)",
        ("pleg is not healthy",),
        "The kubelet's pod lifecycle relist has not completed for longer than its threshold: "
        "the node's container runtime is stuck, so the node turns NotReady and its pods neither "
        "start nor stop; restart the runtime or the node.",
        verdict(C.HANG, INFRA, K.NODE, S.ERROR, A.REBOOT_NODE, 0.5),
    ),
    rule(
        "k8s.cni_not_ready",
        # the kubelet on a node whose network plugin wrote no configuration (`cni config
        # uninitialized`, `No networks found in /etc/cni/net.d`): the node stays NotReady
        r"\bNetworkPluginNotReady\b[^\n]*\bcni config uninitialized\b"
        r"|\bUnable to update cni config: No networks found in \S+",
        ("cni config",),
        "The kubelet finds no CNI network configuration on the node (`cni config "
        "uninitialized`): the network add-on never configured this node, so it stays NotReady "
        "and runs no pods; the node's setup, not its network hardware.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "slurm.task_exit",
        r"\btasks? [\d,\-]+: Exited with exit code [1-9]\d*",
        ("exited with exit code",),
        "A task of the step exited with a non-zero code: the job failed, and the reason is in "
        "the lines before (a traceback, an NCCL or CUDA error). Lowest confidence alone.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.WARNING, A.FIX_APPLICATION, 0.3),
    ),
    rule(
        "k8s.evicted",
        r"The node was low on resource: \[?[\w-]+|The node had condition: \[[\w ]+\]"
        # the eviction manager's own lines (`Failed to admit pod ... - node has conditions:
        # [MemoryPressure]`, `eviction manager: attempting to reclaim memory`)
        r"|\bnode has conditions?: \[[\w ,]+\]|\beviction manager: attempting to reclaim [\w-]+"
        # (its structured form: `"Eviction manager: attempting to reclaim"
        # resourceName="ephemeral-storage"`)
        r"|\b[Ee]viction manager: attempting to reclaim\"?\s+resourceName=\"[\w.-]+\""
        r"|Usage of EmptyDir volume \S+ exceeds the limit"
        r"|\bkubelet has (?:insufficient memory available|disk pressure)\b"
        r"|\bNodeHas(?:InsufficientMemory|DiskPressure)\b"
        r"|exceeded its local ephemeral storage limit|Pod ephemeral local storage usage exceeds",
        (
            *("low on resource", "had condition", "insufficient memory", "disk pressure"),
            *("has condition", "attempting to reclaim"),
            *("insufficientmemory", "diskpressure", "ephemeral", "emptydir"),
        ),
        "The kubelet evicted the pod (or refused it) because the node ran short: memory (the "
        "job's host memory, often DataLoader workers or pinned memory) or disk (ephemeral "
        "storage, inodes).",
        judge=_evicted,
    ),
    rule(
        "k8s.volume_mount_timeout",
        # the kubelet's volume manager (pkg/kubelet/volumemanager): the pod's volumes did not
        # attach or mount in time, in its old and its new wording
        r"\bUnable to mount volumes for pod\b[^\n]*\btimeout expired waiting for volumes to "
        r"attach(?:/| or )mount\b"
        r"|\bUnable to attach or mount volumes: unmounted volumes=\[[^\]\n]+\][^\n]*"
        r"\btimed out waiting for the condition\b"
        # a CSI driver's mount that ran out of time (`MountVolume.MountDevice failed for volume
        # ... rpc error: code = DeadlineExceeded desc = context deadline exceeded`)
        r"|\bMountVolume\.\w+ failed for volume\b[^\n]*\b(?:DeadlineExceeded|context deadline "
        r"exceeded)",
        ("unable to mount volumes", "unable to attach or mount", "deadline"),
        "The kubelet timed out attaching or mounting the pod's volumes: the storage behind them "
        "(an NFS or parallel filesystem server, a cloud disk that will not attach) or the "
        "node's path to it; the pod cannot start. Its events and the node's kernel log name "
        "the volume's own error.",
        host_storage(S.WARNING, A.MONITOR, 0.45),
        flags=re.IGNORECASE,
    ),
    rule(
        VOLUME_SOURCE_MISSING,
        # the kubelet cannot build a ConfigMap's or a Secret's volume that does not exist
        r"\bMountVolume\.SetUp failed for volume \"[^\"\n]+\" : (?:configmap|secret) "
        r"(?:references non-existent config key: \S+|\"[^\"\n]+\" not found)",
        ("setup failed for volume",),
        "The pod's volume is a ConfigMap or a Secret that does not exist (or lacks the key it "
        "names): the deployment's error, not storage; it also explains the kubelet's mount "
        "timeout for that volume (EXPLAINED_BY).",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        VOLUME_MOUNTED,
        # the attach-detach controller's and the kubelet's events once the volume is there
        r"\bAttachVolume\.Attach succeeded for volume\b|\bMountVolume\.SetUp succeeded for volume\b"
        r"|\bMountVolume\.MountDevice succeeded for volume\b",
        ("attach succeeded", "setup succeeded", "mountdevice succeeded"),
        "The pod's volume attached or mounted: a mount timeout said before it in the same input "
        "ended (RECOVERED_BY); no finding of its own.",
        verdict(C.BENIGN, INFRA, K.NODE, S.INFO, A.NONE, 0.4),
    ),
    rule(
        "k8s.apiserver_unreachable",
        # the kubelet's lease and status updates timing out (`"Failed to update lease" err="Put
        # ...: net/http: request canceled (Client.Timeout exceeded while awaiting headers)"`)
        r"\"(?:Failed to update lease|Error updating node status, will retry)\" err=.*?"
        r"(?:Client\.Timeout exceeded|i/o timeout|context deadline exceeded|connection refused"
        r"|no route to host|TLS handshake timeout)",
        ("failed to update lease", "error updating node status"),
        "The kubelet cannot reach the API server (its lease and status updates time out): the "
        "node's network to the control plane; the node goes NotReady and its pods are evicted.",
        verdict(C.NETWORK, INFRA, K.NODE, S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    rule(
        "k8s.node_lost",
        r"Kubelet stopped posting node status",
        ("stopped posting node status",),
        "The node stopped reporting to the control plane: it died, hung or was cut off from "
        "the network, which the condition alone does not say (`unknown`, as the corpus files "
        "it); its pods will be evicted. Isolate it and read its own logs.",
        verdict(C.UNKNOWN, INFRA, K.NODE, S.ERROR, A.ISOLATE_NODE, 0.45),
    ),
    rule(
        "k8s.gpu_admission",
        r"requested number of devices unavailable for nvidia\.com/gpu|\bOutOfnvidia\.com/gpu\b"
        r"|Node didn't have enough resource: nvidia\.com/gpu",
        ("nvidia.com/gpu",),
        "The kubelet could not hand the pod the GPUs the scheduler counted. Some of the node's "
        "GPUs still available (`Available: 7` of 8): one was marked unhealthy after scheduling "
        "(an Xid, a lost device), the GPU's. None available, or no count: the device plugin out "
        "of step with a restarted kubelet or node (its devices not registered again), the "
        "node's setup. Check the device plugin's log.",
        judge=_admission,
    ),
    rule(
        "k8s.crash_loop",
        # (older kubelets: `Back-off 20s restarting failed container=nvidia-driver-installer
        # pod=...`)
        r"Back-off (?:\d+\w*\s+)?restarting failed container|\sCrashLoopBackOff\s{2,}\d"
        r"|Reason:\s+CrashLoopBackOff\b",  # kubectl get pods' STATUS column, describe's state
        ("back-off", "crashloopbackoff"),
        "The container keeps crashing and the kubelet backs off restarting it: the cause is "
        "the previous container's exit (its log, its terminated reason).",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.WARNING, A.FIX_APPLICATION, 0.3),
    ),
    rule(
        "k8s.device_plugin_xid",
        # (and the plugin's newer health loop, device_health.go: `Sending XID=43 health event
        # for device MIG-...`)
        r"(?:XidCriticalError: Xid=|\bSending XID=)(?P<xid>\d+)"
        r"(?: on Device=\S+?;? marking device as unhealthy| health event for device\b)",
        ("xidcriticalerror", "health event"),
        "NVIDIA's device plugin saw a critical Xid and took the GPU out of the node's "
        "allocatable GPUs: the Xid catalogue's verdict.",
        judge=xid_policy,
    ),
    rule(
        PLUGIN_NO_DEVICES,
        # the device plugin's start when NVML gives it no GPU (`No devices found. Waiting
        # indefinitely.`): most often a runtime without the NVIDIA hook, or a plugin that does
        # not know the model; nvidia-smi's own `No devices were found` is rules_driver's
        r"\b(?i:No devices found\. Waiting indefinitely)\b",
        ("waiting indefinitely",),
        "A GPU device plugin found no GPU to advertise and waits, on a node the text says has "
        "GPUs: the container runtime or the plugin's setup (the NVIDIA runtime not the default, "
        "a model the plugin does not know), the node's software rather than its GPUs. Alone it "
        "is the plugin's notice on a node without GPUs, and no finding.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.45),
    ),
    rule(
        "k8s.device_unhealthy",
        r"device marked unhealthy: \S+|marking all devices as unhealthy"
        r"|marking devices? as unhealthy|\bMarking device \S+ as unhealthy\b"
        r"|(?:device|GPU|UUID)[^;\n]*; marking it (?:as )?unhealthy",
        ("unhealthy",),
        "NVIDIA's device plugin marked a GPU (or all of them) unhealthy: the GPU or its driver "
        "failed a health check; the node has fewer GPUs than it should.",
        gpu_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.6),
        flags=re.IGNORECASE,
    ),
)

RECOVERED_BY: dict[str, frozenset[str]] = {"k8s.volume_mount_timeout": frozenset({VOLUME_MOUNTED})}
"""A volume mount that timed out once, then attached or mounted later in the same input: the
pod started (a slow attach, not a storage fault)."""
ONLY_TO_RECOVER = frozenset({VOLUME_MOUNTED})
"""Rules that only say a wait ended: no finding of their own."""

EXPLAINED_BY: dict[str, frozenset[str]] = {
    "k8s.volume_mount_timeout": frozenset({VOLUME_SOURCE_MISSING}),
    "slurm.task_killed": frozenset(
        {"slurm.cancelled", "slurm.time_limit", "slurm.node_failure", "slurm.memory_limit"}
    ),
}
"""For a rule whose line follows from another cause, the rules whose finding in the same input
gives that cause (srun's `Killed` after a time limit, a node failure or a cancel)."""
