"""Faults told in people's words and alerts' names, beside rules_monitors' (what on-call writes
in a ticket, a Slack thread or a drain reason, and what a monitoring check is called):

- **host.storage**: a network filesystem's mount said to hang, be stuck, stale or frozen (`the
  /scratch mount hangs`, `Reason=NFS hung`, `hängt der NFS-Mount`, `NFS ... 卡死`), a check
  named for it (`NFSMountUnhealthy`, `node_nfs_mount_stuck`), its RPC retransmissions alerted
  on; a local disk said to hang (`lvm threads stuck in D state`, `couldn't access the nvme
  disk`), a drive said to fail (`ZFS reported a drive failure`), a disk or a directory said full
  (`the output directory was already full`);
- **hang**, **numerical**, **host.memory**, **network** (a job that works on one node only, a
  setting that fixed the fabric's path, a fabric that drops packets), a GPU said to throttle,
  and statements that errors are harmless (read after every fault rule, `HARMLESS_RULES`).

Devices said to fail (a GPU, an NVLink, a row remap, an HCA's port, a power supply) are
rules_said_devices'.

Guarantees: every rule is judged by happening.live: an alert resolved, a runbook's
condition, a denial just before, a planned, tested, fixed or expected event says nothing now.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import sentence_at
from diagnosis.explain.happening import denied_within, said
from diagnosis.explain.rules import (
    SPEAKER,
    Judge,
    Rule,
    gpu_hardware,
    host_storage,
    joined,
    rule,
    verdict,
)
from diagnosis.explain.rules_netfs import SHARED_FS
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_STORAGE = host_storage(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45)
GPU_FAILED_SAID = gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.5)
"""A GPU said to have failed in words (rules_said_devices reads the devices' other words)."""
_NIC = verdict(C.NETWORK, INFRA, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.45)
_HUNG_JOB = verdict(C.HANG, B.UNKNOWN, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45)
_GPU_DEGRADED = verdict(
    C.GPU_DEGRADED, B.INFRASTRUCTURE, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.45
)
_SAID_GPU_DEGRADED = said(_GPU_DEGRADED)
_NO_FAULT = verdict(C.BENIGN, B.UNKNOWN, K.NODE, S.INFO, A.NONE, 0.5)
_SAID_NO_FAULT = said(_NO_FAULT)
_HOST_MEMORY = verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.45)
_SAID_HOST_MEMORY = said(_HOST_MEMORY)
_NONFINITE = verdict(C.NUMERICAL, B.APPLICATION, K.JOB, S.WARNING, A.FIX_APPLICATION, 0.45)
_SAID_NONFINITE = said(_NONFINITE)
MULTINODE_RULE = "said.multinode_only"
HARMLESS_RULE = "said.harmless"
INJECTED_RULE = "said.fault_injected"
MISREAD_RULE = "said.misread"
MISREAD_RULES = (
    *("kernel.mce_uncorrected", "host.mce", "host.bmc_fault", "host.bmc_warning"),
    "nccl.warn",
    "fabric.imex_unhealthy",
)
"""Machine checks and BMC entries an input says were logged wrongly, NCCL's plain warnings an
input calls a red herring, a health watch's IMEX finding it calls a false positive."""
LOSSY_FABRIC_RULE = "said.lossy_fabric"
CORRECTED_RULES = ("host.pcie_error", "host.mce", "host.cpu_throttled", "kernel.hung_task")
"""Warnings of errors the hardware corrected, and hung tasks, which a statement that they are
harmless ends."""

_HUNG = (
    r"(?:hang(?:s|ing)?|hung|stuck|frozen|freez(?:es|ing)|unresponsive|stale|blocks|blocked"
    r"|never\s+returns?)"
)


def _first_person(given: Verdict) -> Judge:
    """A judge like `said` that also needs the speaker's own run (I, we)."""
    told = said(given)

    def judge(m: re.Match[str]) -> Verdict | None:
        return told(m) if SPEAKER.search(sentence_at(m)) else None

    return judge


