"""Kernel rules: panic, Oops, soft/hard lockups, hung tasks, machine checks the older rules miss.

Written from the development part of the corpus: ``Kernel panic - not syncing`` in its
variants (hung_task, kasan, Fatal exception [in interrupt], the ``---[ end Kernel panic``
trailer), Oops headers (``Oops: 0002 [#1] SMP``, ``Oops: Oops: ...``, RISC-V ``Oops [#1]``),
``BUG: unable to handle (kernel NULL pointer dereference|page fault)``, ``BUG: kernel NULL
pointer dereference, address``, arm64 ``Internal error: Oops:``, ``Bad RIP value``,
soft lockups with and without the ``watchdog:``/``NMI watchdog:`` prefix, hard LOCKUP, hung
tasks (``INFO: task X:pid blocked for more than N seconds`` and gpud's form without INFO),
and machine checks as a BMC or EDAC prints them (``Uncorrectable Machine Check Exception``,
``CMCI storm``, ``Machine Check Event``, AMD ``MC255_STATUS[...|CE|...]``).
All point at the node (component node, blame infrastructure), except in an input that shows the
crash provoked on purpose (the kernel's lkdtm test module, SysRq's `Trigger a crash`):
a test, whose panic, Oops, lockup or hung task is no fault (EXPLAINED_BY); so is the OOM kill
or panic_on_oom's panic after SysRq's `Manual OOM execution`.
"""

from __future__ import annotations

import re

from diagnosis.explain.rules import Rule, host_hardware, rule, unless_named_only, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

PROVOKED_RULE = "kernel.provoked"
PROVOKED_OOM_RULE = "kernel.provoked_oom"
_A_TEST = verdict(C.BENIGN, B.INFRASTRUCTURE, K.NODE, S.INFO, A.NONE, 0.5)
"""What a provoked crash or OOM kill is: the node's own test, nothing to act on."""

