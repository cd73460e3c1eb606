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

Guarantees: a row needs a member's label, a name with a digit (``n03``, ``gpu-a03``,
``node5``, ``GPU 3``) or a bare number under a first header that names members (rank, node,
GPU, host, device, worker), so a sweep over message sizes (nccl-tests' ``size`` column) or
steps is no group; fewer than ``MIN_PEERS`` members, or figures within 30 % of their median,
never alarm. Lines are read one at a time (``TableReader.feed``), with only the current table
held; a line that is no row of it ends it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from diagnosis.explain.peers import MIN_PEERS

T = TypeVar("T")

# a row: a label (one or two words), a separator (a bar, a tab, two spaces), then a figure
_ROW = re.compile(
    r"^\s*\|?\s*[\w.#:/-]+(?: [\w.#:/-]+)?\s*(?:\||\t|\s{2,})[\s|]*~?\d[\d,]*(?:\.\d+)?\b"
)
_SEPARATOR = re.compile(r"^\s*\|?[\s:|-]*-{3,}[\s:|-]*$")
_SPLIT = re.compile(r"\s*\|\s*|\t+|\s{2,}")
_FIGURE = re.compile(r"~?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:\s*[A-Za-z/%]+)?")
_MEMBER_LABEL = re.compile(r"(?=.*[A-Za-z])(?=.*\d)[\w.#:/ -]+")
_MEMBER_HEADER = re.compile(
    r"^(?:rank|node|gpu|host|hostname|device|dev|worker|card|server|machine|member|id|name|#)s?\b",
    re.IGNORECASE,
)
_RATE_WORDS = re.compile(
    r"/s\b|/sec\b|\bper\s+sec|\bbandwidth|\bbusbw|\balgbw|\bthroughput|\bspeed\b|flops?\b"
    r"|\bflop/s|\bmfu\b|\bhfu\b|\bhash\s*rate|\bsamples\b|\btokens\b|\bimages\b|\bbw\b|\bgbps\b",
    re.IGNORECASE,
)
_TIME_WORDS = re.compile(
    r"\btime\b|\bms\b|\(s\)|\bsec(?:onds?)?\b|\bs/it\b|\blatency\b|\bduration\b|\bfwd\b|\bbwd\b"
    r"|\bforward\b|\bbackward\b|\belapsed\b",
    re.IGNORECASE,
)


def cells(line: str) -> list[str]:
    """Return the cells of a table line (a markdown bar, a tab or two spaces part them)."""
    return [c for c in _SPLIT.split(line.strip().strip("|").strip()) if c]


def _figure(cell: str) -> float | None:
    m = _FIGURE.fullmatch(cell.strip())
    return float(m["n"].replace(",", "")) if m else None


def _quantity(text: str) -> str | None:
    """Return ``"rate"`` or ``"time"`` for what `text` names, None for neither or both."""
    rate, time = _RATE_WORDS.search(text), _TIME_WORDS.search(text)
    if rate and not time:
        return "rate"
    return "time" if time and not rate else None


@dataclass
class TableReader(Generic[T]):
    """Follow the tables of one input, a line at a time; `groups` yields, per table column
    read, the (label, rate, item) of its rows (a time as its inverse)."""

    _before: list[str] = field(default_factory=list)  # the last two lines that were no row
    _header: list[str] | None = None
    _caption: str = ""
    _rows: list[tuple[list[str], T]] = field(default_factory=list)
    _done: list[list[tuple[str, float, T]]] = field(default_factory=list)

    def feed(self, body: str, item: T) -> None:
        """Read one line (`item` is what a finding will point at)."""
        if not body.strip() or _SEPARATOR.match(body):
            return
        if _ROW.match(body):
            row = cells(body)
            if self._rows and len(row) != len(self._rows[0][0]):
                self._close()
            if not self._rows:
                self._start(len(row))
            if self._header is not None:
                self._rows.append((row, item))
                return
        self._close()
        self._before = [*self._before[-1:], body]

    def _start(self, width: int) -> None:
        """Take the header (the line before the rows, as many cells) and the caption."""
        self._header = None
        if self._before:
            head = cells(self._before[-1])
            if len(head) == width and all(_figure(c) is None for c in head):
                self._header = head
                self._caption = self._before[0] if len(self._before) > 1 else ""

    def _close(self) -> None:
        header, rows = self._header, self._rows
        self._header, self._rows = None, []
        if header is None or len(rows) < MIN_PEERS:
            return
        labels = [row[0] for row, _ in rows]
        named = all(_MEMBER_LABEL.fullmatch(label) for label in labels)
        if not (named or _MEMBER_HEADER.match(header[0])):
            return
        if len(set(labels)) < MIN_PEERS:
            return
        for col in range(1, len(header)):
            kind = _quantity(header[col]) or _quantity(self._caption)
            values = [_figure(row[col]) for row, _ in rows]
            if kind is None or any(v is None or v <= 0 for v in values):
                continue
            self._done.append(
                [
                    (label, v if kind == "rate" else 1 / v, item)
                    for label, v, (_, item) in zip(labels, values, rows, strict=True)
                    if v is not None
                ]
            )

    def groups(self) -> Iterator[list[tuple[str, float, T]]]:
        """Yield each column group of the tables read so far (the current one ends here)."""
        self._close()
        yield from self._done
        self._done = []
