"""Process-exit rules: a rank that died by a signal, and crashes inside NCCL.

torchrun/elastic reports only an exit code (``failed (exitcode: -9)``, the ``Root Cause``
block with ``Signal 9 (SIGKILL) received by PID``), ``torch.multiprocessing.spawn`` says
``terminated with signal SIGBUS``, IDEs say ``exit code 139 (interrupted by signal 11:
SIGSEGV)``. The signal alone gives the most likely cause, with honest (low) confidence:

- SIGKILL: the kernel or cgroup OOM killer in most reports (could also be scancel or a
  preemption) -> host.memory, 0.45;
- SIGBUS: a DataLoader/shared-memory mapping that /dev/shm could not back -> host.memory, 0.55;
- SIGSEGV: a crash in native code the job loaded -> application, 0.5;
- SIGILL: a binary (or a prebuilt library it loaded) with instructions the CPU lacks (AVX,
  AVX-512) -> application, 0.55;
- SIGABRT: an abort whose reason is printed elsewhere (C++ exception, assertion, the NCCL
  watchdog tearing the process down) -> unknown, 0.3;
- SIGTERM: stopped from outside (scancel, preemption, the elastic agent) -> unknown, 0.3.

A process that refused its own command line (argparse's `error: unrecognized arguments`,
getopt's `unrecognized option '--x'` and `invalid option -- 'x'`, a start script's `Unknown
option: ...`, a benchmark launched on fewer nodes than it needs) is the job's setup: application.

Evidence elsewhere in the same input decides (diagnosis/explain/engine.py): an OOM-killer line
raises a SIGKILL finding to 0.85, a shared-memory error raises a SIGBUS finding to 0.85.
Patterns come from the development part of the corpus (ColossalAI#3556, Megatron-LM#1880,
LlamaFactory#2206, ALAE#61, ...) and gpud/NCCL issue segfaults (nccl#291, nccl#782, nccl#1996).
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

_STRSIGNAL = {
    4: "Illegal instruction",
    6: "Aborted",
    7: "Bus error",
    9: "Killed",
    11: "Segmentation fault",
    15: "Terminated",
}
"""strsignal() names, as the DataLoader ('is killed by signal: Aborted') and Open MPI/PRRTE
('exited on signal 11 (Segmentation fault)') print them."""


_NCCL_CRASH = verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.7)
_NO_CRASH = re.compile(
    r"\b(?:no|no\s+more|zero|without|never\s+(?:got|had|saw)|fix(?:es|ed)?|fixing|used\s+to"
    r"(?:\s+\w+)?|stopped)\s+(?:\w+\s+)?$|\b(?:fix(?:es|ed)?|resolv\w*)\b[^.\n]{0,30}$",
    re.IGNORECASE,
)
"""Words before a crash named in a sentence that deny it or put it in the past (`no more seg
faults since ...`, `Fix seg faults in ncclCommAbort`, `used to cause seg faults`)."""


def _crash_said(m: re.Match[str]) -> Verdict | None:
    """Return a crash in NCCL, unless a person's words deny the crash or say it is fixed."""
    said = m.start("said") if m["said"] else m.start("said2") if m["said2"] else -1
    if said >= 0:
        line_start = m.string.rfind("\n", 0, said) + 1
        if _NO_CRASH.search(m.string, max(line_start, said - 40), said):
            return None
    return _NCCL_CRASH


def _signal(number: int, name: str) -> str:
    """Return a pattern for a process ending by signal `number` (`name`) in the known spellings."""
    return (
        rf"exitcode\s*:\s*-{number}\b|failed \(exitcode: -{number}\)|Signal {number} \({name}\)"
        rf"|terminated with signal {name}\b|<Signals\.{name}: {number}>"
        rf"|interrupted by signal \d+: {name}\b|\*\*\* {name} received"
        rf"|is killed by signal: {_STRSIGNAL[number]}\b"
        rf"|exited on signal {number} \({_STRSIGNAL[number]}\)"
        # srun's task summary (`srun: error: node01: task 3: Segmentation fault`; its `Killed`
        # is rules_scheduler's: srun prints it after a time limit or a cancel too), a wait
        # status printed as is (slurmctld's `_job_complete: JobId=12 WTERMSIG 9`)
        + (rf"|\btasks? [\d,\-]+: {_STRSIGNAL[number]}\b" if number != 9 else "")
        + rf"|\bWTERMSIG {number}\b"
        # DeepSpeed's launcher (`... exits with return code = -9`)
        + rf"|exits with return code = -{number}\b"
        # PyTorch's c10 fatal signal handler (`SIGSEGV(11), PID: 1831084, Thread 1831084:`)
        + rf"|^\s*{name}\({number}\), PID: \d+, Thread \d+:"
        # Open MPI's crash handler (`Signal: Bus error (7)`, after `Process received signal`)
        + rf"|\bSignal: {_STRSIGNAL[number]} \({number}\)"
    )


