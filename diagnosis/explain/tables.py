"""Tables of members' figures: one row per rank, node or GPU, one member far off its peers.

People and tools paste one figure per member as a table: markdown (``| rank | fwd+bwd |``) or
columns aligned with spaces or tabs (``node      busbw (GB/s)``). A table is a header line of
names, then at least ``MIN_PEERS`` rows with as many cells, each starting with a member's label
and holding a figure in the header's columns. A column is read by what its header cell names,
else by the caption line just before the table:

- a rate (higher is better: ``/s``, bandwidth, busbw, throughput, TFLOPS, MFU, hash rate);
- a time (lower is better: time, ``ms``, latency, duration, fwd, bwd), read as its inverse;

a column that names neither, or both, is not read. Each column read is a group of peers for
peers.slow_peer: a member below ``SLOW_PEER_RATIO`` times the median rate (a time above its
inverse times the median) is a slow member.

Guarantees: a row needs a member's label: names of one shape with a number (``n03``,
``gpu-a03``, ``node5``, ``GPU 3``) or bare numbers under a first header that names one member
(rank, node, GPU, host, device, worker), their numbers a run without gaps; so a sweep (message
sizes, 1/2/4/8 nodes, batch sizes), epochs or steps, or GPU models compared are no group. A
slow row explained by another of its figures (half the GPUs, half the rate) is silent, and so
is a caption's quantity for a table of several figures. Fewer than ``MIN_PEERS`` members, or
figures within 30 % of their median, never alarm. Lines are read one at a time
(``TableReader.feed``), with only the current table held; a line that is no row of it ends it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from diagnosis.explain.peers import MIN_PEERS

T = TypeVar("T")

# a row: a label (one or two words), a separator (a bar, a tab, two spaces), then a figure
# (possessive quantifiers: a label followed by a long run of blanks fails at once)
_ROW = re.compile(
    r"^\s*+\|?\s*+[\w.#:/-]++(?: [\w.#:/-]++)?(?:\s*+\||\t|\s{2,}+)[\s|]*+~?\d[\d,]*(?:\.\d+)?\b"
)
_SEPARATOR = re.compile(r"^[\s:|-]*+$")
_SPLIT = re.compile(r"\s*\|\s*|\t+|\s{2,}")
_FIGURE = re.compile(r"~?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:\s*[A-Za-z/%]+)?")
_MEMBER_LABEL = re.compile(r"(?=.*[^\W\d_])(?=.*\d)[\w.#:/ -]+")
_MEMBER_HEADER = re.compile(
    r"^(?:rank|node|gpu|host|hostname|device|dev|worker|card|server|machine|member|id|name|#)\b",
    re.IGNORECASE,
)
# labels that are points in time or configurations, never peers (an epoch, a step, a batch
# size, a run, a version, a precision, a model)
_NOT_MEMBER = re.compile(
    r"\b(?:epoch|step|iter\w*|batch|bs|size|seq\w*|len|run|trial|exp\w*|config\w*|version|v"
    r"|fp\d+|bf\d+|tf\d+|int\d+|tp|pp|dp|ep|workers|threads?|nodes|gpus)\b",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_RATE_WORDS = re.compile(
    r"/s\b|/sec\b|\bper\s+sec|(?:\b|_)per_?sec(?:ond)?\b|\bbandwidth|\bbusbw|\balgbw|\bthroughput|\bspeed\b|flops?\b"
    r"|\bflop/s|\bmfu\b|\bhfu\b|\bhash\s*rate|\bbw\b|\bgbps\b"
    # other languages' words for a rate (`Débit`, `Durchsatz`, `скорость`, `吞吐`)
    r"|\bd[ée]bit\b|durchsatz|\bскорость\b|吞吐",
    re.IGNORECASE,
)
SIBLING_SHARE = 0.25
"""A slow row whose other figure (its GPUs, its batch) is low by the same share (within this)
is explained by it: four GPUs give half of eight's throughput."""
_TIME_WORDS = re.compile(
    # (a field's name too: `compute_ms`, `step_time`, `iter_sec`)
    r"(?:\b|_)(?:time|ms|(?<!per_)(?<!per\s)sec(?:onds?)?|latency|duration)(?:\b|_)|\(s\)|\bs/it\b|\bfwd\b|\bbwd\b"
    r"|\bforward\b|\bbackward\b|\belapsed\b|\bhours?\b|\bmin(?:utes?)?\b"
    # other languages' words for a time (`Schrittzeiten`, `Tiempos`, `temps`, `Время`, `時間`)
    r"|zeit(?:en)?\b|\btiempos?\b|\btemps\b|\bdur[ée]e\b|\bвремя\b|\bвремени\b|時間|时间|耗时",
    re.IGNORECASE,
)


