"""Read the speed of a text's work: streams of step times over time, and groups of peers.

The engine (diagnosis/explain/engine.py) hands this reader the lines that concern speed, in
order; `SpeedReader.findings` then gives the slowdowns and slow members they show.

- Consecutive Megatron iteration lines of one stream feed the spike and slowdown checks;
  consecutive generic step-time lines (``Iteration took N s``) feed a coarser slowdown check
  (two slow steps in a row, or the last three crept up over the first three), and so do the
  progress rates of the steps a log names (``Batch [40] Speed: 46.48 samples/sec``, one rate a
  step, read as its time: one over the rate), and the step times or throughputs of the
  frameworks' progress lines (diagnosis/explain/progress.py: mmcv's ``time: 0.853``, DeepSpeed's
  ``CurrSamplesPerSec=``, fairseq's ``wps=``, Keras' ``150ms/step`` ...), one stream per field
  and line shape, started again where the step count goes back or a new run starts.
- Dated step lines without a step time (``2024-05-03 10:20:20 step 3000``) give each
  interval's seconds a step (progress.clocked_steps); tables over time (an epoch's time a row)
  give one stream a column.
- Per-device rate lines of one shape feed the slow-peer check (diagnosis/explain/peers.py), as
  do the cells of a miner's HASHRATE REPORT table, read from its header to its ``Totals``, the
  lines of one step that several workers print without naming themselves, the columns of a
  members' table and the figures of a members' listing.
- The step times a person's sentences quote, one a sentence, feed the slowdown check of
  diagnosis/explain/rules_slowdown.py.
- A line that tells time passed (``after ~1 hour``: diagnosis/explain/time_marks.py) splits a
  stream, or the same pasted line's first rate, into a before and an after: a last reading
  ``RATE_DROP_PCT`` slower than the best before it is a slowdown (``slowdown.slower_later``).
- Lines of one shape that list several devices' rates are compared report by report (one
  device behind its agreeing peers every time: peers.steady_slow_peer).
- A named time that only adds up is an elapsed clock, not a step time; steps whose size of
  work changed (progress.workload_changed) measure other work: neither is a slowdown.

Guarantees: the reader keeps no text beyond the records it was given; `findings` does not
change the reader, and gives at most one slowdown a stream and one slow member a group.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import explained
from diagnosis.explain.listings import ListingReader
from diagnosis.explain.peers import (
    APART_BY_DESIGN,
    GPU_MODEL,
    LINE_GROUP,
    MIN_PEERS,
    TABLE_HEADER,
    StepRate,
    least_peers,
    line_rates,
    rate_of,
    slow_peer,
    steady_slow_peer,
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
from diagnosis.explain.quantities import RATE_HINTS, quoted_rates
from diagnosis.explain.records import Record, is_prose
from diagnosis.explain.rules_slowdown import (
    NOT_A_FALL,
    SLOWED,
    fell,
    quoted_step_times,
    rose,
)
from diagnosis.explain.scaling import SetupReader
from diagnosis.explain.tables import TableReader
from diagnosis.explain.time_marks import MARK_WORDS, tells_time_passed
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
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity
from ingest.readers.train_log import StepLine, parse_megatron

SLOW_DEVICE = Verdict(
    Category.STRAGGLER,
    Blame.INFRASTRUCTURE,
    ComponentKind.GPU,
    Severity.WARNING,
    Action.HARDWARE_INSPECTION,
    0.5,
)
"""One device's rate far below its peers' in a per-device report (diagnosis/explain/peers.py)."""

SpeedFinding = tuple[str, Verdict, Record, float]
"""A rule, its verdict, the record that shows it, and the confidence."""

_DONE_BAR = re.compile(r"\b100%\|[^|\n]*\|\s*(\d+)/\1\b")
"""A progress bar that finished: each one printed is an epoch's (YOLO's, a loop's)."""
_FIGURES = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
"""A line's figures, blanked for its shape (the lines of one stream differ only in them)."""
_WORK = "work:"
"""The prefix of a stream of work_figures' times (a name that may be an elapsed clock)."""
_WORK_RATE = "work-rate:"
"""The prefix of a stream of work_figures' rates (read as their inverse: never a clock)."""
_FELL = re.compile(
    r"\b(?:drops?|dropped|fell|falls|fallen|decreas\w*|declin\w*|(?:goes|went)\s+down|degrad\w*)\b"
    + NOT_A_FALL,
    re.IGNORECASE,
)
"""A person's words that a rate fell (the rates of a report over its lines are read with one)."""
_OVER_TIME = re.compile(
    r"\b(?:after|before|now|since|later|then|used\s+to|previously|at\s+first|initially|"
    r"originally|hours?|days?|weeks?|yesterday|today|this\s+morning)\b",
    re.IGNORECASE,
)
"""Words of time in such a report: a fall over time, not two setups side by side."""

