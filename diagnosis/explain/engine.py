"""Explain log text: records in, findings out, most severe first.

- One record yields at most one finding: the first rule in precedence order that matches.
- A Python traceback is one finding: its frames and source lines are skipped and the
  exception line is classified (with more confidence than a lone exception line).
- Findings that differ only in their evidence line collapse into one, which keeps the first
  line and the highest confidence: 800,000 identical Xid 95 lines give one finding. Finding
  has no count field, so how many lines collapsed is not reported.
- Consecutive Megatron iteration lines of one stream feed the spike and slowdown checks;
  consecutive generic step-time lines (``Iteration took N s``) feed a coarser slowdown check
  (two slow steps in a row, or the last three crept up over the first three), and so do the
  progress rates of the steps a log names (``Batch [40] Speed: 46.48 samples/sec``, one rate a
  step, read as its time: one over the rate), and the step times or throughputs of the
  frameworks' progress lines (diagnosis/explain/progress.py: mmcv's ``time: 0.853``, DeepSpeed's
  ``CurrSamplesPerSec=``, fairseq's ``wps=``, Keras' ``150ms/step`` ...), one stream per field
  and line shape;
  per-device rate lines of one shape feed the slow-peer check (diagnosis/explain/peers.py), as
  do the cells of a miner's HASHRATE REPORT table, read from its header to its ``Totals``, and
  the lines of one step that several workers print without naming themselves;
  the step times a person's sentences quote, one a sentence, feed the slowdown check of
  diagnosis/explain/rules_slowdown.py.
- nvidia-smi -q's `Fabric` block: a `State` still `In Progress` or a `Status` other than
  `Success` (N/A: no fabric) is an NVLink fault (diagnosis/explain/rules_driver.fabric_field).
- DCGM's diagnostic JSON: a GPU's measured rate (``calculated at approximately N gigaflops``)
  and a ``"status" : "Fail"`` in the same input make a slow-GPU (straggler) finding.
- A rank's death by a signal is read from the signal alone with low confidence; an OOM-killer
  line (SIGKILL) or a shared-memory error (SIGBUS) in the same input raises it to 0.85.
- `node` names the machine the text came from and always wins; without it the host a line's
  own prefix names (NCCL ``host:pid:tid``, syslog) is used. Nothing recognisable gives ``[]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from diagnosis.catalog import Verdict
from diagnosis.explain import rules_dist, rules_driver, rules_netfs, rules_nic, rules_scheduler
from diagnosis.explain.listings import ListingReader
from diagnosis.explain.peers import (
    LINE_GROUP,
    MIN_PEERS,
    TABLE_HEADER,
    StepRate,
    least_peers,
    line_rates,
    rate_of,
    slow_peer,
    step_rate_of,
    table_rates,
)
from diagnosis.explain.progress import (
    NOT_A_STEP,
    RUN_START,
    clock_of,
    clocked_steps,
    epoch_of,
    progress_stream,
    step_counter,
    step_seconds,
    workload_changed,
)
from diagnosis.explain.records import Record, is_prose, records
from diagnosis.explain.rules import Hit, normalize_pci, rule_set
from diagnosis.explain.rules_driver import FABRIC_RULE, fabric_field
from diagnosis.explain.rules_host import MCELOG_COUNT, MCELOG_HEADER, MCELOG_RULE, mcelog_count
from diagnosis.explain.rules_monitors import ALERT_RESOLVED
from diagnosis.explain.rules_process import (
    CONFIRMED_CONFIDENCE,
    CRASH_RULES,
    CRASH_WORDS,
    EVIDENCE,
    NCCL_FRAME,
    NCCL_STACK_FRAME,
    NEEDS_CRASH,
)
from diagnosis.explain.rules_slowdown import SLOWED, quoted_step_times, rose
from diagnosis.explain.rules_stalled import RESUMED
from diagnosis.explain.rules_straggler import MINMAX_MARK, MINMAX_RULE
from diagnosis.explain.tables import TableReader
from diagnosis.explain.training import (
    SLOWDOWN,
    before_and_after,
    elapsed_clock,
    parse_step_seconds,
    sequence_findings,
    step_time_climb,
    step_time_drift,
    step_time_shift,
    step_time_slowdown,
)
from diagnosis.explain.work_figures import member_of, work_figures
from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from ingest.readers.train_log import StepLine, parse_megatron

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
SLOW_DEVICE = Verdict(
    Category.STRAGGLER,
    Blame.INFRASTRUCTURE,
    ComponentKind.GPU,
    Severity.WARNING,
    Action.HARDWARE_INSPECTION,
    0.5,
)
"""One device's rate far below its peers' in a per-device report (diagnosis/explain/peers.py)."""
_FABRIC_HEADER = re.compile(r"^\s*Fabric\s*$")
_DONE_BAR = re.compile(r"\b100%\|[^|\n]*\|\s*(\d+)/\1\b")
"""A progress bar that finished: each one printed is an epoch's (YOLO's, a loop's)."""
_FIGURES = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
"""A line's figures, blanked for its shape (the lines of one stream differ only in them)."""
_DIAG_FAIL = re.compile(r'"status"\s*:\s*"Fail"')
RECOVERED_BY = {**rules_netfs.RECOVERED_BY, **rules_nic.RECOVERED_BY}
"""For a rule of waiting or of an event, the rules whose later finding says it ended."""
ONLY_TO_RECOVER = rules_netfs.ONLY_TO_RECOVER | rules_nic.ONLY_TO_RECOVER
_EXPLAINED_BY = {
    **rules_scheduler.EXPLAINED_BY,
    **rules_dist.EXPLAINED_BY,
    **rules_driver.EXPLAINED_BY,
}
"""For a rule whose line follows from another cause, the rules that give that cause."""
_SMI_RULES = frozenset({"gpu.remap_failure", "gpu.remap_pending", "gpu.ecc_counter"})

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
    found: dict[Key, _Candidate] = field(default_factory=dict)
    streams: dict[tuple[str | None, int | None, int | None], list[tuple[StepLine, Record]]] = field(
        default_factory=dict
    )
    # per stream and progress field, the step times frameworks print (progress.step_seconds)
    # per stream, line shape and run, the step times frameworks print (progress.step_seconds)
    progress: dict[tuple[object, ...], list[tuple[float, Record]]] = field(default_factory=dict)
    progress_at: dict[tuple[object, ...], tuple[int, int | None, int | None]] = field(
        default_factory=dict
    )
    runs: int = 0  # lines that started a new run (progress.RUN_START)
    step_times: dict[tuple[str | None, int | None, int | None], list[tuple[float, Record]]] = field(
        default_factory=dict
    )
    peers: dict[str, list[tuple[str, float, Record]]] = field(default_factory=dict)
    # per stream, the (printed at, step, record) of step lines without a step time
    clocked: dict[tuple[object, ...], list[tuple[float, int, Record]]] = field(default_factory=dict)
    memo: dict[tuple[str, bool], tuple[Hit, float] | None] = field(default_factory=dict)
    in_traceback: set[tuple[str | None, int | None, int | None]] = field(default_factory=set)
    smi_pci: str | None = None
    diag_rate: tuple[Hit, Record] | None = None
    diag_fail: bool = False
    quoted: list[tuple[float, Record]] = field(default_factory=list)
    quoted_change: bool = False
    fabric_indent: int | None = None  # inside nvidia-smi -q's `Fabric` block: its indent
    mcelog_kind: str | None = None  # inside mcelog's memory summary: `corrected`, `uncorrected`
    rate_table: int = 0  # the HASHRATE REPORT table read now (peers.table_rates); 0: none
    visited: int = 0  # records visited so far
    crash_said: bool = False  # a record names a crash (rules_process.CRASH_WORDS)
    step_run: tuple[str, int] = ("", -1)  # the last step line's group key, and its record
    step_runs: int = 0  # runs of identical step lines seen, each its own group
    rate_tables: int = 0  # tables seen: each is its own peer group
    tables: TableReader[Record] = field(default_factory=TableReader)  # members' figures
    listings: ListingReader[Record] = field(default_factory=ListingReader)  # members' figures
    minmax_calm: int = -1  # the last Megatron straggler-detector interval that named none
    alert_resolved: bool = False  # a line is an alert's resolved header (ALERT_RESOLVED)
    resumed_at: int = -1  # the last line that says the job moved on (rules_stalled.RESUMED)

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
_RESUMED_WORDS = ("moved", "resumed", "again")
"""Words every match of rules_stalled.RESUMED holds (lower case)."""


