"""Listings of members' figures that are no table: one member far off its peers.

People paste one figure per member in shapes other than a table's columns
(diagnosis/explain/tables.py):

- one member a line, a colon or a dash between (``gpu-07: 1,41 s``, ``GPU 6 : 212``,
  ``ранг 3 — 1,734``), after a caption that names the quantity;
- several members on one line (``GPU0 402.1 / GPU1 399.8 / GPU2 401.5``,
  ``gpu-m01 3412  gpu-m02 3398  gpu-m03 3405``), continued on the next lines;
- a mapping (``The node elapsed time are {2: 20.307, 3: 20.265, 0: 206.872, 1: 151.752}``);
- a Prometheus vector, one series a line (``{instance="gpu-g104:9400"}  1.684``), its metric's
  name or the query above it naming the quantity.

A listing's quantity is its figures' unit when they all carry one (``s``, ``ms``, ``img/s``),
else what the caption line before it names (tables.quantity_of: a rate or a time, in several
languages); a listing of neither (temperatures, memory, counts, a timeout) is not read. Each
listing read is a group of peers for peers.slow_peer, a time read as its inverse.

Guarantees: the members must be MIN_PEERS (MIN_LINE_PEERS on one line) of one kind and shape,
their numbers a run without gaps (tables.are_members: epochs, steps, batch sizes, models and
sweeps are no members); bare numbers (a mapping's keys) count only under a caption that names
members (rank, node, GPU, worker, host). A line with anything but members' figures and their
separators is no listing line. Decimal commas are read as decimals when any figure of the
listing shows one (``0,612``, ``1,41``); otherwise a comma groups thousands. Lines are read one
at a time (``ListingReader.feed``), with only the current listing held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from diagnosis.explain.peers import MIN_LINE_PEERS, MIN_PEERS
from diagnosis.explain.tables import NOT_WORK_TIME, are_members, quantity_of

T = TypeVar("T")

_FIG = r"~?\d+(?:[.,]\d+)*"
# a unit after a figure: `s`, `ms`, `img/s`, `Mh/s`, `GB/s`, `с`, `%` (a word, no digit)
_UNIT = r"[^\W\d_][^\W\d_/]*(?:/[^\W\d_]+)*|%|°C"
# one member a line: a label (one or two words, the last with its number; a note in brackets
# may follow it: `ranks 24-31 (node gpu-k4)`), a colon or a dash, one figure (or a range of
# figures) and its unit, nothing after (possessive quantifiers: a long run of digits fails at
# once)
_ROW = re.compile(
    rf"^\s*+[-*•]?\s*+(?P<label>(?:[^\W\d_](?:[^\W\d]|[.-])*+\s?)?#?(?:[^\W\d]|[.-])*+\d[\w.-]*+)"
    r"(?:\s*\([^()\n]{1,40}\))?\s*(?:[:=→]|[—–]|->|\s-\s)"
    rf"\s*(?P<fig>{_FIG})(?:\s*(?:-|–|\.\.)\s*(?P<upper>{_FIG}))?\s*(?P<unit>{_UNIT})?\s*$"
)
# a label that names a range of members (`rank 0-11`, `GPU 13–31`): one row for each
_RANGE = re.compile(r"^(?P<name>.*?)(?P<first>\d+)\s*[-–]\s*(?P<last>\d+)$")
MAX_RANGE = 4096
"""Members one label's range may name; a longer range is read as one label."""
# several members a line: `GPU0 402.1`, `gpu-m01 3412`, `GPU 3: 955.7 ms`
_PAIR = re.compile(
    rf"(?<![\w.-])(?P<label>[^\W\d_](?:[^\W\d]|[.-])*+\s?#?\d++)(?:\s*[:=]\s*|\s+)(?P<fig>{_FIG})\b"
    rf"(?:\s?(?P<unit>{_UNIT})(?![\w.-]))?"
)
_PAIR_GAPS = " \t/,;|"
"""What may part the pairs of one line."""
# a mapping of members to figures: `{2: 20.307, 3: 20.265}`, `{'n1': 0.7, 'n2': 0.8}`
_MAPPING = re.compile(r"\{(?P<body>[^{}]+)\}")
_ENTRY = re.compile(
    r"\s*(?P<key>'[^']*'|\"[^\"]*\"|[\w.-]+)\s*:\s*(?P<fig>-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*(?:,|$)"
)
# a Prometheus series: `metric{label="value",...}  figure [timestamp]`
_SERIES = re.compile(
    r"^\s*(?P<metric>[A-Za-z_:][\w:]*)?\{(?P<labels>[^{}]*=\s*\"[^{}]*)\}\s+"
    r"(?P<fig>\d+(?:\.\d+)?(?:e-?\d+)?)(?:\s+\d+(?:\.\d+)?)?\s*$"
)
_SERIES_LABEL = re.compile(r"(?P<name>\w+)\s*=\s*\"(?P<value>[^\"]*)\"")
_MEMBER_KEYS = ("instance", "node", "hostname", "host", "gpu", "rank", "pod", "device", "worker")
_PORT = re.compile(r":\d+$")
_MEMBER_WORD = re.compile(
    r"\b(?P<word>rank|node|gpu|host|worker|device)s?\b|\b(?:ранг|узел)\w*|节点|ノード",
    re.IGNORECASE,
)
_COMMA_AFTER_DOTS = re.compile(r"\d{1,3}(?:\.\d{3})+,\d+")
_DOT_THOUSANDS = re.compile(r"\d{1,3}(?:\.\d{3})+")
_LAST_NUMBER = re.compile(r"\d+")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
SWEEP_STEP = 1.1
"""Figures that each differ by this factor from the next member's, always the same way, are a
sweep."""
_COMMA_DECIMAL = re.compile(r"~?(?:0,\d+|\d+,(?:\d{1,2}|\d{4,}))")
_UNIT_TIME = re.compile(r"(?:ms|msec|s|secs?|seconds?|с|мс|秒|min|mins|minutes?)", re.IGNORECASE)
_UNIT_RATE = re.compile(r".*/(?:s|sec)\b|[GT]?flops|[kKMGT]?[Hh]/s|%", re.IGNORECASE)