RULES: tuple[Rule, ...] = (
    rule(
        PROVOKED_RULE,
        # (the kernel's own lines only: a command quoted in a runbook or denied is no test)
        r"\blkdtm: Performing direct entry \w+|\bsysrq: (?:SysRq : )?Trigger a crash\b",
        ("lkdtm", "trigger a crash"),
        "A crash provoked on purpose (lkdtm's provoke-crash entries, SysRq's `c`): a test of the "
        "kernel's detectors; the panic, Oops, lockup or hung task it causes is no fault.",
        _A_TEST,
        flags=re.IGNORECASE,
    ),
    rule(
        PROVOKED_OOM_RULE,
        # SysRq's `f` (`echo f > /proc/sysrq-trigger`), as the kernel logs it
        r"\bSysRq : Manual OOM execution\b|\bsysrq: Manual OOM execution\b",
        ("manual oom execution",),
        "An OOM kill asked for by hand (SysRq's `f`): a test of the OOM killer or of "
        "panic_on_oom; the kill or panic it causes is no fault.",
        _A_TEST,
        flags=re.IGNORECASE,
    ),
    rule(
        "kernel.fs_checksum_driver_missing",
        # ext4 (or another filesystem) without the checksum module its metadata needs, as an
        # initramfs that lacks it boots (`EXT4-fs (sda2): Cannot load crc32c driver.`)
        r"\b(?:\w+-fs \([^)\n]+\)|JBD2): Cannot load crc32c driver\b",
        ("crc32c driver",),
        "The filesystem cannot load the checksum driver its metadata needs (crc32c, missing "
        "from the initramfs or the kernel's modules): it does not mount, or mounts without "
        "verifying; rebuild the initramfs with the module.",
        verdict(C.HOST_STORAGE, B.INFRASTRUCTURE, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "kernel.netdev_refcount_stuck",
        # a network device that cannot be freed (a reference leaked): the namespace teardown
        # waits for ever and every later network namespace (pod) creation with it
        r"\bunregister_netdevice: waiting for \S+ to become free\. Usage count = \d+",
        ("unregister_netdevice",),
        "The kernel cannot free a network device whose references leaked (`unregister_netdevice: "
        "waiting for ... to become free`): network namespaces stop being created and destroyed, "
        "so new pods and containers hang; reboot the node.",
        verdict(C.HANG, B.INFRASTRUCTURE, K.NODE, S.ERROR, A.REBOOT_NODE, 0.5),
    ),
    rule(
        "kernel.panic",
        # (not a panic the OOM killer asked for: panic_on_oom, host memory's; nor one a storage
        # layer asked for: Lustre's LBUG, a ZFS pool's failmode=panic, read by their rules)
        r"Kernel panic - not syncing(?!: (?:Out of memory|System is deadlocked on memory|LBUG\b"
        r"|Pool '[^']*' has encountered an uncorrectable I/O failure))"
        r"|\bPANIC: double fault\b"
        r"|^panic\(cpu \d+ caller 0x[0-9a-f]+\)",
        ("kernel panic", "panic(cpu", "double fault"),
        "The kernel panicked: the node went down (or rebooted); every rank on it died.",
        judge=unless_named_only(host_hardware(S.CRITICAL, A.REBOOT_NODE, 0.9)),
    ),
    rule(
        "kernel.oops",
        r"\bOops: (?:Oops: )?[0-9a-f]{4} \[#\d+\]|\bOops \[#\d+\]"
        r"|BUG: unable to handle (?:kernel|page fault)|general protection fault[:,]"
        r"|BUG: kernel NULL pointer dereference, address|Internal error: Oops: [0-9a-f]+ \[#"
        r"|Unable to handle kernel (?:paging request|NULL pointer)|Code: +Bad RIP value"
        # a kernel BUG() and the trap it raises (`kernel BUG at lib/list_debug.c:51!`, `invalid
        # opcode: 0000 [#1] SMP`), a corrupted list the debug checks caught
        r"|\bkernel BUG at \S+:\d+!|\binvalid opcode: [0-9a-f]{4} \[#\d+\]"
        r"|\blist_(?:del|add) corruption[.,]",
        (
            "oops",
            "unable to handle",
            "general protection fault",
            "bad rip value",
            "null pointer dereference",
            *("kernel bug at", "invalid opcode", "corruption.", "corruption,"),
        ),
        "A kernel Oops: a driver or the kernel dereferenced a bad pointer. The node is "
        "unreliable until rebooted (and the module in the trace is the suspect).",
        judge=unless_named_only(host_hardware(S.ERROR, A.REBOOT_NODE, 0.75)),
    ),
    rule(
        "kernel.end_trace",
        r"---\[ end trace [0-9a-f]+ \]---",
        ("end trace",),
        "The end of a kernel trace (Oops or WARN): something in the kernel went wrong; the "
        "lines above say what.",
        host_hardware(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45),
    ),
    rule(
        "kernel.crash_rip",
        r"\bRIP: [0-9a-f]{4}:(?:\[<[0-9a-f]+>\]\s+){0,2}[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+",
        ("rip:",),
        "The instruction pointer the kernel prints with an Oops, a BUG or a WARN (``RIP: "
        "0010:func+0x1b/0x350 [module]``): the kernel trapped in that function; the lines "
        "around it say how badly, the module named is the suspect.",
        host_hardware(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45),
    ),
    rule(
        "kernel.lockup",
        r"soft lockup\.? - CPU\s?#?\w+ stuck for \d+s|Watchdog detected hard LOCKUP"
        r"|rcu_\w+ (?:self-)?detected (?:stalls|stall)|BUG: workqueue lockup",
        ("lockup", "detected stall", "self-detected stall"),
        "A CPU stopped scheduling (soft/hard lockup, RCU stall): a driver spin or a hardware "
        "fault; the node stutters or hangs.",
        host_hardware(S.ERROR, A.CAPTURE_DIAGNOSTICS, 0.7),
    ),
    rule(
        "kernel.hung_task",
        r"(?:INFO: )?task \S+:(?:\d+|\$\w+) blocked for more than \d+ seconds",
        ("blocked for more than",),
        "A task waited in the kernel (D state) past the hung-task timeout: usually storage or "
        "a network filesystem, sometimes a driver (nvidia_uvm). The stack names the subsystem.",
        host_hardware(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.6),
    ),
    rule(
        "kernel.mce_uncorrected",
        r"Uncorrectable Machine Check Exception|UE memory (?:read|write|scrubbing) error"
        r"|\bMC\d+_STATUS\[[^\]]*\|UE\|",
        ("machine check exception", "ue memory", "_status["),
        "An uncorrectable machine check (BMC log or EDAC UE): the host's CPU or DIMM failed.",
        host_hardware(S.CRITICAL, A.ISOLATE_NODE, 0.85),
    ),
    rule(
        "kernel.mce_corrected",
        r"CMCI storm detected|Machine Check Event:|HANDLING MCE MEMORY ERROR"
        r"|\bMC\d+_STATUS\[[^\]]*\|CE\||CE memory (?:read|write|scrubbing) error|\d+ CE error on",
        (
            "cmci storm",
            "machine check event",
            "mce memory error",
            "_status[",
            "ce memory",
            "ce error on",
        ),
        "Corrected memory errors (EDAC CE, CMCI storm): the DIMM is degrading; watch the count.",
        host_hardware(S.WARNING, A.MONITOR, 0.65),
    ),  # fmt: skip
)

EXPLAINED_BY: dict[str, frozenset[str]] = {
    rule_id: frozenset({PROVOKED_RULE})
    for rule_id in (
        "kernel.panic",
        "kernel.oops",
        "kernel.end_trace",
        "kernel.crash_rip",
        "kernel.lockup",
        "kernel.hung_task",
    )
} | {"host.oom_killer": frozenset({PROVOKED_OOM_RULE})}
"""A kernel crash in an input that shows it provoked (lkdtm, SysRq), an OOM kill or panic in an
input that shows it asked for by hand (SysRq's `f`): the test's own result."""