def cells(line: str) -> list[str]:
    """Return the cells of a table line (a markdown bar, a tab or two spaces part them)."""
    return [c for c in _SPLIT.split(line.strip().strip("|").strip()) if c]


def _figure(cell: str) -> float | None:
    m = _FIGURE.fullmatch(cell.strip())
    return float(m["n"].replace(",", "")) if m else None


NOT_WORK_TIME = re.compile(
    r"timeout|uptime|\bage\b|_age\b|save|ckpt|checkpoint|budget|limit|interval|deadline|since"
    # a round trip, a clock's offset, a one-off compile or start, an evaluation, a wait (a
    # member that waits less is the slow one), a counter since start, a size
    r"|\brtt\b|\bping\b|offset|compil\w*|startup|warm-?up|\beval\w*|validat\w*|\bwait\w*"
    r"|_wait\b|\bidle\b|(?:\b|_)total\b|\bmemory\b|\bmem\b|\b[KMGT]i?B\b(?!/)|snapshot",
    re.IGNORECASE,
)
"""Times that are no member's work: a timeout, an uptime, an age, a save, a budget, a round
trip, a clock's offset, a compile, an evaluation, a wait, a counter, a size."""


def quantity_of(text: str) -> str | None:
    """Return ``"rate"`` or ``"time"`` for what `text` names, None for neither or both (or a
    time that is no member's work: a timeout, an uptime, a checkpoint's save)."""
    if NOT_WORK_TIME.search(text):
        return None
    rate, time = _RATE_WORDS.search(text), _TIME_WORDS.search(text)
    if rate and not time:
        return "rate"
    return "time" if time and not rate else None


def are_members(labels: list[str], first_header: str, least: int = MIN_PEERS) -> bool:
    """Return whether the labels name `least` distinct members of one kind: names of one
    shape with a number (``n01``, ``gpu-a03``, ``GPU 3``) or bare numbers under a header that
    names members, their numbers a run without gaps (ranks 0-7, nodes 01-05); not points in
    time or configurations (epochs, batch sizes, models)."""
    if len(set(labels)) < least or any(_NOT_MEMBER.search(label) for label in labels):
        return False
    if len({_DIGITS.sub("#", label) for label in labels}) != 1:
        return False  # `T4`, `A100`: models; `1 node`, `2 nodes`: a sweep
    named = all(_MEMBER_LABEL.fullmatch(label) for label in labels)
    if not (named or _MEMBER_HEADER.match(first_header)):
        return False
    numbers = sorted(int(_DIGITS.findall(label)[-1]) for label in labels)
    return numbers == list(range(numbers[0], numbers[0] + len(numbers)))