_NEEDLES = ("exitcode", "signal", "task", "wtermsig", "return code")

_NCCL_SOURCE = (
    r"(?:(?:\S*/)?(?:misc/(?:ibvwrap|cudawrap|nvmlwrap|ibvsymbols|shmutils|ipcsocket)"
    r"|transport/(?:net_ib|net_socket|p2p|shm|coll_net|nvls|generic)"
    r"|graph/(?:topo|search|paths|connect|rings|trees|tuning|xml))\.cc"
    r"|\S*nccl\S*/\w+\.(?:cc|cu|h))"
)
"""A source file of NCCL a debugger frame names: one of its wrappers, transports or topology
files (``misc/ibvwrap.cc``), or any file under a path that names NCCL."""

NCCL_FRAME = re.compile(
    r"segfault at \S+ ip \S+ sp \S+ error \d+ in libnccl"
    # the kernel's general protection fault in the same form (arch/x86/kernel/traps.c)
    r"|general protection fault ip:\S+ sp:\S+ error:\S+ in libnccl"
    # glibc's backtrace_symbols frame, with or without the symbol (``(ncclX+0x1a)``)
    r"|libnccl[\w.+-]*\.so[\d.]*\((?:\w*[+-])?0x[0-9a-f]+\)"
    # backward-cpp's (``Object "/usr/lib/.../libnccl.so.2", at 0x7f.., in ncclX``)
    r"|\bObject \"\S*libnccl[\w.+-]*\.so[\d.]*\", at 0x"
    # systemd-coredump's (``#0  0x00007f3b9a11b2c3 n/a (libnccl.so.2 + 0x8a1b3)``)
    r"|^\s*#\d+\s+0x[0-9a-f]+ \S+ \(libnccl[\w.+-]*\.so[\d.]* \+ 0x[0-9a-f]+\)"
    # glog's failure handler: the PC line and the frames (``@ 0x7f... ncclGroupEnd``)
    r"|(?:PC: )?@\s+0x[0-9a-f]+\s+(?:\(unknown\)\s+)?p?nccl[A-Z]\w*"
    r"|^\s*\d+\s+0x[0-9a-f]+ p?nccl[A-Z]\w*\(\)"
    # gdb's top frame stopped in an NCCL function (or a caller's NCCL wrapper) with a null
    # pointer among its arguments (``#0 ... in ncclIbDeregMr (comm=0x0, ...)``): a crash on it
    # (not `stream=0x0`: CUDA's legacy default stream is a valid argument)
    r"|^#0\s+(?:0x[0-9a-f]+\s+in\s+)?[\w:]*[Nn]ccl[\w:]*\s*\([^)\n]*\b(?!stream=)\w+=0x0\b",
    re.MULTILINE,
)
"""A native stack frame inside NCCL as a crash handler prints it (the kernel, glibc,
backward-cpp, systemd-coredump, glog, UCX): these print only when a process crashes; and gdb's
top frame on a null pointer, which a waiting process's stack does not show."""