@dataclass
class _Listing(Generic[T]):
    """The listing being read: its form, caption, and the members' labels, figures and units."""

    form: str
    caption: str
    labels: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    uppers: list[str] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    items: list[T] = field(default_factory=list)

    def add(
        self, label: str, figure: str, unit: str | None, item: T, upper: str | None = None
    ) -> None:
        """Add a member's figure (a range's members each get it; `upper`: the figure's range
        ends there, and the middle is read)."""
        label = label.strip()
        span = _RANGE.match(label)
        first, last = (int(span["first"]), int(span["last"])) if span else (0, 0)
        names = [label]
        if span and first < last and last - first < MAX_RANGE:
            names = [f"{span['name']}{n}" for n in range(first, last + 1)]
        for name in names:
            self.labels.append(name)
            self.figures.append(figure)
            self.uppers.append(upper or figure)
            self.units.append(unit or "")
            self.items.append(item)


_POINT_IN_TIME = re.compile(r"(?:epoch|ep|step|iter(?:ation)?)\s*#?\s*(\d+)", re.IGNORECASE)


def _over_time(labels: list[str]) -> bool:
    """Whether the labels are epochs or steps counted upward (`Epoch 1` ... `Epoch 5`), each
    once: points in time, whose figures are a stream, not members."""
    found = [_POINT_IN_TIME.fullmatch(label.strip()) for label in labels]
    if len(labels) < 3 or not all(found):
        return False
    numbers = [int(m[1]) for m in found if m]
    return all(b > a for a, b in zip(numbers, numbers[1:], strict=False))


def _unit_quantity(units: list[str]) -> str | None:
    """Return the quantity of one unit all figures share: ``"time"``, ``"rate"``, or None for
    another unit (``%`` of utilisation, ``°C``, MiB) or none."""
    if len(set(units)) != 1 or not units[0]:
        return None
    unit = units[0]
    if _UNIT_TIME.fullmatch(unit):
        return "time"
    return None if unit == "%" or not _UNIT_RATE.fullmatch(unit) else "rate"