_TIME_AXIS = re.compile(r"(?:epoch|ep|step|iter(?:ation)?|it)\.?", re.IGNORECASE)
_TIME_LABEL = re.compile(r"(?:epoch|ep|step|iter(?:ation)?)\s*#?(\d+)", re.IGNORECASE)
_WORK_SIZE = re.compile(
    r"\b(?:seq(?:uence)?[ _-]?len(?:gth)?|max[ _-]?len|context|batch(?:[ _-]?size)?|bs|resolution"
    r"|img[ _-]?size|image[ _-]?size|tokens|eval\w*|val(?:idation)?\s+set)\b",
    re.IGNORECASE,
)
"""A column of the size of the work each row did."""
_POINT_IN_TIME = re.compile(
    r"\b(?:eta|remaining|left|start\w*|end\w*|finish\w*|done|at|timestamp|date|clock|wall)\b",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d\d)(?:\.\d+)?")


def _over_time(labels: list[str], first_header: str) -> bool:
    """Return whether the rows are points in time: epochs or steps in increasing order (bare
    numbers under an ``epoch`` or ``step`` header, or ``epoch 3`` labels)."""
    if _TIME_AXIS.fullmatch(first_header.strip()) and all(x.isdigit() for x in labels):
        numbers = [int(x) for x in labels]
    else:
        found = [_TIME_LABEL.fullmatch(x.strip()) for x in labels]
        if not all(found):
            return False
        numbers = [int(m[1]) for m in found if m]
    rising = all(a < b for a, b in zip(numbers, numbers[1:], strict=False))
    return len(numbers) >= MIN_SEQUENCE and rising


MIN_SEQUENCE = 3
"""Rows a table over time needs for its time columns to be read."""


def _seconds(cell: str) -> float | None:
    """Return a cell's figure, or a clock's seconds (``01:12``, ``0:41:12``)."""
    clock = _CLOCK.fullmatch(cell.strip())
    if clock is None:
        return _figure(cell)
    hours, minutes, seconds = clock.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)


def _time_columns(
    header: list[str], rows: list[tuple[list[str], T]]
) -> Iterator[list[tuple[float, T]]]:
    """Yield each column of a table over time that names a time (or a rate, read as its
    inverse) or holds clocks, as (seconds, item) in row order; none when a column of the work's
    size (a sequence length, a batch size) changes over the rows: other work, not a slower job."""
    for col in range(1, len(header)):
        sizes = {row[col] for row, _ in rows if col < len(row)}
        if _WORK_SIZE.search(header[col]) and len(sizes) > 1:
            return
    for col in range(1, len(header)):
        clocks = all(col < len(row) and _CLOCK.fullmatch(row[col].strip()) for row, _ in rows)
        if clocks and _POINT_IN_TIME.search(header[col]):
            continue  # a time of day or a time left, not a duration
        kind = "time" if clocks else quantity_of(header[col])
        read = [_seconds(row[col]) if col < len(row) else None for row, _ in rows]
        if kind is None or any(v is None or v <= 0 for v in read):
            continue
        yield [
            (v if kind == "time" else 1 / v, item)
            for v, (_, item) in zip(read, rows, strict=True)
            if v is not None
        ]


_TIME_UNIT = re.compile(r"[\d.]\s*(ms|s|us|µs|sec)$")


def _timed_cells(header: str, column: list[str]) -> str | None:
    """Return ``"time"`` for a column whose header names no quantity but whose every cell
    carries one unit of time (a profiler's `612.3ms`), unless the header names a time that is
    no member's work (a total, a wait)."""
    units = {m[1] if (m := _TIME_UNIT.search(cell.strip())) else None for cell in column}
    if len(units) != 1 or None in units or NOT_WORK_TIME.search(header):
        return None
    return "time"