_SETUP_LINES = 200
"""The lines read for the cards a rig has and what they drive (the top of a text)."""
_MODEL_HINTS = ("gtx", "rtx", "rx", "gt ", "radeon", "tesla", "quadro")
"""What a consumer or workstation GPU model's name holds (lower case; peers.GPU_MODEL)."""
_DISPLAY_HINTS = ("monitor", "display", "screen")

Stream = tuple[str | None, int | None, int | None]
"""One process's lines: (host, rank, local rank)."""


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


@dataclass
class SpeedReader:
    """What one text's lines said about speed so far. `node`, when given, names every line's
    process (it wins over the host a line's prefix names)."""

    node: str | None = None
    iterations: dict[Stream, list[tuple[StepLine, Record]]] = field(default_factory=dict)
    # per stream, shape, run and restart: the step times frameworks print (_progress)
    progress: dict[tuple[object, ...], list[tuple[float, Record]]] = field(default_factory=dict)
    progress_at: dict[tuple[object, ...], tuple[int, int | None, int | None]] = field(
        default_factory=dict
    )
    runs: int = 0  # lines that started a new run (progress.RUN_START)
    step_times: dict[Stream, list[tuple[float, Record]]] = field(default_factory=dict)
    peers: dict[str, list[tuple[str, float, Record]]] = field(default_factory=dict)
    # per stream and shape, the (printed at, step, record) of step lines without a step time
    clocked: dict[tuple[object, ...], list[tuple[float, int, Record]]] = field(default_factory=dict)
    quoted: list[tuple[float, Record]] = field(default_factory=list)
    quoted_change: bool = False
    # a person's rates, one or more a line, and whether a line says one fell or explains it
    rates: list[tuple[float, Record]] = field(default_factory=list)
    rates_fell: bool = False
    rates_explained: bool = False
    rates_timed: bool = False
    # per shape, the lines that list several devices' rates (peers.line_rates), in order
    line_reports: dict[str, list[tuple[list[tuple[str, float]], Record]]] = field(
        default_factory=dict
    )
    models: set[str] = field(default_factory=set)  # the GPU models the text names
    apart_by_design: bool = False  # a line says a member drives the displays
    marks: list[int] = field(default_factory=list)  # lines that tell time passed: line numbers
    # per shape, the first rate of each pasted line no other reader took (`... 0.42Gh/s | A: 1`)
    shaped: dict[str, list[tuple[float, Record]]] = field(default_factory=dict)
    rate_table: int = 0  # the HASHRATE REPORT table read now (peers.table_rates); 0: none
    rate_tables: int = 0  # tables seen: each is its own peer group
    step_run: tuple[str, int] = ("", -1)  # the last step line's group key, and its position
    step_runs: int = 0  # runs of identical step lines seen, each its own group
    tables: TableReader[Record] = field(default_factory=TableReader)  # members' figures
    listings: ListingReader[Record] = field(default_factory=ListingReader)  # members' figures
    setups: SetupReader = field(default_factory=SetupReader)  # device counts timed (scaling)

    def _stream(self, rec: Record) -> Stream:
        return (self.node or rec.host, rec.rank, rec.local_rank)

    def iteration(self, rec: Record) -> None:
        """Read a Megatron iteration line (rule training.iteration)."""
        it = parse_megatron(rec.body)
        if it is not None:
            self.iterations.setdefault(self._stream(rec), []).append((it, rec))

    def step_time(self, rec: Record) -> None:
        """Read a generic step-time line (rule training.step_time) and its other named figures
        (ESPnet's `train_time=` beside it)."""
        seconds = parse_step_seconds(rec.body)
        if seconds is not None:
            self.step_times.setdefault(self._stream(rec), []).append((seconds, rec))
            self._peer(progress_stream(rec.body, _WORK + "step time"), _member(rec), seconds, rec)
        self._work(rec)

    def line(self, rec: Record, position: int, low: str) -> None:
        """Read a line no rule classified; `position` counts every record the text gave so far
        (lines of one step are a group only with nothing between them), `low` is its body in
        lower case (the engine's, for the words that gate the searches)."""
        if RUN_START.match(rec.body):
            self.runs += 1
        if any(word in low for word in MARK_WORDS) and tells_time_passed(rec.body):
            self.marks.append(rec.line_no)
        if position <= _SETUP_LINES:  # (a rig's cards and duties are told at its top)
            if any(hint in low for hint in _MODEL_HINTS):
                self.models.update(m[0].replace(" ", "") for m in GPU_MODEL.finditer(rec.body))
            if any(hint in low for hint in _DISPLAY_HINTS):
                self.apart_by_design = self.apart_by_design or bool(
                    APART_BY_DESIGN.search(rec.body)
                )
        peer = rate_of(rec.body)
        if peer is not None:
            shape, device, rate = peer
            self.peers.setdefault(shape, []).append((device, rate, rec))
        listed = line_rates(rec.body)
        if listed:
            self.peers[f"{LINE_GROUP}{position}"] = [(dev, rate, rec) for dev, rate in listed]
            self.line_reports.setdefault(_FIGURES.sub("#", rec.body), []).append((listed, rec))
        at_step = None if peer is not None else step_rate_of(rec.body)
        self._step_peer(rec, at_step, position)
        figure = None if peer is not None else step_seconds(rec.body)
        if figure is not None:
            self._progress(rec, progress_stream(rec.body, figure.field), figure.seconds)
        elif at_step is not None and at_step.rate > 0:
            self._progress(rec, "rate:" + at_step.shape, 1 / at_step.rate)
        elif peer is None and not listed and not self._work(rec):
            self._clocked(rec)
            self._shaped(rec, low)
        self._rate_table(rec)
        self.tables.feed(rec.body, rec)
        self.listings.feed(rec.body, rec)
        prose = is_prose(rec.body)
        quoted = quoted_step_times(rec.body) if prose else None
        if quoted is not None:
            self.quoted.extend((seconds, rec) for seconds in quoted[0])
            self.quoted_change = self.quoted_change or quoted[1]
        rates = quoted_rates(rec.body) if prose else []
        if rates:
            self.rates.extend((rate, rec) for rate in rates)
            self.rates_fell = self.rates_fell or _FELL.search(rec.body) is not None
            self.rates_timed = self.rates_timed or _OVER_TIME.search(rec.body) is not None
        if prose and (rates or self.rates):
            self.rates_explained = self.rates_explained or explained(rec.body)

    def _work(self, rec: Record) -> bool:
        """Feed a line's named figures of work (work_figures) to the progress stream of its
        shape and member, and a member's to the peer group of its shape (one member behind the
        rest); return whether it had any."""
        figures = work_figures(rec.body)
        if not figures:
            return False
        member = _member(rec)
        for figure in figures:
            shape = progress_stream(rec.body, (_WORK_RATE if figure.rate else _WORK) + figure.field)
            self._progress(rec, f"{shape} | {member}", figure.seconds)
            self._peer(shape, member, figure.seconds, rec)
        return True

    def _shaped(self, rec: Record, low: str) -> None:
        """Note the first rate of a pasted line that no other reader took (a miner's ``HBR 0:
        | 3.07/ 0.46/ 0.42Gh/s``), by the line's shape: read only across a line that tells time
        passed (_slower_later)."""
        if not any(hint in low for hint in RATE_HINTS) or is_prose(rec.body):
            return
        rates = [] if NOT_A_STEP.search(rec.body) else quoted_rates(rec.body)
        if rates and rates[0] > 0:
            shape = _FIGURES.sub("#", rec.body)
            self.shaped.setdefault(shape, []).append((1 / rates[0], rec))

    def _clocked(self, rec: Record) -> None:
        """Note a line that names its step and starts with the time it was printed, but gives
        no step time (`2024-05-03 10:20:20 step 3000`): the intervals tell it."""
        clock = clock_of(rec.raw)
        counter = step_counter(rec.body) if clock is not None else None
        if clock is not None and counter is not None:
            key = (*self._stream(rec), _FIGURES.sub("#", rec.body))
            self.clocked.setdefault(key, []).append((clock, counter, rec))

    def _peer(self, shape: str, member: str | None, seconds: float, rec: Record) -> None:
        """Add a member's step time to the peer group of its line's shape (peers.slow_peer
        reads rates: the time's inverse)."""
        if member is not None and seconds > 0:
            self.peers.setdefault(shape, []).append((member, 1 / seconds, rec))

    def _progress(self, rec: Record, shape: str, seconds: float) -> None:
        """Add a progress line's step time (progress.step_seconds, or a rate per named step
        read as its inverse) to its stream: one process's lines of one field and shape, one
        figure a step (the first: other workers print the same step), started again where the
        step count goes back (a run started again or resumed) or a new run starts
        (progress.RUN_START); a step count that goes back in a later epoch the line names is
        the same run's next epoch."""
        if NOT_A_STEP.search(rec.body):
            return  # a download's or a dataset pass's progress
        key = (*self._stream(rec), self.runs, shape)
        counter, epoch = step_counter(rec.body), epoch_of(rec.body)
        run, last, last_epoch = self.progress_at.get(key, (0, None, None))
        next_epoch = epoch is not None and last_epoch is not None and epoch > last_epoch
        # a finished bar again (`100%|##########| 926/926 [03:12<00:00`): the next epoch's
        next_epoch = next_epoch or (counter == last and _DONE_BAR.search(rec.body) is not None)
        if counter is not None and last is not None and not next_epoch:
            if counter == last:
                return  # the same step again: another worker's line, or another metric's
            if counter < last:
                run += 1
        self.progress_at[key] = (
            run,
            counter if counter is not None else last,
            epoch if epoch is not None else last_epoch,
        )
        self.progress.setdefault((*key, run), []).append((seconds, rec))

    def _step_peer(self, rec: Record, at_step: StepRate | None, position: int) -> None:
        """Group the consecutive lines of one step that several workers print
        (peers.step_rate_of): each run of identical lines, with no other record between them,
        is its own group, and its n-th line is the n-th worker."""
        if at_step is None:
            return
        if self.step_run != (at_step.group, position - 1):
            self.step_runs += 1
        self.step_run = (at_step.group, position)
        workers = self.peers.setdefault(f"{at_step.group} {self.step_runs}", [])
        workers.append((str(len(workers)), at_step.rate, rec))

    def _rate_table(self, rec: Record) -> None:
        """Follow a miner's HASHRATE REPORT table: each table is its own peer group, read from
        its header to its ``Totals`` line or to the first line that is not a table row."""
        if TABLE_HEADER in rec.body:
            self.rate_tables += 1
            self.rate_table = self.rate_tables
        elif rec.body.lstrip().startswith("Totals") or "|" not in rec.body:
            self.rate_table = 0
        elif self.rate_table:
            for shape, device, rate in table_rates(rec.body):
                group = f"{shape} {self.rate_table}"
                self.peers.setdefault(group, []).append((device, rate, rec))

    def findings(self) -> Iterator[SpeedFinding]:
        """Yield the spike and slowdown findings of every iteration stream, table over time,
        clocked run, progress and step-time stream and of a person's quoted step times, and
        the slow member of every peer group."""
        for stream in self.iterations.values():
            for position, verdict, rule_id in sequence_findings([it for it, _ in stream]):
                # (read only for a slowdown found) a batch ramp-up: the times measure other work
                if verdict is SLOWDOWN and workload_changed([rec.body for _, rec in stream]):
                    continue
                yield rule_id, verdict, stream[position][1], verdict.confidence
        peers = dict(self.peers)
        for n, column in enumerate(self.tables.groups()):
            peers[f"table {n}"] = column
        for sequence in self.tables.sequences():  # a table over time: an epoch's time a row
            yield from _slowed(sequence, may_be_clock=True)
        for sequence in self.listings.sequences():  # `Epoch 3: 590s`, a line each
            yield from _slowed(sequence, may_be_clock=True)
        for marks in self.clocked.values():  # step lines with only the time they were printed
            for run in clocked_steps(marks):
                yield from _slowed(run, may_be_clock=False)
        for n, (least, members) in enumerate(self.listings.groups()):
            peers[f"{LINE_GROUP if least < MIN_PEERS else ''}listing {n}"] = members
        for key, group in peers.items():
            slowest = slow_peer([(device, rate) for device, rate, _ in group], least_peers(key))
            if slowest is not None:
                yield "peers.slow_device", SLOW_DEVICE, group[slowest][2], 0.5
        # one device behind in every report, among identical peers: not where the text names
        # two models or a member that drives the displays
        identical = len(self.models) < 2 and not self.apart_by_design
        for reports in self.line_reports.values() if identical else ():
            if steady_slow_peer([listed for listed, _ in reports]):
                yield "peers.steady_slow_device", SLOW_DEVICE, reports[-1][1], 0.5
        for progress_key, steps in self.progress.items():  # (..., shape, run): see _progress
            may_be_clock = str(progress_key[-2]).startswith(_WORK)
            found = list(_slowed(steps, may_be_clock))
            yield from found
            if not found and not may_be_clock and _slower_later(steps, self.marks):
                yield "slowdown.slower_later", SLOWED, steps[-1][1], SLOWED.confidence
        for steps in self.step_times.values():
            yield from _slowed(steps, may_be_clock=False)
        for steps in self.shaped.values():
            if _slower_later(steps, self.marks):
                yield "slowdown.slower_later", SLOWED, steps[-1][1], SLOWED.confidence
        # a person's report, one quoted step time a sentence (one sentence alone: the rule's)
        times = [seconds for seconds, _ in self.quoted]
        spread = len({id(rec) for _, rec in self.quoted}) > 1
        if spread and self.quoted_change and rose(times):
            yield "slowdown.step_time_rose", SLOWED, self.quoted[-1][1], SLOWED.confidence
        # more GPUs or nodes, a slower step (scaling): the one with more devices
        opened = self.setups.slower()
        if opened is not None:
            yield "slowdown.more_devices_slower", SLOWED, opened, SLOWED.confidence
        # a person's rates over lines (`before upgrade i had a consistent 62 MH/s` ... `drops to
        # ... like 25 MH/s`): the last one fallen RATE_DROP_PCT below the best before it
        figures = [rate for rate, _ in self.rates]
        spread = len({id(rec) for _, rec in self.rates}) > 1
        told = self.rates_fell and self.rates_timed and not self.rates_explained
        if spread and told and fell(figures):
            yield "slowdown.rate_fell", SLOWED, self.rates[-1][1], SLOWED.confidence