def _values(figures: list[str]) -> list[float]:
    """Read the listing's figures: commas are decimals if any figure shows a decimal comma, and
    then dots group thousands (`1.234,5`); dots group thousands too when every dotted figure has
    three digits after its dot and some figure without one has three digits or more (`1.004`
    beside `998`: German or Spanish thousands)."""
    bare = [f.lstrip("~") for f in figures]
    decimal_comma = any(_COMMA_DECIMAL.fullmatch(f) or _COMMA_AFTER_DOTS.fullmatch(f) for f in bare)
    dotted = [f for f in bare if "." in f]
    dotted_thousands = decimal_comma or (
        bool(dotted)
        and all(_DOT_THOUSANDS.fullmatch(f) for f in dotted)
        and any("." not in f and len(f.replace(",", "")) >= 3 for f in bare)
    )
    read = []
    for f in bare:
        if dotted_thousands:
            f = f.replace(".", "")
        f = f.replace(",", ".") if decimal_comma else f.replace(",", "")
        read.append(float(f) if f.count(".") <= 1 else -1.0)
    return read


def _sweep(labels: list[str], values: list[float]) -> bool:
    """Whether the figures change by SWEEP_STEP or more from each member to the next, always
    the same way, in the order of the members' numbers: a sweep over 1, 2, 4 nodes, not peers
    (peers' figures jitter)."""
    numbers = [int(_LAST_NUMBER.findall(label)[-1]) for label in labels]
    ordered = [v for _, v in sorted(zip(numbers, values, strict=True))]
    pairs = list(zip(ordered, ordered[1:], strict=False))
    return all(b >= SWEEP_STEP * a for a, b in pairs) or all(a >= SWEEP_STEP * b for a, b in pairs)


def _pairs(body: str) -> list[re.Match[str]]:
    """Return a line's member-figure pairs when the line holds nothing else (read from its
    start, pair after pair: a line that starts otherwise fails at once)."""
    found: list[re.Match[str]] = []
    at = len(body) - len(body.lstrip(_PAIR_GAPS))
    while at < len(body):
        m = _PAIR.match(body, at)
        if m is None:
            return []
        found.append(m)
        at = m.end() + len(body[m.end() :]) - len(body[m.end() :].lstrip(_PAIR_GAPS))
    return found if len(found) >= 2 else []


def _mapping(body: str) -> tuple[str, list[tuple[str, str]]] | None:
    """Return (the text before it, entries) of a mapping of MIN_PEERS figures on the line."""
    m = _MAPPING.search(body)
    if m is None or body[m.end() :].strip(" .;,"):
        return None
    inner = m["body"]
    entries, at = [], 0
    for e in _ENTRY.finditer(inner):
        if e.start() != at:
            return None
        entries.append((e["key"].strip("'\""), e["fig"]))
        at = e.end()
    if at != len(inner) or len(entries) < MIN_PEERS:
        return None
    return body[: m.start()], entries


def _series(body: str) -> tuple[str, str, str] | None:
    """Return (member, metric, figure) of a Prometheus series line."""
    m = _SERIES.fullmatch(body)
    if m is None:
        return None
    labels = {lm["name"]: lm["value"] for lm in _SERIES_LABEL.finditer(m["labels"])}
    member = next((labels[k] for k in _MEMBER_KEYS if k in labels), None)
    if member is None:
        return None
    return _PORT.sub("", member), m["metric"] or "", m["fig"]