def _explained_by_sibling(rates: list[float], others: list[list[float | None]]) -> bool:
    """Return whether the slowest row is as low in another column of figures (its GPU count,
    its batch) as in this one, against each column's median."""
    slowest = min(range(len(rates)), key=rates.__getitem__)
    share = rates[slowest] / sorted(rates)[len(rates) // 2]
    for column in others:
        figures = [v for v in column if v is not None]
        median = sorted(figures)[len(figures) // 2]
        other = column[slowest]
        if (
            median > 0
            and other is not None
            and abs(other / median - share) <= SIBLING_SHARE * share
        ):
            return True
    return False


@dataclass
class TableReader(Generic[T]):
    """Follow the tables of one input, a line at a time; `groups` yields, per table column
    read, the (label, rate, item) of its rows (a time as its inverse)."""

    _before: list[str] = field(default_factory=list)  # the last two lines that were no row
    _header: list[str] | None = None
    _caption: str = ""
    _indexed: bool = False  # the rows start with pandas' index, which the header lacks
    _rows: list[tuple[list[str], T]] = field(default_factory=list)
    _done: list[list[tuple[str, float, T]]] = field(default_factory=list)
    _sequences: list[list[tuple[float, T]]] = field(default_factory=list)

    def feed(self, body: str, item: T) -> None:
        """Read one line (`item` is what a finding will point at)."""
        if not body.strip() or ("---" in body and _SEPARATOR.match(body)):
            return
        if _ROW.match(body):
            row = cells(body)
            if self._rows and self._indexed:
                row = row[1:]  # pandas' index before the first column
            if self._rows and len(row) != len(self._rows[0][0]):
                self._close()
                row = cells(body)
            if not self._rows:
                self._start(row)
                row = row[1:] if self._indexed else row
            if self._header is not None:
                self._rows.append((row, item))
                return
        self._close()
        self._before = [*self._before[-1:], body]

    def _start(self, row: list[str]) -> None:
        """Take the header (the line before the rows, as many cells) and the caption; rows of
        an epoch and one figure (``epoch 3  1:27:33``) need none: the line before names it."""
        self._header, self._indexed = None, False
        if self._before:
            head = cells(self._before[-1])
            # a pandas frame prints its index, a column with no header, before the first
            indexed = len(head) == len(row) - 1 and row[0] == "0"
            if (len(head) == len(row) or indexed) and all(_figure(c) is None for c in head):
                self._header, self._indexed = head, indexed
                self._caption = self._before[0] if len(self._before) > 1 else ""
                return
        if len(row) == 2 and _TIME_LABEL.fullmatch(row[0].strip()):
            self._header = ["", self._before[-1] if self._before else ""]
            self._caption = ""

    def _close(self) -> None:
        header, rows = self._header, self._rows
        self._header, self._rows = None, []
        if header is None or len(rows) < min(MIN_PEERS, MIN_SEQUENCE):
            return
        labels = [row[0] for row, _ in rows]
        if _over_time(labels, header[0]):
            self._sequences.extend(_time_columns(header, rows))
            return
        if not are_members(labels, header[0]):
            return
        columns = {
            col: [_figure(row[col]) for row, _ in rows]
            for col in range(1, len(header))
            if all(_figure(row[col]) is not None for row, _ in rows)
        }
        for col, values in columns.items():
            # the caption names the quantity only of a table with one column of figures
            kind = (
                quantity_of(header[col])
                or (quantity_of(self._caption) if len(columns) == 1 else None)
                or _timed_cells(header[col], [row[col] for row, _ in rows])
            )
            figures = [v for v in values if v is not None]
            if kind is None or min(figures) <= 0:
                continue
            rates = [v if kind == "rate" else 1 / v for v in figures]
            others = [c for k, c in columns.items() if k != col]
            if _explained_by_sibling(rates, others):
                continue
            self._done.append(
                [(label, r, item) for label, r, (_, item) in zip(labels, rates, rows, strict=True)]
            )

    def sequences(self) -> Iterator[list[tuple[float, T]]]:
        """Yield each time column of the tables over time read so far, as (seconds, item) in
        row order (a rate as its inverse; the current table ends here)."""
        self._close()
        yield from self._sequences
        self._sequences = []

    def groups(self) -> Iterator[list[tuple[str, float, T]]]:
        """Yield each column group of the tables read so far (the current one ends here)."""
        self._close()
        yield from self._done
        self._done = []