def _visit(state: _State, rec: Record) -> None:
    """Classify one record into the state."""
    state.visited += 1
    # (their words gate the searches: every line of a flood passes here)
    low = rec.body.lower()
    if any(w in low for w in _RESOLVED_WORDS) and ALERT_RESOLVED.search(rec.body):
        state.alert_resolved = True
    if any(w in low for w in _RESUMED_WORDS) and RESUMED.search(rec.body):
        state.resumed_at = rec.line_no
    exception_line = _skip(state, rec)
    if exception_line is None or not rec.body.strip():
        return
    smi = _SMI_GPU.match(rec.body)
    if smi is not None:
        state.smi_pci = normalize_pci(smi["pci"])
        return
    if _fabric_block(state, rec) or _mcelog_block(state, rec):
        return
    result = _classify(state, rec.body, exception_line)
    if result is None:
        _unclassified(state, rec)
        return
    hit, confidence = result
    state.add(hit.rule, hit.verdict, hit, rec, confidence)
    if hit.rule == "gpu.diag_gflops" and state.diag_rate is None:
        state.diag_rate = (hit, rec)
    elif hit.rule == "training.iteration":
        it = parse_megatron(rec.body)
        if it is not None:
            stream = (state.node or rec.host, rec.rank, rec.local_rank)
            state.streams.setdefault(stream, []).append((it, rec))
    elif hit.rule == "training.step_time":
        seconds = parse_step_seconds(rec.body)
        if seconds is not None:
            stream = (state.node or rec.host, rec.rank, rec.local_rank)
            state.step_times.setdefault(stream, []).append((seconds, rec))
            _peer(state, progress_stream(rec.body, _WORK + "step time"), _member(rec), seconds, rec)
        _work(state, rec)  # the line's other named figures (ESPnet's `train_time=` beside it)