NCCL_STACK_FRAME = re.compile(
    # gdb: a frame with NCCL's symbol, without a symbol (``in ?? () from .../libnccl.so.2``), in
    # NCCL's own sources, or the line it stops on (no ``#N``)
    r"^#\d+\s+0x[0-9a-f]+ in nccl\w+ \("
    r"|^(?:#\d+\s+)?0x[0-9a-f]+ in \S+ \(.*\) from \S*libnccl"
    rf"|^#\d+\s+(?:0x[0-9a-f]+ in )?\S+ \(.*\) at {_NCCL_SOURCE}:\d+"
    # c10's backtrace (``frame #2: <unknown function> + 0x7a1b3 (0x7f.. in .../libnccl.so.2)``)
    # and lldb's (``frame #0: 0x00007fffe1b2c3d4 libnccl.so.2`ncclProxyProgress + 52``)
    r"|^\s*(?:\*\s+)?frame #\d+: .{0,300}\(0x[0-9a-f]+ in \S*libnccl[\w.+-]*\.so"
    r"|^\s*(?:\*\s+)?frame #\d+: 0x[0-9a-f]+ libnccl[\w.+-]*\.so[\d.]*`"
    # PyTorch's symbolized native trace and backward-cpp's with sources: frames in NCCL's
    # sources or its functions (``File "<unknown>", ... in ncclX``, ``Source "src/proxy.cc"``)
    rf"|^\s*(?:File|#\d+\s+Source) \"{_NCCL_SOURCE}\", line \d+"
    r"|^\s*(?:File|#\d+\s+Source) \"(?:<unknown>|[^\"]*\.(?:cc|cu|cpp|h))\", line \d+, in "
    r"p?nccl[A-Z]\w*",
    re.MULTILINE,
)
"""A stack frame inside NCCL as a debugger or a trace prints it (gdb, lldb, c10, PyTorch's
symbolized trace, backward-cpp with sources). These print for a hung process or an exception
too, so their finding stands only with a crash in the same input (``CRASH_RULES``)."""

CRASH_RULES = frozenset(
    {
        "process.segfault",
        "process.sigbus",
        "process.sigabrt",
        "process.nccl_segfault",
        "process.crash_signal",
    }
)
"""Rules whose finding says a process crashed (a fatal signal, a crash handler's frame)."""

NEEDS_CRASH: frozenset[str] = frozenset({"process.nccl_frame"})
"""Rules whose finding stands only with a crash in the same input: a CRASH_RULES finding, or a
person's word for one (CRASH_WORDS: ``GDB stacktrace of the segv``)."""

CRASH_WORDS = re.compile(
    r"\b(?:segv|segfault\w*|seg\s+faults?|segmentation\s+fault|SIGSEGV|SIGBUS|SIGABRT|core\s+dump(?:ed)?"
    r"|crash(?:es|ed|ing)?)\b",
    re.IGNORECASE,
)

BREAKPOINT_RULE = "process.breakpoint_stop"
EXPLAINED_BY = dict.fromkeys(
    ("process.nccl_segfault", "process.nccl_frame"), frozenset({BREAKPOINT_RULE})
)
"""gdb's frames in an input that stopped at a breakpoint: a developer's trace, where a null
argument is a default, not a crash."""