def _slower_later(steps: list[tuple[float, Record]], marks: list[int]) -> bool:
    """Return whether a stream's last step time, read after a line that tells time passed
    (``after ~1 hour``, ``after 10 renders``: time_marks.tells_time_passed), is RATE_DROP_PCT
    slower (as a rate) than its best reading before that line; a stream whose size of work
    changed (progress.workload_changed) measures other work."""
    first, last = steps[0][1].line_no, steps[-1][1].line_no
    told = [mark for mark in marks if first < mark < last]
    if not told:
        return False
    before = [seconds for seconds, rec in steps if rec.line_no < told[0]]
    rates = [1 / seconds for seconds in [*before, steps[-1][0]] if seconds > 0]
    return (
        len(rates) == len(before) + 1
        and fell(rates)
        and not workload_changed([rec.body for _, rec in steps])
    )


def _slowed(steps: list[tuple[float, Record]], may_be_clock: bool) -> Iterator[SpeedFinding]:
    """Yield a slowdown when one stream's step times slowed (two slow steps in a row, a drift,
    a shift that stays, a before and an after far apart, or a climb); a named time that only
    adds up is an elapsed clock, no step time (`Time 36133.8s` at epoch 30), and steps whose
    size of work changed (progress.workload_changed) measure other work."""
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
        yield "training.step_slowdown", SLOWDOWN, steps[slow][1], 0.3