def _unclassified(state: _State, rec: Record) -> None:
    """Read a record no rule classified: a run's start, a person's word for a crash, a
    diagnostic's failure, per-device and per-step rates, tables of members' figures, progress
    lines, quoted step times."""
    if RUN_START.match(rec.body):
        state.runs += 1
    if not state.crash_said and _maybe_crash(rec.body):
        state.crash_said = CRASH_WORDS.search(rec.body) is not None
    state.diag_fail = state.diag_fail or _DIAG_FAIL.search(rec.body) is not None
    if MINMAX_MARK in rec.body:  # a detector's interval without a straggler
        state.minmax_calm = rec.line_no
    peer = rate_of(rec.body)
    if peer is not None:
        shape, device, rate = peer
        state.peers.setdefault(shape, []).append((device, rate, rec))
    listed = line_rates(rec.body)
    if listed:
        state.peers[f"{LINE_GROUP}{state.visited}"] = [(dev, rate, rec) for dev, rate in listed]
    at_step = None if peer is not None else step_rate_of(rec.body)
    _step_peer(state, rec, at_step)
    figure = None if peer is not None else step_seconds(rec.body)
    if figure is not None:
        _progress(state, rec, progress_stream(rec.body, figure.field), figure.seconds)
    elif at_step is not None and at_step.rate > 0:
        _progress(state, rec, "rate:" + at_step.shape, 1 / at_step.rate)
    elif peer is None and not listed and not _work(state, rec):
        _clocked(state, rec)
    _rate_table(state, rec)
    state.tables.feed(rec.body, rec)
    state.listings.feed(rec.body, rec)
    quoted = quoted_step_times(rec.body) if is_prose(rec.body) else None
    if quoted is not None:
        state.quoted.extend((seconds, rec) for seconds in quoted[0])
        state.quoted_change = state.quoted_change or quoted[1]


_WORK = "work:"
"""The prefix of a stream of work_figures' times (a name that may be an elapsed clock)."""
_WORK_RATE = "work-rate:"
"""The prefix of a stream of work_figures' rates (read as their inverse: never a clock)."""


def _member(rec: Record) -> str | None:
    """The member a line speaks for: named in it, else the rank its prefixes name (torchrun's
    `[rank3]:`, the innermost one: Open MPI's tag inside it), else named in the prefix the
    records stripped (work_figures.member_of: Ray's `(pid=..., ip=...)`), else its host."""
    named = member_of(rec.body)
    if named is not None:
        return named
    if rec.rank is not None:
        return f"rank {rec.rank}"
    return member_of(rec.raw) or rec.host