_OTHER_KILL = re.compile(
    r"\btime\s*limit|\bpreempt\w*|\bcancel\w*|\bscancel\b|\bSIG(?:TERM|INT|HUP)\b|\bwall\s*time\b"
    r"|\bfine\s+now\b|\badded\s+swap\b",
    re.IGNORECASE,
)
_SKIPPED = re.compile(
    r"\bskip\w*|\bscaler\b|\bbacks?\s+off\b|\bfirst\s+(?:few\s+)?(?:steps?|iter\w*)\b",
    re.IGNORECASE,
)


_ADVICE = re.compile(
    r"\W*(?:to\s+(?:avoid|prevent|reduce|fix)|try|consider|you\s+(?:can|could|should))\b",
    re.IGNORECASE,
)
"""A sentence of advice (`To avoid RAM OOMs, set pin_memory=False`): no event."""


def _killed_for_memory(m: re.Match[str]) -> Verdict | None:
    """The host's memory, unless the sentence gives another reason for the kill (a time
    limit, a preemption, a cancel) or says it is over."""
    if _OTHER_KILL.search(sentence_at(m)) or _ADVICE.match(sentence_at(m)):
        return None
    return _SAID_HOST_MEMORY(m)


_FIGURES_CHANGED = re.compile(
    r"\bfrom\s+~?\d[\d.,]*\s*(?:s|secs?|seconds?|ms|mins?|minutes?|h|hours?|it/s|s/it|\w+/s)\b"
    r"[^.\n]{0,30}?\bto\s+~?\d",
    re.IGNORECASE,
)


GPU_THROTTLING = re.compile(
    r"\bthrottl(?:ing|ed|es)\s+(?:on|of)\s+(?:my|the|our|a|one|this)\s+(?:\w+\s+)?GPUs?\b"
    r"|\bGPUs?\s+(?:\d+\s+)?(?:is|was|are|were|keeps?|kept|starts?|started)\s+(?:\w+\s+)?"
    r"throttl(?:ing|ed)\b",
    re.IGNORECASE,
)
"""A GPU said to throttle (`I am seeing throttling on my NVIDIA GPU`, `GPU 3 keeps throttling`):
its clocks, for heat or power."""


def _throttling(m: re.Match[str]) -> Verdict | None:
    """A GPU said to throttle, unless denied inside the words (`is not throttling`) or the text
    times the job's slowdown it caused (`from ~7.5 mins per iteration to ~15`): then the
    straggler is the incident, for the slowdown rules."""
    if denied_within(m) or _FIGURES_CHANGED.search(m.string):
        return None
    return _SAID_GPU_DEGRADED(m)


_CORRECTED_KIND = re.compile(
    r"\b(?:AER|PCIe|corrected|correctable|machine\s+checks?|MCE|mcelog|EDAC|throttl\w*|hung\s+tasks?"
    r"|blocked\s+for\s+more\s+than|log\s+flood)\b",
    re.IGNORECASE,
)


_OTHER_KIND = re.compile(
    r"\b\w+(?:Warning|Error|Exception)\b|\bwarnings?\s+(?:from|about|of)\s+\w+", re.IGNORECASE
)


def _harmless(m: re.Match[str]) -> Verdict | None:
    """No fault, unless the statement's record names another kind of message than those it may
    end (a PCIe AER, a machine check, a throttle, a hung task): `The FutureWarning messages are
    harmless` ends no machine check."""
    if not _CORRECTED_KIND.search(m.string) and _OTHER_KIND.search(m.string):
        return None
    if m["own"]:  # (the errors corrected by the hardware: its `fixed` is no fix said of a fault)
        return _NO_FAULT
    return _SAID_NO_FAULT(m)


def _diverged(m: re.Match[str]) -> Verdict | None:
    """A run that diverged, unless the sentence says the step was skipped (by the code or the
    loss scaler, in the first steps)."""
    return None if _SKIPPED.search(sentence_at(m)) else _SAID_NONFINITE(m)