@dataclass
class ListingReader(Generic[T]):
    """Follow the listings of one input, a line at a time; `groups` yields, per listing read,
    how many members make a group (peers.least_peers' numbers) and the (label, rate, item) of
    its members (a time as its inverse)."""

    _caption: str = ""  # the last line that was no listing line
    _current: _Listing[T] | None = None
    _done: list[tuple[int, list[tuple[str, float, T]]]] = field(default_factory=list)
    _sequences: list[list[tuple[float, T]]] = field(default_factory=list)

    def feed(self, body: str, item: T) -> None:
        """Read one line (`item` is what a finding will point at)."""
        if not body.strip():
            return
        row = _ROW.match(body) if ":" in body or "—" in body or "-" in body else None
        if row is not None:
            listing = self._continue("row", item)
            listing.add(row["label"], row["fig"], row["unit"], item, row["upper"])
            return
        pairs = _pairs(body)
        if pairs:
            listing = self._continue("line", item)
            for p in pairs:
                listing.add(p["label"], p["fig"], p["unit"], item)
            return
        series = _series(body) if "{" in body else None
        if series is not None:
            listing = self._continue("series", item)
            listing.caption = listing.caption if listing.labels else f"{self._caption} {series[1]}"
            listing.add(series[0], series[2], None, item)
            return
        self._close()
        mapping = _mapping(body) if "{" in body else None
        if mapping is not None:
            before, entries = mapping
            listing = _Listing[T]("mapping", f"{self._caption} {before}")
            for key, figure in entries:
                listing.add(key, figure, None, item)
            self._current = listing
            self._close()
        self._caption = body

    def _continue(self, form: str, item: T) -> _Listing[T]:
        """Return the listing a line of `form` continues, starting a new one if needed."""
        if self._current is None or self._current.form != form:
            self._close()
            self._current = _Listing[T](form, self._caption)
        return self._current

    def _close(self) -> None:
        listing, self._current = self._current, None
        if listing is None or len(set(listing.labels)) < MIN_LINE_PEERS:
            return
        labels = listing.labels
        member = _MEMBER_WORD.search(listing.caption)
        header = (member["word"] or "rank") if member else ""
        if all(_IPV4.fullmatch(label) for label in labels):
            header = "host"  # hosts by their addresses (a Prometheus instance)
        if listing.form == "mapping" and all(label.isdigit() for label in labels):
            labels = [f"{header} {label}" for label in labels] if header else []
        if listing.form == "row" and _over_time(labels):
            self._sequence(listing)
            return
        one_line = listing.form == "line" and len({id(i) for i in listing.items}) == 1
        least = MIN_LINE_PEERS if one_line else MIN_PEERS
        if not labels or not are_members(labels, header, least):
            return
        kind = _unit_quantity(listing.units) or (
            quantity_of(listing.caption) if not any(listing.units) else None
        )
        if listing.caption.strip() and NOT_WORK_TIME.search(listing.caption):
            return  # the caption names a round trip, a compile, an evaluation, a wait ...
        n = len(listing.figures)
        read = _values(listing.figures + listing.uppers)  # one reading of the decimal comma
        values = [(read[i] + read[n + i]) / 2 for i in range(n)]
        if kind is None or min(values) <= 0 or _sweep(labels, values):
            return
        rates = [v if kind == "rate" else 1 / v for v in values]
        self._done.append((least, list(zip(labels, rates, listing.items, strict=True))))

    def _sequence(self, listing: _Listing[T]) -> None:
        """Keep a listing of epochs or steps, one time a line (`Epoch 3: 590s`), as a stream
        over time (a rate as its inverse)."""
        kind = _unit_quantity(listing.units) or (
            quantity_of(listing.caption) if not any(listing.units) else None
        )
        values = _values(listing.figures)
        if kind is not None and min(values) > 0:
            seconds = [v if kind == "time" else 1 / v for v in values]
            self._sequences.append(list(zip(seconds, listing.items, strict=True)))

    def sequences(self) -> Iterator[list[tuple[float, T]]]:
        """Yield each listing of epochs or steps read so far, as (seconds, item) in line order
        (the current listing ends here)."""
        self._close()
        yield from self._sequences
        self._sequences = []

    def groups(self) -> Iterator[tuple[int, list[tuple[str, float, T]]]]:
        """Yield each listing read so far (the current one ends here)."""
        self._close()
        yield from self._done
        self._done = []