def _work(state: _State, rec: Record) -> bool:
    """Feed a line's named figures of work (work_figures) to the progress stream of its shape
    and member, and a member's to the peer group of its shape (one member behind the rest);
    return whether it had any."""
    figures = work_figures(rec.body)
    if not figures:
        return False
    member = _member(rec)
    for figure in figures:
        shape = progress_stream(rec.body, (_WORK_RATE if figure.rate else _WORK) + figure.field)
        _progress(state, rec, f"{shape} | {member}", figure.seconds)
        _peer(state, shape, member, figure.seconds, rec)
    return True


def _clocked(state: _State, rec: Record) -> None:
    """Note a line that names its step and starts with the time it was printed, but gives no
    step time (`2024-05-03 10:20:20 step 3000`): the intervals tell it (progress.clocked_steps)."""
    clock = clock_of(rec.raw)
    counter = step_counter(rec.body) if clock is not None else None
    if clock is not None and counter is not None:
        key = (state.node or rec.host, rec.rank, rec.local_rank, _FIGURES.sub("#", rec.body))
        state.clocked.setdefault(key, []).append((clock, counter, rec))


def _peer(state: _State, shape: str, member: str | None, seconds: float, rec: Record) -> None:
    """Add a member's step time to the peer group of its line's shape (peers.slow_peer reads
    rates: the time's inverse)."""
    if member is not None and seconds > 0:
        state.peers.setdefault(shape, []).append((member, 1 / seconds, rec))


def _progress(state: _State, rec: Record, shape: str, seconds: float) -> None:
    """Add a progress line's step time (progress.step_seconds, or a rate per named step read
    as its inverse) to its stream: one process's lines of one field and shape, one figure a
    step (the first: other workers print the same step), started again where the step count
    goes back (a run started again or resumed) or a new run starts (progress.RUN_START); a step
    count that goes back in a later epoch the line names is the same run's next epoch."""
    if NOT_A_STEP.search(rec.body):
        return  # a download's or a dataset pass's progress
    key = (state.node or rec.host, rec.rank, rec.local_rank, state.runs, shape)
    counter, epoch = step_counter(rec.body), epoch_of(rec.body)
    run, last, last_epoch = state.progress_at.get(key, (0, None, None))
    next_epoch = epoch is not None and last_epoch is not None and epoch > last_epoch
    # a finished bar again (`100%|##########| 926/926 [03:12<00:00`): the next epoch's
    next_epoch = next_epoch or (counter == last and _DONE_BAR.search(rec.body) is not None)
    if counter is not None and last is not None and not next_epoch:
        if counter == last:
            return  # the same step again: another worker's line, or another metric's
        if counter < last:
            run += 1
    state.progress_at[key] = (
        run,
        counter if counter is not None else last,
        epoch if epoch is not None else last_epoch,
    )
    state.progress.setdefault((*key, run), []).append((seconds, rec))


def _step_peer(state: _State, rec: Record, at_step: StepRate | None) -> None:
    """Group the consecutive lines of one step that several workers print (peers.step_rate_of):
    each run of identical lines, with no other record between them, is its own group, and its
    n-th line is the n-th worker."""
    if at_step is None:
        return
    if state.step_run != (at_step.group, state.visited - 1):
        state.step_runs += 1
    state.step_run = (at_step.group, state.visited)
    workers = state.peers.setdefault(f"{at_step.group} {state.step_runs}", [])
    workers.append((str(len(workers)), at_step.rate, rec))


def _rate_table(state: _State, rec: Record) -> None:
    """Follow a miner's HASHRATE REPORT table: each table is its own peer group, read from its
    header to its ``Totals`` line or to the first line that is not a table row."""
    if TABLE_HEADER in rec.body:
        state.rate_tables += 1
        state.rate_table = state.rate_tables
    elif rec.body.lstrip().startswith("Totals") or "|" not in rec.body:
        state.rate_table = 0
    elif state.rate_table:
        for shape, device, rate in table_rates(rec.body):
            group = f"{shape} {state.rate_table}"
            state.peers.setdefault(group, []).append((device, rate, rec))


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


