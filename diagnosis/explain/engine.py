"""Explain log text: records in, findings out, most severe first.

- One record yields at most one finding: the first rule in precedence order that matches.
- A Python traceback is one finding: its frames and source lines are skipped and the
  exception line is classified (with more confidence than a lone exception line).
- Findings that differ only in their evidence line collapse into one (its first line, the
  highest confidence): 800,000 identical Xid 95 lines give one finding, with no count of them.
- The lines that concern speed (step times, progress, per-member rates, tables, quoted step
  times) go to a SpeedReader (diagnosis/explain/speeds.py), whose slowdowns and slow members
  join the findings at the end of the pass.
- nvidia-smi -q's `Fabric` block: a `State` still `In Progress` or a `Status` other than
  `Success` (N/A: no fabric) is an NVLink fault (diagnosis/explain/rules_nvlink.fabric_field).
- DCGM's diagnostic JSON: a GPU's measured rate (``calculated at approximately N gigaflops``)
  and a ``"status" : "Fail"`` in the same input make a slow-GPU (straggler) finding.
- A rank's death by a signal alone has low confidence; an OOM-killer line (SIGKILL) or a
  shared-memory error (SIGBUS) in the same input raises it to 0.85.
- `node` names the machine the text came from and always wins; without it the host a line's
  own prefix names (NCCL ``host:pid:tid``, syslog) is used. Nothing recognisable gives ``[]``
  (with ``hint=True``, at most the learned hint: hint.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from diagnosis.catalog import Verdict
from diagnosis.explain import (
    documents,
    rules_comm,
    rules_container,
    rules_dist,
    rules_driver,
    rules_fabric,
    rules_gpu,
    rules_host,
    rules_kernel,
    rules_netfs,
    rules_nic,
    rules_nvlink,
    rules_pcie,
    rules_process,
    rules_rdma,
    rules_said,
    rules_scheduler,
    rules_slowness,
    rules_stalled,
    rules_storage,
    rules_train,
)
from diagnosis.explain.hint import hint as learned_hint
from diagnosis.explain.memory_counts import MCELOG_COUNT, MCELOG_HEADER, MCELOG_RULE, mcelog_count
from diagnosis.explain.pci_owner import (
    GPU_OWNED,
    KERNEL_PCI_DEVICE,
    LSPCI_DEVICE,
    OWNED_BY_KIND,
    device_kind,
)
from diagnosis.explain.records import Record, records
from diagnosis.explain.rules import Hit, joined, normalize_pci, rule_set
from diagnosis.explain.rules_host import COOLED_RULE, GPU_NAMED, THROTTLED_RULE, CpuHeat
from diagnosis.explain.rules_monitors import ALERT_RESOLVED
from diagnosis.explain.rules_nvlink import FABRIC_RULE, fabric_field
from diagnosis.explain.rules_process import (
    CONFIRMED_CONFIDENCE,
    CRASH_RULES,
    CRASH_WORDS,
    EVIDENCE,
    NCCL_FRAME,
    NCCL_STACK_FRAME,
    NEEDS_CRASH,
)
from diagnosis.explain.rules_rdma import PORT_DOWN_RULE, HcaPorts
from diagnosis.explain.rules_stalled import RESUMED
from diagnosis.explain.rules_straggler import MINMAX_MARK, MINMAX_RULE
from diagnosis.explain.rules_train import FINITE_GRAD_NORM, NONFINITE_NORM_RULE
from diagnosis.explain.speeds import SLOW_DEVICE, SpeedReader
from diagnosis.model import Category, Finding, Severity

MAX_EVIDENCE = 1000
"""Characters of an evidence line kept in a finding."""

_MEMO_LIMIT = 65_536
_SEVERITY_ORDER = {Severity.CRITICAL: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}
_TB_HEADER = re.compile(r"^\s*Traceback \(most recent call last\):")
_FRAME = re.compile(r'^\s*(?:File "[^"]*", line \d+|line \d+, in \S+|frame #\d+: )')
# an exception line, indented as a pasted traceback's are (`  RuntimeError: ...`): it ends the
# traceback, it is not a frame's source line
_EXCEPTION = re.compile(
    r"^\s+(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)(?::|\s*$)"
)
_SMI_GPU = re.compile(r"^GPU (?P<pci>[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
_FABRIC_HEADER = re.compile(r"^\s*Fabric\s*$")
_DIAG_FAIL = re.compile(r'"status"\s*:\s*"Fail"')
RECOVERED_BY = rules_netfs.RECOVERED_BY | rules_nic.RECOVERED_BY | rules_scheduler.RECOVERED_BY
"""For a rule of waiting or of an event, the rules whose later finding says it ended."""
ONLY_TO_RECOVER = (
    rules_comm.ONLY_TO_RECOVER
    | rules_netfs.ONLY_TO_RECOVER
    | rules_nic.ONLY_TO_RECOVER
    | rules_scheduler.ONLY_TO_RECOVER
)


_EXPLAINED_BY = joined(
    *(rules_scheduler.EXPLAINED_BY, rules_dist.EXPLAINED_BY, rules_driver.EXPLAINED_BY),
    *(rules_nvlink.EXPLAINED_BY, rules_pcie.EXPLAINED_BY, rules_container.EXPLAINED_BY),
    *(rules_kernel.EXPLAINED_BY, rules_said.EXPLAINED_BY, rules_fabric.EXPLAINED_BY),
    *(rules_host.EXPLAINED_BY, rules_nic.EXPLAINED_BY, rules_process.EXPLAINED_BY),
    *(rules_rdma.EXPLAINED_BY, rules_slowness.EXPLAINED_BY, rules_train.EXPLAINED_BY),
    *(rules_gpu.EXPLAINED_BY, rules_comm.EXPLAINED_BY, rules_storage.EXPLAINED_BY),
)
"""For a rule whose line follows from another cause, the rules that give that cause."""
_SMI_RULES = frozenset({"gpu.remap_failure", "gpu.remap_pending", "gpu.ecc_counter"})
_FAULT_SEVERITIES = frozenset({Severity.ERROR, Severity.CRITICAL})

Key = tuple[str, Verdict, str | None, int | None, str | None, int | None, int | None]


@dataclass
class _Candidate:
    """A finding being collected: where it was first seen, its best confidence, and how many
    records gave it."""

    index: int
    line: str
    confidence: float
    seen: int = 1


@dataclass
class _State:
    """What the pass over one text has seen so far."""

    node: str | None
    speeds: SpeedReader
    found: dict[Key, _Candidate] = field(default_factory=dict)
    memo: dict[tuple[str, bool], tuple[Hit, float] | None] = field(default_factory=dict)
    in_traceback: set[tuple[str | None, int | None, int | None]] = field(default_factory=set)
    smi_pci: str | None = None
    diag_rate: tuple[Hit, Record] | None = None
    diag_fail: bool = False
    fabric_indent: int | None = None  # inside nvidia-smi -q's `Fabric` block: its indent
    mcelog_kind: str | None = None  # inside mcelog's memory summary: `corrected`, `uncorrected`
    visited: int = 0  # records visited so far
    crash_said: bool = False  # a record names a crash (rules_process.CRASH_WORDS)
    minmax_calm: int = -1  # the last Megatron straggler-detector interval that named none
    alert_resolved: bool = False  # a line is an alert's resolved header (ALERT_RESOLVED)
    resumed_at: int = -1  # the last line that says the job moved on (rules_stalled.RESUMED)
    finite_norm_at: int = -1  # the last line with a finite grad norm (rules_train)
    gpu_named: bool = False  # a record names a GPU (rules_host.GPU_NAMED: pci_owner.GPU_OWNED)
    pci_kind: str | None = None  # the last PCI device header's kind (device_kind); None: none
    pci_kinds: dict[str, str] = field(default_factory=dict)  # enumerated devices' kinds, by address
    gpus_said: bool = False  # a GPU named outside a plugin's notice (rules_scheduler.NO_GPU_CLAIM)
    node_refused: bool = False  # a node shown down or drained (rules_scheduler.NODE_REFUSED)
    owner_unknown: set[str] = field(default_factory=set)  # GPU_OWNED rules seen with no header
    heat: CpuHeat = field(default_factory=CpuHeat)  # the CPUs left throttled (rules_host)
    hca: HcaPorts = field(default_factory=HcaPorts)  # HCAs' ports down and active (rules_rdma)
    examples: documents.Examples = field(default_factory=documents.Examples)  # a page's samples

    def add(
        self, rule_id: str, verdict: Verdict, hit: Hit | None, rec: Record, conf: float
    ) -> None:
        """Collect one finding, merging it with an identical earlier one."""
        node = self.node or (hit.host if hit and hit.host else None) or rec.host
        gpu = hit.gpu if hit and hit.gpu is not None else rec.device
        pci = hit.pci if hit else None
        if pci is None and rule_id in _SMI_RULES:
            pci = self.smi_pci
        rank = rec.rank if rec.rank is not None else (hit.rank if hit else None)
        key: Key = (rule_id, verdict, node, gpu, pci, rank, hit.xid if hit else None)
        known = self.found.get(key)
        if known is None:
            self.found[key] = _Candidate(rec.line_no, rec.raw.strip()[:MAX_EVIDENCE], conf)
            return
        known.seen += 1
        if conf > known.confidence:
            known.confidence = conf


def _classify(state: _State, body: str, exception_line: bool) -> tuple[Hit, float] | None:
    """Return the winning hit for `body` and its confidence, memoised for repeated lines."""
    key = (body, exception_line)
    if key in state.memo:
        return state.memo[key]
    result: tuple[Hit, float] | None = None
    matched = rule_set().first_hit(body)
    if matched is not None:
        rule_, hit = matched
        boost = rule_.traceback_boost if exception_line else 0.0
        result = (hit, min(1.0, hit.verdict.confidence + boost))
    if len(state.memo) >= _MEMO_LIMIT:
        state.memo.clear()
    state.memo[key] = result
    return result


def _maybe_crash(body: str) -> bool:
    """Whether `body` can name a crash (a cheap gate before CRASH_WORDS)."""
    return "eg" in body or "EG" in body or "rash" in body or "IG" in body or "dump" in body


def _nccl_frame(body: str) -> bool:
    """Whether `body` is a stack frame inside NCCL (a cheap gate before the patterns)."""
    maybe = "nccl" in body or "misc/" in body or "transport/" in body or "graph/" in body
    return maybe and bool(NCCL_FRAME.search(body) or NCCL_STACK_FRAME.search(body))


def _skip(state: _State, rec: Record) -> bool | None:
    """Advance the traceback state; None skips `rec`, else whether `rec` ends a traceback."""
    body = rec.body
    # torchrun interleaves ranks, so each (host, rank, local rank) has its own traceback.
    stream = (rec.host, rec.rank, rec.local_rank)
    if _TB_HEADER.match(body):
        state.in_traceback.add(stream)
        return None
    inside = stream in state.in_traceback
    indented = inside and body[:1].isspace() and body.strip() and not _EXCEPTION.match(body)
    if _FRAME.match(body) or indented:
        state.in_traceback.add(stream)
        # a frame inside NCCL is read, not skipped: the crash's place (rules_process)
        return False if _nccl_frame(body) else None
    state.in_traceback.discard(stream)
    return inside and bool(body.strip())


_RESOLVED_WORDS = ("resolved", "alarm")
"""Words every match of rules_monitors.ALERT_RESOLVED holds (lower case)."""
_PCI_NAMED = re.compile(r"\b(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\b")
"""A PCI address in a line (the device a driver's link line is about)."""
_HEX = frozenset("0123456789abcdefABCDEF")
_GPU_WORDS = ("10de:", "nvidia", "gpu")
"""Words every match of rules_host.GPU_NAMED holds (lower case)."""
_RESUMED_WORDS = ("moved", "resumed", "again")
"""Words every match of rules_stalled.RESUMED holds (lower case)."""


def _visit(state: _State, rec: Record) -> None:
    """Classify one record into the state."""
    state.visited += 1
    if state.examples.example(rec.body, rec.raw.strip() != rec.body.strip()):
        return  # (a document's example of what a component prints: no event)
    # (their words gate the searches: every line of a flood passes here)
    low = rec.body.lower()
    if any(w in low for w in _RESOLVED_WORDS) and ALERT_RESOLVED.search(rec.body):
        state.alert_resolved = True
    if any(w in low for w in _RESUMED_WORDS) and RESUMED.search(rec.body):
        state.resumed_at = rec.line_no
    if "grad" in low and FINITE_GRAD_NORM.search(rec.body):
        state.finite_norm_at = rec.line_no
    if not (state.gpu_named and state.gpus_said) and any(w in low for w in _GPU_WORDS):
        named = GPU_NAMED.search(rec.body) is not None
        state.gpu_named = state.gpu_named or named
        state.gpus_said = state.gpus_said or (
            named and not rules_scheduler.NO_GPU_CLAIM.search(rec.body)
        )
    if not state.node_refused and any(w in low for w in rules_scheduler.NODE_REFUSED_WORDS):
        state.node_refused = rules_scheduler.NODE_REFUSED.search(rec.body) is not None
    if rec.body[:1] in _HEX and ":" in rec.body[2:5]:  # (lspci's `17:00.0`, `0000:17:00.0`)
        header = LSPCI_DEVICE.match(rec.body)
        state.pci_kind = state.pci_kind if header is None else device_kind(header["cls"])
    elif rec.body.startswith("pci "):  # (the kernel's enumeration of a device)
        probed = KERNEL_PCI_DEVICE.match(rec.body)
        if probed is not None:
            state.pci_kind = device_kind(probed["cls"])
            state.pci_kinds[normalize_pci(probed["addr"]) or probed["addr"]] = state.pci_kind
    if "tate:" in rec.body or "CA '" in rec.body or "hca_id" in rec.body:
        state.hca.feed(rec.body)
    exception_line = _skip(state, rec)
    if exception_line is None or not rec.body.strip() or documents.describes_a_message(rec.body):
        return  # (a runbook, a changelog, a review: a message described is no event)
    state.speeds.setups.feed(rec, low)
    smi = _SMI_GPU.match(rec.body)
    if smi is not None:
        state.smi_pci = normalize_pci(smi["pci"])
        return
    if _fabric_block(state, rec) or _mcelog_block(state, rec):
        return
    result = _classify(state, rec.body, exception_line)
    if result is None:
        _unclassified(state, rec, low)
        return
    hit, confidence = result
    if hit.rule in GPU_OWNED and state.pci_kind is None:
        state.owner_unknown.add(hit.rule)  # no device header: the input decides (_confirm)
    # a link of the GPU's or a disk's, by the device the line names if the input enumerated it,
    # else by the device header above it (OWNED_BY_KIND)
    pci = _PCI_NAMED.search(rec.body) if hit.rule in GPU_OWNED else None
    address = normalize_pci(pci[0]) if pci else None
    kind = state.pci_kinds.get(address or "", state.pci_kind)
    owned = OWNED_BY_KIND.get(kind or "", {}).get(hit.rule)
    state.add(hit.rule, owned or hit.verdict, hit, rec, confidence)
    if hit.rule == "gpu.diag_gflops" and state.diag_rate is None:
        state.diag_rate = (hit, rec)
    elif hit.rule == "training.iteration":
        state.speeds.iteration(rec)
    elif hit.rule == "training.step_time":
        state.speeds.step_time(rec)
    elif hit.rule in (THROTTLED_RULE, COOLED_RULE):
        state.heat.feed(hit.rule, rec.body)


def _unclassified(state: _State, rec: Record, low: str) -> None:
    """Read a record no rule classified: a person's word for a crash, a diagnostic's failure,
    a detector's calm interval, and what it says of speed (SpeedReader.line)."""
    if not state.crash_said and _maybe_crash(rec.body):
        state.crash_said = CRASH_WORDS.search(rec.body) is not None
    state.diag_fail = state.diag_fail or _DIAG_FAIL.search(rec.body) is not None
    if MINMAX_MARK in rec.body:  # a detector's interval without a straggler
        state.minmax_calm = rec.line_no
    state.speeds.line(rec, state.visited, low)


def _fabric_block(state: _State, rec: Record) -> bool:
    """Follow nvidia-smi -q's `Fabric` block; return whether `rec` was one of its lines."""
    body = rec.body
    indent = len(body) - len(body.lstrip())
    if _FABRIC_HEADER.match(body):
        state.fabric_indent = indent
        return True
    if state.fabric_indent is None:
        return False
    if indent <= state.fabric_indent:
        state.fabric_indent = None  # the block ended
        return False
    fault = fabric_field(body)
    if fault is not None:
        state.add(FABRIC_RULE, fault, None, rec, fault.confidence)
    return True


def _mcelog_block(state: _State, rec: Record) -> bool:
    """Follow `mcelog --client`'s memory summary (a `corrected memory errors:` header, then
    its `N total` and `N in 24h` lines); return whether `rec` was one of its lines."""
    header = MCELOG_HEADER.match(rec.body) if "memory errors:" in rec.body else None
    if header is not None:
        state.mcelog_kind = "uncorrected" if header["kind"] else "corrected"
        return True
    if state.mcelog_kind is None:
        return False
    count = MCELOG_COUNT.match(rec.body)
    if count is None:
        state.mcelog_kind = None  # the block ended
        return False
    fault = mcelog_count(state.mcelog_kind, count)
    if fault is not None:
        state.add(MCELOG_RULE, fault, None, rec, fault.confidence)
    return True


def _speed_findings(state: _State) -> None:
    """Add the slowdowns and slow members the speed reader found, and a diagnostic's slow GPU."""
    for rule_id, verdict, rec, confidence in state.speeds.findings():
        state.add(rule_id, verdict, None, rec, confidence)
    if state.diag_rate is not None and state.diag_fail:
        hit, rec = state.diag_rate
        state.add("gpu.diag_slow", SLOW_DEVICE, hit, rec, 0.6)


def _confirm(state: _State) -> None:
    """Raise signal findings that other findings of the same input confirm (OOM killer, shm); drop
    the findings that stand only with a crash (NEEDS_CRASH) when the input shows none, or only
    where it names a GPU (rules_scheduler.NEEDS_GPUS_NAMED) when it names none, or only where it
    shows a node refused (rules_scheduler.NEEDS_NODE_REFUSED) when it shows none, and a wait
    said once that a later recovery ended (rules_netfs.RECOVERED_BY), a line whose cause the
    same input gives (the EXPLAINED_BY of rules_scheduler, rules_dist, rules_driver,
    rules_fabric, rules_host, rules_process, rules_rdma, rules_slowness and rules_train), a
    monitor's finding in an input that shows the alert resolved, a stall a later line says moved
    on, a NaN grad norm seen once before finite ones (a step fp16's loss scaler skipped), or
    that a reply calls normal (rules_train.ANSWERED_NORMAL), a CPU throttle that every throttled
    CPU was said to end (rules_host.CpuHeat), and ports down only beside active ports of their
    own HCAs (rules_rdma.HcaPorts)."""
    present = {key[0] for key in state.found}
    if not (present & CRASH_RULES or state.crash_said):
        for key in [key for key in state.found if key[0] in NEEDS_CRASH]:
            del state.found[key]
    if not state.gpus_said:  # (rules_scheduler.NEEDS_GPUS_NAMED)
        for key in [key for key in state.found if key[0] in rules_scheduler.NEEDS_GPUS_NAMED]:
            del state.found[key]
    if not state.node_refused:  # (rules_scheduler.NEEDS_NODE_REFUSED)
        for key in [key for key in state.found if key[0] in rules_scheduler.NEEDS_NODE_REFUSED]:
            del state.found[key]
    # a wait said once and ended later is no fault; a wait that repeats is (a flapping server);
    # a line that follows from a cause printed in the same input gives way to it
    first_seen: dict[str, int] = {}
    for key, cand in state.found.items():
        first_seen[key[0]] = min(first_seen.get(key[0], cand.index), cand.index)
    cleared = [
        key
        for key, cand in state.found.items()
        if _EXPLAINED_BY.get(key[0], frozenset()) & present
        or cand.seen == 1
        and any(first_seen.get(r, -1) > cand.index for r in RECOVERED_BY.get(key[0], ()))
    ]
    cleared += [key for key in state.found if key[0] in ONLY_TO_RECOVER]
    # the last lines shown before a stop, when what follows them is a fault of its own
    if any(key[1].severity in _FAULT_SEVERITIES for key in state.found):
        cleared += [key for key in state.found if key[0] == rules_stalled.UNTIL_THIS_POINT]
    # an alert whose resolved header the input shows; a stall a later line says moved on;
    cleared += [
        key
        for key, cand in state.found.items()
        if state.alert_resolved
        and key[0].startswith("monitor.")
        or key[0].startswith("stalled.")
        and cand.index < state.resumed_at
        # a NaN/inf grad norm once, then finite ones: a step the loss scaler skipped
        or key[0] == NONFINITE_NORM_RULE
        and cand.seen == 1
        and cand.index < state.finite_norm_at
        # a CPU's thermal throttle that every throttled CPU was said to end
        or key[0] == THROTTLED_RULE
        and state.heat.ended()
        # ports down only beside active ports of their own HCAs: spares, or a cable unknown
        or key[0] == PORT_DOWN_RULE
        and state.hca.spare_ports_only()
    ]
    # a detector's spread in one interval that calm intervals follow: a warm-up or a
    # checkpoint, not a straggler (a spread in the last interval may be one starting)
    cleared += [
        key
        for key, cand in state.found.items()
        if key[0] == MINMAX_RULE and cand.seen == 1 and state.minmax_calm > cand.index
    ]
    for key in cleared:
        del state.found[key]
    # a PCIe link with no device header is the GPU's where the input names one anywhere
    # (pci_owner.GPU_OWNED)
    undecided = [key for key in state.found if key[0] in state.owner_unknown]
    for key in undecided if state.gpu_named else ():
        cand = state.found.pop(key)
        state.found.setdefault((key[0], GPU_OWNED[key[0]], *key[2:]), cand)
    for key, cand in state.found.items():
        confirming = EVIDENCE.get(key[0])
        if confirming and confirming & present:
            cand.confidence = max(cand.confidence, CONFIRMED_CONFIDENCE)


def _findings(state: _State) -> list[Finding]:
    """Return the collected findings, most severe and most confident first."""
    ordered = sorted(
        state.found.items(),
        key=lambda kv: (
            _SEVERITY_ORDER[kv[0][1].severity],
            -kv[1].confidence,
            kv[1].index,
        ),
    )
    out = []
    for (rule_id, v, node, gpu, pci, rank, xid), cand in ordered:
        out.append(
            Finding(
                category=v.category,
                blame=v.blame,
                component=v.component,
                xid=xid,
                severity=v.severity,
                action=v.action,
                line=cand.line,
                confidence=round(cand.confidence, 3),
                rule=rule_id,
                node=node,
                gpu=gpu,
                pci_bus_id=pci,
                rank=rank,
            )
        )
    return out


def explain_records(recs: Iterable[Record], node: str | None = None) -> list[Finding]:
    """Return the findings of already-split records."""
    state = _State(node=node, speeds=SpeedReader(node))
    for rec in recs:
        _visit(state, rec)
    _speed_findings(state)
    _confirm(state)
    return _findings(state)


def explain(text: str, node: str | None = None, *, hint: bool = False) -> list[Finding]:
    """Return what `text` (log lines and tracebacks from `node`) shows, most severe first; a
    pull request's, a release note's, a closing comment's or a guide's quoted messages are no
    events (documents.is_a_document: only their informational findings are kept), nor are the
    stragglers of a text that speaks of them in general (documents.speaks_in_general), both read
    on the lines' bodies (no shipper's prefix). With `hint`, a text no rule reads gets the
    learned hint (hint.py) when the model is sure enough."""
    recs = list(records(text))
    found = explain_records(recs, node)
    bodies = "\n".join(rec.body for rec in recs) if found else ""
    if found and documents.is_a_document(bodies):
        return [f for f in found if f.severity == Severity.INFO]
    if any(f.category == Category.STRAGGLER for f in found) and documents.speaks_in_general(bodies):
        found = [f for f in found if f.category != Category.STRAGGLER]
    if not found and hint:
        learned = learned_hint(text, node)
        return [learned] if learned else []
    return found