RULES: tuple[Rule, ...] = (
    rule(
        "process.bad_arguments",
        r"\berror: (?:unrecognized arguments|the following arguments are required): \S"
        r"|: (?:unrecognized option '[^'\n]+'|invalid option -- '?\w'?)"
        r"|^Unknown option: \S"
        # a program that refuses the size it was launched at (GPCNet: `ERROR: this application
        # must be run on at least 2 nodes`)
        r"|\b(?i:error):?\s+[^\n]{0,40}?\bmust be run (?:on|with) at least \d+ "
        r"(?:nodes|processes|ranks|GPUs|tasks)\b",
        (
            *("unrecognized", "invalid option", "arguments are required", "unknown option"),
            "must be run",
        ),
        "A program refused its command line (an argument it does not know, one it needs "
        "missing): the job's or the service's setup passes the wrong options; fix the command.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
        flags=re.MULTILINE,
    ),
    rule(
        BREAKPOINT_RULE,
        r"(?:^|\bhit\s)Breakpoint \d+, ",
        ("breakpoint",),
        "gdb stopped at a breakpoint a developer set: a trace, no crash; the frames it prints "
        "explain no crash in NCCL (EXPLAINED_BY).",
        verdict(C.BENIGN, B.APPLICATION, K.JOB, S.INFO, A.NONE, 0.5),
        flags=re.MULTILINE,
    ),
    rule(
        "process.nccl_segfault",
        NCCL_FRAME.pattern
        # a person's sentence: a segfault and NCCL (or its calls) named together
        + r"|(?i:\b(?P<said>seg\s?faults?|segv|segmentation fault|SIGSEGV)\b"
        r"(?!\s+(?:tickets?|issues?|reports?|bugs?))[^\n]{0,80}\bp?nccl"
        r"|\bp?nccl\w*\b[^\n]{0,80}\b(?P<said2>seg\s?faults?|segv|segmentation fault|SIGSEGV)\b"
        r"(?!\s+(?:tickets?|issues?|reports?|bugs?)))",
        ("libnccl", "nccl", "misc/", "transport/", "graph/"),
        "A crash inside NCCL (kernel segfault line, backtrace frame, a person's words): a NCCL "
        "bug or a library mismatch, so the job's stack (pin or upgrade NCCL); if it repeats on "
        "one node only, check that node's NIC and driver. gdb's top frame at a breakpoint is no "
        "crash; words that deny the crash, or say it is fixed or past, are none.",
        judge=_crash_said,
    ),
    rule(
        "process.nccl_frame",
        NCCL_STACK_FRAME.pattern,
        ("libnccl", "nccl", "misc/", "transport/", "graph/"),
        "A debugger's or a trace's frame inside NCCL in an input that shows a crash (a fatal "
        "signal): the crash happened in NCCL. Without a crash the frame is a hung or "
        "waiting process's stack, and no finding.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.7),
        flags=re.MULTILINE,
    ),
    rule(
        "process.segfault",
        _signal(11, "SIGSEGV") + r"|Caught signal 11 \(Segmentation fault|Signal: Segmentation "
        r"fault \(11\)|segfault at [0-9a-f]+ ip [0-9a-f]+ sp [0-9a-f]+ error \d+"
        r"|Segmentation fault\s+\(core dumped\)"
        # Python's faulthandler (two processes printing at once interleave it: no \b after)
        r"|Fatal Python error: (?:Fatal Python error: )?Segmentation fault"
        # PyTorch's symbolized native trace (vLLM, SGLang), gdb's stop, lldb's stop reason,
        # systemd-coredump's signal, glog's failure handler
        r"|!!!!!!! Segfault encountered !!!!!!!|received signal SIGSEGV, Segmentation fault"
        r"|stop reason = signal SIGSEGV|^\s*Signal: 11 \(SEGV\)"
        r"|\*\*\* SIGSEGV \(@0x[0-9a-f]+\) received by PID"
        # the shell's own report: the line alone, or bash's `line 1: 1234 Segmentation fault  cmd`
        r"|^\s*Segmentation fault\s*$|\b\d+\s+Segmentation fault\s{2,}\S"
        r"|\bline \d+:\s+\d+\s+Segmentation fault\b|^\s*zsh: segmentation fault\s"
        # glibc's SIGSEGV name in other locales (de, fr, es, pt, it, ru, zh, ja)
        r"|\bSpeicherzugriffsfehler\b|\bErreur de segmentation\b|\bViolación de segmento\b"
        r"|\bFalha de segmentação\b|\bErrore di segmentazione\b|Ошибка сегментирования"
        r"|段错误|セグメンテーション違反",
        (
            *(*_NEEDLES, "segmentation fault", "segfault", "sigsegv", "speicherzugriffsfehler"),
            *("erreur de segmentation", "violación de segmento", "falha de segmentação"),
            *(
                "errore di segmentazione",
                "ошибка сегментирования",
                "段错误",
                "セグメンテーション違反",
            ),
        ),
        "A process died of SIGSEGV: native code the job loaded crashed (an extension, a "
        "library). Application, moderate confidence: faulty memory can do it too.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "process.pure_virtual_call",
        # the C++ runtime's own words (`pure virtual method called`, then `terminate called
        # without an active exception`): an object used after its destruction, often at exit
        r"(?:^|[\]:]\s|\d\s)\s*pure virtual method called\s*$"
        r"|\blibc\+\+abi: Pure virtual function called!",
        ("pure virtual method called", "pure virtual function called"),
        "The C++ runtime called a pure virtual method: an object used while or after it was "
        "destroyed (often a teardown race at exit, a callback that outlived its owner); the "
        "abort (SIGABRT) that follows is its consequence. The program's bug.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        "process.crash_signal",
        r"\*\*\* Process received signal \*\*\*",
        ("process received signal",),
        "Open MPI's crash handler caught a fatal signal (it handles SIGABRT, SIGBUS, SIGFPE and "
        "SIGSEGV by default); its next lines name the signal and the frames, which other rules "
        "read. Alone: a crash of the job's native code, low confidence.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.35),
    ),
    rule(
        "process.sigkill",
        # (a container's status, as kubectl prints it: `"exitCode": 137`, `Exit Code: 137`)
        _signal(9, "SIGKILL") + r"|exit code 137\b|\b(?i:exit[\s_]?code)\"?\s*[:=]\s*137\b",
        (*_NEEDLES, "exit code 137", "sigkill", "137"),
        "A rank was killed by SIGKILL and nothing else is said: most often the OOM killer "
        "(the kernel's or the cgroup's); also scancel or a preemption. Low confidence unless an "
        "OOM-killer line is in the same input.",
        verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.45),
    ),
    rule(
        "process.sigbus",
        _signal(7, "SIGBUS") + r"|\d+ bus error\s+\S"
        # UCX's and others' crash handlers (`Caught signal 7 (Bus error: nonexistent physical
        # address)`)
        r"|\bCaught signal 7 \(Bus error\b",
        (*_NEEDLES, "bus error", "sigbus"),
        "A rank died of SIGBUS: a memory mapping could not be backed, in training almost always "
        "DataLoader shared memory (/dev/shm too small in a container). Raised when a shared-"
        "memory error is in the same input.",
        verdict(C.HOST_MEMORY, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.55),
    ),
    rule(
        "process.sigabrt",
        _signal(6, "SIGABRT"),
        (*_NEEDLES, "sigabrt"),
        "A rank aborted (SIGABRT): the reason is printed before it (a C++ exception, an "
        "assertion, the NCCL watchdog taking the process down). Unknown on its own.",
        verdict(C.UNKNOWN, B.UNKNOWN, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.3),
    ),
    rule(
        "process.sigill",
        _signal(4, "SIGILL")
        # a shell's report of its child (`Illegal instruction (core dumped)`, bash's `line 1:
        # 4242 Illegal instruction (core dumped) python x.py`, zsh's `illegal hardware
        # instruction`), Python's faulthandler, glog's handler (`*** SIGILL (@0x7f) received`)
        + r"|^\s*(?:\[[^\]\n]*\]\s*)?Illegal instruction(?:\s*\(core dumped\))?\s*$"
        r"|^\s*\S+:\s*line \d+:\s*\d+\s+Illegal instruction\b"
        r"|\b(?:zsh: )?illegal hardware instruction\b|\bFatal Python error: Illegal instruction\b"
        r"|\*\*\* SIGILL \(@",
        (*_NEEDLES, "sigill", "illegal instruction", "illegal hardware"),
        "A process died of SIGILL: the binary, or a prebuilt library it loaded (a wheel built "
        "with AVX or AVX-512), uses instructions this CPU does not have, or was built for "
        "another architecture: rebuild or install a build for this CPU; the job's software, "
        "not the node's hardware.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.55),
    ),
    rule(
        "process.sigterm",
        _signal(15, "SIGTERM"),
        (*_NEEDLES, "sigterm"),
        "A rank or worker was terminated (SIGTERM): something outside it stopped it (scancel, "
        "a preemption, the elastic agent tearing down the group after another rank failed). "
        "Unknown on its own: the cause is elsewhere.",
        verdict(C.UNKNOWN, B.UNKNOWN, K.JOB, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.3),
    ),
)

EVIDENCE: dict[str, frozenset[str]] = {
    "process.sigkill": frozenset({"host.oom_killer"}),
    "process.sigbus": frozenset({"host.shm_bus_error", "host.shm_full"}),
}
"""For a signal rule, the rules whose finding in the same input confirms its reading."""

CONFIRMED_CONFIDENCE = 0.85