def _sequences(state: _State) -> None:
    """Add the spike and slowdown findings of every iteration stream, generic step-time stream
    and per-device rate group, and of every table over time."""
    for stream in state.streams.values():
        iterations = [it for it, _ in stream]
        for position, verdict, rule_id in sequence_findings(iterations):
            rec = stream[position][1]
            state.add(rule_id, verdict, None, rec, verdict.confidence)
    for n, column in enumerate(state.tables.groups()):
        state.peers[f"table {n}"] = column
    for sequence in state.tables.sequences():  # a table over time: an epoch's time a row
        _slowed(state, sequence, may_be_clock=True)
    for marks in state.clocked.values():  # step lines with only the time they were printed
        for run in clocked_steps(marks):
            _slowed(state, run, may_be_clock=False)
    for n, (least, members) in enumerate(state.listings.groups()):
        state.peers[f"{LINE_GROUP if least < MIN_PEERS else ''}listing {n}"] = members
    for key, group in state.peers.items():
        slowest = slow_peer([(device, rate) for device, rate, _ in group], least_peers(key))
        if slowest is not None:
            state.add("peers.slow_device", SLOW_DEVICE, None, group[slowest][2], 0.5)
    if state.diag_rate is not None and state.diag_fail:
        hit, rec = state.diag_rate
        state.add("gpu.diag_slow", SLOW_DEVICE, hit, rec, 0.6)
    for progress_key, steps in state.progress.items():  # (..., shape, run): see _progress
        _slowed(state, steps, may_be_clock=str(progress_key[-2]).startswith(_WORK))
    for steps in state.step_times.values():
        _slowed(state, steps, may_be_clock=False)
    # a person's report, one quoted step time a sentence (one sentence alone: the rule's)
    times = [seconds for seconds, _ in state.quoted]
    spread = len({id(rec) for _, rec in state.quoted}) > 1
    if spread and state.quoted_change and rose(times):
        state.add("slowdown.step_time_rose", SLOWED, None, state.quoted[-1][1], SLOWED.confidence)


def _slowed(state: _State, steps: list[tuple[float, Record]], may_be_clock: bool) -> None:
    """Add a slowdown when one stream's step times slowed (two slow steps in a row, a drift, a
    shift that stays, a before and an after far apart, or a climb); a named time that only adds
    up is an elapsed clock, no step time (`Time 36133.8s` at epoch 30), and steps whose size of
    work changed (progress.workload_changed) measure other work."""
    times = [seconds for seconds, _ in steps]
    if may_be_clock and elapsed_clock(times):
        return
    slow = step_time_slowdown(times)
    slow = step_time_drift(times) if slow is None else slow
    slow = step_time_shift(times) if slow is None else slow
    two = len(steps) == 2  # (the counters are read only for two readings)
    if slow is None and two and before_and_after(times, [step_counter(r.body) for _, r in steps]):
        slow = 1
    slow = step_time_climb(times, may_be_clock) if slow is None else slow
    # (read only for a slowdown found) a longer sequence, a larger batch: other work
    if slow is not None and not workload_changed([rec.body for _, rec in steps]):
        state.add("training.step_slowdown", SLOWDOWN, None, steps[slow][1], 0.3)


def _confirm(state: _State) -> None:
    """Raise signal findings that other findings of the same input confirm (OOM killer, shm);
    drop the findings that stand only with a crash (NEEDS_CRASH) when the input shows none, and
    a wait said once that a later recovery ended (rules_netfs.RECOVERED_BY), a line whose
    cause the same input gives (the EXPLAINED_BY of rules_scheduler, rules_dist and
    rules_driver), a monitor's finding in an input that shows the alert resolved, and a stall
    a later line says moved on."""
    present = {key[0] for key in state.found}
    if not (present & CRASH_RULES or state.crash_said):
        for key in [key for key in state.found if key[0] in NEEDS_CRASH]:
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
    # an alert whose resolved header the input shows; a stall a later line says moved on
    cleared += [
        key
        for key, cand in state.found.items()
        if state.alert_resolved
        and key[0].startswith("monitor.")
        or key[0].startswith("stalled.")
        and cand.index < state.resumed_at
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
    state = _State(node=node)
    for rec in recs:
        _visit(state, rec)
    _sequences(state)
    _confirm(state)
    return _findings(state)


def explain(text: str, node: str | None = None) -> list[Finding]:
    """Return what `text` (log lines and tracebacks from `node`) shows, most severe first."""
    return explain_records(records(text), node)