RULES: tuple[Rule, ...] = (
    rule(
        "said.netfs_hung",
        # NFS named with a hang in the same sentence, either order (not `Stale file handle`:
        # rules_storage reads that one)
        rf"\bNFS\w*\b(?![\s-]*(?:file\s+handle|server\s+\S+\s+OK))[^.;?\n]{{0,60}}?\b{_HUNG}\b"
        rf"|\b{_HUNG}\s+(?:\w+\s+){{0,2}}?NFS(?:v\d(?:\.\d)?)?\s+(?:mounts?|shares?|exports?|clients?)\b"
        # a mount said to hang, its tasks in D state (`the /scratch mount hangs`)
        r"|\s/[\w./-]+\s+mount\s+(?:hangs|is\s+hung|hung)\b"
        # a drain reason, a node condition or a check named for it
        r"|\bReason=NFS[\w ]{0,20}\b(?:hung|hang|stuck|stale|down)\b"
        r"|\bNFS\w*(?:Unhealthy|Stuck|Stale|Hung)\s+True\b|(?:\b|_)nfs_\w*(?:stuck|hung|stale)\w*"
        # a parallel filesystem's client said evicted, a task waiting in the RPC layer
        rf"|\b{SHARED_FS}\b[^.;?\n]{{0,40}}?\b(?:got|was|were|been)\s+evicted\b"
        r"|\bwaiting\s+in\s+rpc_wait_bit_killable\b"
        r"|\bNFS\s+RPC\s+retransmissions?\s+(?:high|rising|climbing)\b"
        # tasks that hang as they write to or read from a shared filesystem (`cause task to
        # hang when writing to lustre file system`)
        rf"|\b{_HUNG}\s+(?:\w+\s+){{0,2}}?(?:when|while|during)\s+(?:writing|reading|saving|loading"
        r"|checkpointing|accessing)\s+(?:\w+\s+){0,3}?(?:to|from|on|in)\s+(?:the\s+|a\s+|an\s+|our\s+)?"
        rf"(?:{SHARED_FS}|(?:parallel|network|shared)\s+(?:file\s*"
        r"systems?|fs|storage|drives?|mounts?))\b"
        # German and Chinese (`hängt der NFS-Mount`, `挂载（NFS）卡死了`)
        r"|\bhängt\s+(?:der|die|das)\s+NFS|\bNFS[\w-]*\s+hängt\b|NFS[^。\n]{0,12}?(?:卡死|卡住|挂起)",
        (
            *("nfs", "mount", "evicted", "rpc_wait_bit_killable", "lustre", "gpfs", "beegfs"),
            *("cephfs", "wekafs", "juicefs", "parallel", "network", "shared"),
        ),
        "A network filesystem's mount said to hang (tasks in D state, `ls` that never returns), "
        "a drain reason or a check named for it: the NFS server or the path to it; every rank "
        "reading or checkpointing through it stalls.",
        judge=said(_STORAGE),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.mount_disconnected",
        # errno 107 quoted by a person where a mount or its files are read (`pods start
        # reporting `Transport endpoint is not connected` when accessing files`); rules_netfs
        # reads the error on a path
        r"\bTransport endpoint is not connected\b['\"`]?\s*(?:\w+\s+){0,2}?(?:when|while|on|for|at"
        r"|in)\s+(?:\w+\s+){0,2}?(?:(?:accessing|reading|writing|listing|opening)\s+(?:\w+\s+)?"
        r"(?:files?|the\s+mount|mount\s*points?|mountpoints?|volumes?|director(?:y|ies)|paths?|data"
        r"|checkpoints?|datasets?)|files?|the\s+mount|mount\s*points?|mountpoints?|volumes?"
        r"|directory|directories|paths?)\b",
        ("transport endpoint",),
        "A person quotes `Transport endpoint is not connected` as the mount's files are read: "
        "the FUSE or network filesystem's daemon behind the mount went away; every rank reading "
        "through it fails until it is remounted.",
        judge=said(_STORAGE),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.disk_trouble",
        # tasks said stuck in D state on a disk's path, a disk that cannot be reached
        r"\b(?:threads?|tasks?|process(?:es)?|kworkers?)\s+(?:\w+\s+){0,2}?(?:stuck|hung|hanging"
        r"|blocked)\s+in\s+(?:the\s+)?(?:D[\s-]?state|uninterruptible\s+sleep)\b"
        r"(?=[^\n]{0,120}?\b(?:nvme\w*|disks?|lvm|jbd2|dm-\d+|md\d+|raid|I/O|io|filesystem|mount"
        r"|/dev/\w+)(?!\w))"
        r"|\b(?:couldn't|could\s+not|can't|cannot|unable\s+to)\s+access\s+(?:to\s+)?(?:the\s+|my\s+"
        r"|our\s+)?(?:local\s+)?(?:nvme|ssd|hdd)\s*(?:disks?|drives?|devices?)?\b"
        # a drive said to fail (`ZFS reported a drive failure`, `the SSD died`)
        r"|\b(?:reported|had|detected|saw)\s+(?:a\s+)?(?:disk|drive|SSD|NVMe)\s+failure\b"
        r"|\b(?:the|a|one|our)\s+(?:\w+\s+)?(?:disk|drive|SSD|NVMe)\s+(?:died|failed|is\s+dead)\b"
        # a disk, volume or directory said full (`the output directory was already full`)
        r"|\b(?:disk|drive|volume|filesystem|file\s+system|partition|directory|dir)\s+(?:is|was|were"
        r"|are|got|became|has\s+become)\s+(?:already\s+|completely\s+|totally\s+|100\s*%\s+)?full\b"
        # too little space said (`the target drive has not enought space for storing the
        # checkpoints`, `ran out of disk space`)
        r"|\b(?:drive|disk|volume|partition|filesystem)\s+(?:has|had)\s+not\s+enou?g?ht?\s+space\b"
        r"|\b(?:ran|runs?|running)\s+out\s+of\s+(?:disk|storage)\s+space\b"
        # a volume said nearly full (`The physical volume is ~95% full`)
        r"|\b(?:disk|drive|volume|filesystem|partition)\s+(?:is|was)\s+(?:~|about\s+|almost\s+)?"
        r"(?:9\d|100)\s*%\s+full\b"
        # a filesystem said to turn read-only, a drive said broken
        r"|\b(?:file\s*system|filesystem|fs|disk|volume)\s+(?:which\s+|that\s+)?(?:became|becomes"
        r"|went|goes|turned|was\s+remounted|got\s+remounted)\s+read-?only\b"
        r"|\bbroken\s+(?:SSD|NVMe|disk|drive|HDD)\b"
        # a job stuck on the storage (`stuck in CG state due to bad I/O`)
        r"|\b(?:due\s+to|because\s+of)\s+(?:a\s+)?(?:bad|hung|slow|stuck|failing|broken)\s+"
        r"(?:I/O|IO|disk|storage|NFS|filesystem)\b",
        (
            "stuck",
            "hung",
            "hanging",
            "blocked",
            "access",
            "failure",
            "died",
            "failed",
            "dead",
            "full",
            "space",
            "read-only",
            "readonly",
            "broken",
            "due to",
            "because of",
        ),
        "A local disk said to hang (tasks in D state on its path, a disk that cannot be "
        "reached), a drive said to fail, or a disk or directory said full: the node's storage; "
        "checkpoints and data loading through it stall or fail.",
        judge=said(_STORAGE),
        flags=re.IGNORECASE,
    ),
    rule(
        MULTINODE_RULE,
        # works on one node, fails across nodes (`Everything works fine on an individual node,
        # but multinode crashing`, `it works well within a node. but not works when using more
        # than 2 node`): the network between the nodes
        r"\b(?:works?|worked|working|runs?|ran|running|is\s+fine|fine)\s+(?:fine\s+|well\s+|ok\s+"
        r"|okay\s+|correctly\s+|perfectly\s+)?(?:on|within|in|inside|with)\s+(?:a\s+single|one|an?"
        r"\s+individual|a|single|the\s+same)\s+(?:node|machine|host|server)\b"
        r"(?:[^.\n]|\.\s+(?=but\b)){0,80}?\b(?:but|however|while|except)\b"
        r"(?=[^.\n]{0,100}?\b(?:fail\w*|crash\w*|hang\w*|hung|stuck|errors?|time[sd]?\s*out|timeout"
        r"|(?:does|do|did)\s*(?:n't|not)\s+work|not\s+works?|broken|cannot|can't|dies|died|freez\w*))"
        r"[^.\n]{0,80}?"
        r"\b(?:multi-?nodes?|multiple\s+(?:nodes|machines|hosts)|(?:two|2|more\s+than\s+(?:one|\d+))"
        r"\s+(?:nodes?|machines|hosts)|across\s+(?:nodes|machines|hosts)|cross-?node|inter-?node"
        r"|(?:a|the)\s+second\s+(?:node|machine|host))",
        ("node", "machine", "host", "server"),
        "The job works on one node and fails or hangs across nodes: what differs is the network "
        "between them (the NICs, the fabric, NCCL's choice of interface or transport); the "
        "watchdog timeouts and failed collectives it causes follow from it (EXPLAINED_BY).",
        judge=said(_NIC),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.network_setting_fixes",
        # the job works once NCCL or UCX is told to avoid or pin the fabric (`If I ran with
        # export NCCL_IB_DISABLE=1 to use simple TCP socket, everything work fine`, `It finally
        # worked after I set UCX_IB_GID_INDEX=0`): the InfiniBand or RoCE path is the fault
        r"\bNCCL_IB_DISABLE=1\b[^.\n]{0,80}?\b(?:works?|worked|fine|runs?|ran|succeed\w*)\b"
        r"|\b(?:works?|worked|fixed|solved|resolved)\s+(?:\w+\s+){0,3}?(?:after|once|when|by)\s+(?:I\s+|we\s+)?"
        r"(?:set(?:ting)?|export(?:ing)?|us(?:e|ing))\s+(?:export\s+)?(?:NCCL|UCX)_(?:IB|NET)_\w+",
        ("nccl_ib_disable", "nccl_", "ucx_"),
        "The job works once NCCL or UCX is told to avoid InfiniBand or to pin its GID index or "
        "interface: the fabric's path (a port, its GID table, a RoCE or IPoIB setting) is the "
        "fault the setting worked around (pinning NCCL's socket interface is configuration, "
        "not read here). Told in the first person: advice (`set NCCL_IB_DISABLE=1 to debug`) "
        "reports nothing.",
        judge=_first_person(_NIC),
        flags=re.IGNORECASE,
    ),
    rule(
        LOSSY_FABRIC_RULE,
        # a fabric said to drop packets or to pause (`the server NIC will send a pause frame`,
        # `a RoCE fabric not having proper flow control and therefore dropping packets`)
        r"\b(?:sends?|sending|sent|emits?|emitting|see|saw|seeing|storms?\s+of)\s+(?:a\s+lot\s+of\s+"
        r"|many\s+|an?\s+)?pause\s+frames?\b|\b(?:dropping|drops|dropped)\s+(?:\w+\s+)?packets\b"
        r"|(?<!0% )(?<!0\.0% )(?<!\bno )(?<!zero )\bpacket\s+(?:loss|drops)\b"
        r"|\bnot\s+having\s+(?:proper\s+)?(?:flow\s+control|PFC)\b"
        r"|\bwithout\s+(?:proper\s+)?(?:flow\s+control|PFC)\b",
        ("pause frame", "packets", "packet loss", "packet drops", "flow control", "pfc"),
        "A fabric said to drop packets or to send pause frames (a RoCE fabric without proper flow "
        "control): the network; collectives over it slow down or time out, and a slowdown the "
        "same input tells follows from it (EXPLAINED_BY).",
        judge=said(_NIC),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.gpu_throttling",
        GPU_THROTTLING.pattern,
        ("throttl",),
        "A GPU said to throttle its clocks (for heat or power): the GPU works below its speed; "
        "check its cooling, power cap and temperature limits.",
        judge=_throttling,
        flags=re.IGNORECASE,
    ),
    rule(
        "said.killed_by_system",
        r"\b(?:killed|terminated)\s+by\s+the\s+(?:system|OS|kernel|OOM[\s-]?killer)\b"
        # the host's memory said exhausted (`we run out of system RAM and the OS kills the
        # process`)
        r"|\b(?:run|ran|running|runs)\s+out\s+of\s+(?:system\s+|host\s+|CPU\s+)(?:RAM|memory)\b"
        r"|\b(?:the\s+)?(?:OS|kernel)\s+kills\s+(?:the|my|our)\s+(?:process|job|trainer)\b"
        # the host's memory said to OOM (`the RAM usage shoots up ..., causing RAM OOMs`)
        r"|\b(?:RAM|host\s+memory|system\s+memory|CPU\s+memory|CPU\s+RAM)\s+OOMs?\b"
        # killed once it held most of the host's memory (`this program was killed after it took
        # up 60g of memory`)
        r"|\b(?:was|got|is|gets)\s+killed\s+(?:after|when|once)\s+(?:it\s+)?(?:took\s+up|takes\s+up"
        r"|used|uses|using|consumed|reached|hit)\s+(?:about\s+|over\s+|~)?\d+(?:\.\d+)?\s*[GT]i?B?\s+"
        r"(?:of\s+)?(?:(?:system|host|CPU)\s+)?(?:RAM|memory)\b",
        ("killed by the", "terminated by the", "out of", "kills", "ooms", "oom", "killed"),
        "A process said to be killed by the system (the kernel's OOM killer, the usual reason "
        "a program exits with no error of its own), or the host's RAM said to OOM: the host's "
        "memory.",
        judge=_killed_for_memory,
        flags=re.IGNORECASE,
    ),
    rule(
        "said.ecc_is_hardware",
        r"\bECC\s+errors?\s+(?:is|are|means?|indicates?)\s+(?:a\s+)?(?:machine|hardware|GPU|card)"
        r"\s+(?:problem|issue|fault|failure)\b",
        ("ecc",),
        "An ECC error said to be the machine's problem: the GPU's memory; drain and inspect it.",
        judge=said(GPU_FAILED_SAID),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.nccl_timeout",
        # an NCCL timeout told in words (`an NCCL timeout error will appear after 10 minutes`)
        r"\b(?:an?\s+)?NCCL\s+(?:watchdog\s+)?time-?out(?:\s+error)?\s+(?:will\s+)?(?:appears?"
        r"|occurs?|happens?|is\s+raised|fires?|shows?\s+up|comes?\s+up|after)\b"
        r"|\b(?:got|get|gets|getting|hit|hits|see|saw)\s+(?:an?\s+)?NCCL\s+(?:watchdog\s+)?time-?outs?\b",
        ("nccl",),
        "An NCCL timeout told in words (it appears, fires, we hit one): a collective some rank "
        "never joined, a hang; capture the stacks.",
        judge=said(_HUNG_JOB),
        flags=re.IGNORECASE,
    ),
    rule(
        "said.nonfinite",
        # a gradient norm, a divergence or a loss said to be NaN or inf in words (rules_train
        # reads a logger's `loss = nan`)
        r"\b(?:grad(?:ient)?[\s_]norms?|gradients?|KL(?:[\s_]divergence)?|kl_loss|rewards?"
        r"|loss(?:es)?)\s+(?:all\s+|both\s+)?(?:is|are|was|were|becomes?|became|goes\s+to|went\s+to"
        r"|turns?\s+(?:in)?to|turned\s+(?:in)?to)\s+(?:all\s+|always\s+|still\s+|constantly\s+)?"
        r"(?:NaN|inf)\b"
        # a NaN loss or grad norm told as a noun, with when it came (`Nan loss after 20k+ steps`)
        # (InternEvo's own `Nan grad norm occurs, please check it`, after CJK words too)
        r"|(?<![A-Za-z])NaN\s+(?:loss(?:es)?|grad(?:ient)?[\s_]norms?)\s+(?:after|at|from|since"
        r"|around|appears?|appeared|occurs?|occurred)\b"
        # a NaN said to come in the loss (`the NaN in the loss appears after two epochs`; in the
        # first steps it is the loss scaler's, _SKIPPED)
        r"|(?<![A-Za-z])NaNs?\s+in\s+(?:the\s+)?loss\s+(?:comes?|came|appears?|appeared|starts?"
        r"|started|occurs?|occurred|shows?\s+up)\b"
        # a NaN said to appear in a norm or a loss (`NaN appeares in grad_norm`)
        r"|(?<![A-Za-z])NaNs?\s+(?:appear\w*|occur\w*|shows?\s+up|showed\s+up)\s+in\s+(?:the\s+)?"
        r"(?:\w+\s+)?(?:grad(?:ient)?[\s_]norms?|loss(?:es)?|gradients?)\b"
        # NaNs that take over a run, a grad norm that explodes (`eventually NaNs would
        # consistently take over`, `the grad norm explodes`)
        r"|\bNaNs?\s+(?:would\s+|will\s+)?(?:\w+\s+)?(?:take|took|takes)\s+over\b"
        r"|\bgrad(?:ient)?[\s_]norms?\s+(?:explodes?|exploded|exploding|blows?\s+up|blew\s+up)\b"
        # a NaN loss the speaker got (`I got the following NAN loss on the training:`)
        r"|\b(?:got|get|getting|gets|hit|saw|see)\s+(?:the\s+following\s+|a\s+|some\s+)?NaN\s+"
        r"(?:loss(?:es)?|grad(?:ient)?[\s_]norms?)\b",
        ("nan", "inf", "explod", "blow", "blew"),
        "A gradient norm, gradients, a divergence or a loss said to be NaN or inf, or a NaN "
        "loss told as when it came: the run diverged. Not a step the loss scaler or the code "
        "skipped (`inf for the first steps while the scaler backs off`).",
        judge=_diverged,
        flags=re.IGNORECASE,
    ),
)

HARMLESS_RULES: tuple[Rule, ...] = (
    rule(
        MISREAD_RULE,
        # an error logged under a worse name than it is (`corrected errors mistakenly logged as
        # UMCE`, `訂正されたエラーが誤ってUMCEとして...記録される`), a message found not to be the
        # cause (`It turns out to be a red herring`)
        r"\b(?:incorrectly|erroneously|mistakenly|wrongly|falsely)\s+(?:be\s+)?(?:logged|reported"
        r"|recorded|flagged|classified)\s+as\b"
        r"|誤って[^。\n]{0,60}?(?:記録|報告|検出)|無視して(?:かまいません|構いません|問題ありません)"
        r"|\b(?:turn(?:s|ed)\s+out\s+to\s+be|(?:is|was|were)(?:\s+just|\s+only)?)\s+a\s+red\s+herring\b"
        # a health check's finding the text calls a false positive (`This is a **false
        # positive**. IMEX (Internode Memory Exchange) brokers ...`), the check named around it
        r"|\b(?:this|that|it)\s+is\s+(?:\*\*)?(?:a\s+)?(?:\*\*)?false\s+(?:positive|alarm)\b"
        r"(?=[^\n]{0,200}?\b(?:IMEX|DCGM|health|alert|condition|watch)\b)"
        r"|\b(?:IMEX|DCGM|health|alert|condition|watch)\b[^\n]{0,200}?\b(?:this|that|it)\s+is\s+"
        r"(?:\*\*)?(?:a\s+)?(?:\*\*)?false\s+(?:positive|alarm)\b",
        (
            *("logged as", "reported as", "recorded as", "flagged as", "classified as"),
            *("誤って", "無視して", "red herring", "false positive", "false alarm"),
        ),
        "The text says an error was logged under a worse name than it is (corrected errors "
        "recorded as uncorrected by a firmware bug) or that a warning was a red herring: the "
        "machine checks, BMC entries and plain NCCL warnings of the same input are no fault "
        "(EXPLAINED_BY).",
        _NO_FAULT,
        flags=re.IGNORECASE,
    ),
    rule(
        INJECTED_RULE,
        # (`I'm deliberately not completing write commands`, `trying to simulate a scenario where
        # the guest needs to abort a command`, a fault-injection test)
        r"\b(?:deliberately|intentionally|on\s+purpose)\s+(?:not\s+)?(?:complet\w*|inject\w*"
        r"|caus\w*|trigger\w*|drop\w*|delay\w*|fail\w*|pull\w*|remov\w*|stall\w*)"
        r"|\bsimulat\w*\s+(?:a|an|the)\s+(?:\w+\s+){0,2}?(?:scenario|failure|fault|timeout|error"
        r"|crash)\b|\b(?:fault|error|failure)[\s-]injection\b",
        ("deliberately", "intentionally", "on purpose", "simulat", "injection"),
        "The text says the storage errors beside it were caused on purpose (a command left "
        "uncompleted, a fault injected, a failure simulated): a test's, no fault (EXPLAINED_BY).",
        _NO_FAULT,
        flags=re.IGNORECASE,
    ),
    rule(
        HARMLESS_RULE,
        # (`your hardware is perfectly healthy`, `these messages are harmless`, `can be safely
        # ignored`)
        r"\b(?:your|the)\s+(?:hardware|GPU|drive|NVMe|machine|system)\s+is\s+(?:perfectly\s+|completely"
        r"\s+|totally\s+)?(?:healthy|fine)\b"
        r"|\b(?:these|those|the|this|such)\s+(?:\w+\s+){0,2}?(?:messages?|errors?|warnings?|logs?|events?)"
        r"\s+(?:is|are)\s+(?:\w+\s+)?(?:harmless|benign|cosmetic|nothing\s+to\s+worry\s+about)\b"
        r"|\b(?:can|may)\s+(?:be\s+)?safely\s+(?:be\s+)?ignored\b"
        # (`The errors themselves are fixed according to the log entries (severity=corrected),
        # but the repeated entries make the log file confusing`)
        r"|\b(?:the|these|those)\s+errors\s+themselves\s+(?:are|were|get)\s+(?:(?!not\b)\w+\s+)?"
        r"(?P<own>fixed|corrected)\b"
        # (`Hung tasks are not normally terminal, nor do they affect system stability`)
        r"|\b(?:hung\s+tasks?|these\s+(?:\w+\s+)?(?:messages?|warnings?|errors?|reports?))\s+(?:are"
        r"|is)\s+not\s+(?:\w+\s+)?(?:terminal|fatal|harmful|dangerous|a\s+problem|an\s+issue)\b",
        (
            *("healthy", "fine", "harmless", "benign", "cosmetic", "worry", "safely", "are not"),
            "themselves",
        ),
        "The text says the errors are harmless or the hardware healthy (a tutorial on a PCIe AER "
        "log flood, a maintainer's reply, hung tasks said not to be fatal): no fault, and it "
        "ends the corrected errors' and hung tasks' warnings of the same input (EXPLAINED_BY).",
        judge=_harmless,
        flags=re.IGNORECASE,
    ),
)
"""Read after every fault rule (rules.py), so that a line which calls one thing fine and tells a
fault (`The GPU is fine but we get an illegal memory access`) is read for its fault."""


EXPLAINED_BY: dict[str, frozenset[str]] = joined(
    {
        rule_id: frozenset({MULTINODE_RULE})
        for rule_id in (
            *("hang.watchdog_timeout", "hang.watchdog_stuck", "hang.watchdog_terminating"),
            *("hang.ops_failed", "hang.collective_not_joined", "hang.ranks_missing"),
        )
    },
    {rule_id: frozenset({HARMLESS_RULE}) for rule_id in CORRECTED_RULES},
    {rule_id: frozenset({MISREAD_RULE}) for rule_id in MISREAD_RULES},
    {
        rule_id: frozenset({INJECTED_RULE})
        for rule_id in ("storage.nvme", "host.disk_io", "host.scsi_abort", "host.io_error")
    },
)
"""NCCL's timeouts and failed collectives in an input whose author says the job works on one
node and fails across nodes: the network between the nodes is the cause they follow from.
Corrected errors (a PCIe AER, a machine check, a throttle) in an input that says they are
harmless or the hardware healthy: a log flood, not a fault. Storage errors in an input that says
they were caused on purpose (a fault injected, a command left uncompleted): a test's. Machine
checks and BMC entries said logged wrongly, NCCL warnings called a red herring: no fault."""
