"""More devices, slower: the same work timed on fewer and on more GPUs or nodes.

People who add GPUs or nodes and see the job get slower rarely say "slowdown"; they time the
two setups one after the other (``with one GPU each batch takes ~3s/it ... when I use two GPUs
... ~56s/it``, a ``2 GPU`` heading over log lines at 30 samples/sec and a ``1 GPU`` heading over
lines at 113). ``SetupReader`` reads such a text as setups, each the device count a line names
(``single GPU``, ``two GPUs``, ``2 nodes``, ``multi-GPU``) and the step figures
(speed_figures.step_figures) of that line and of the lines after it until the next count. The
algorithm:

1. a line that names one count of GPUs (or of nodes) opens that setup;
2. its step figures and those of the lines that follow join the open setup;
3. of two setups counted in the same unit, the one with more devices is slower when its step
   takes ``SCALING_RATIO`` times the other's, or its rate is ``1 / SCALING_RATIO`` of it or less:
   adding devices bought nothing (data parallelism keeps a step's time, or shortens it);
4. the text reports a straggler job unless it explains the setups apart (explained.explains,
   two GPU models: explained.setups_differ, batch sizes that differ, a global batch that grew).

Guarantees: figures before any count, or of setups in different units, are never compared; a
rate said per device (`samples/sec per GPU`) is not compared with a total; a setup with more
devices that is as fast, faster, or slower by less than ``SCALING_RATIO`` is silent (the
overhead of synchronising); at most ``MAX_SETUPS`` setups and ``MAX_FIGURES`` figures each are
kept, and a setup stops reading figures after ``QUIET_LINES`` lines that give none, so a flood
costs one search a line for its count (and the figures of at most ``QUIET_LINES`` lines after
each count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from diagnosis.explain.explained import explains, setups_differ
from diagnosis.explain.records import Record
from diagnosis.explain.speed_figures import Figure, step_figures

SCALING_RATIO = 2.0
"""A step this many times as long on more devices (or a rate this many times lower) is a job
that gained nothing from them."""
MAX_SETUPS = 16
MAX_FIGURES = 8
QUIET_LINES = 50
"""Lines without a figure after which the open setup stops reading (a heading over a log of
losses is no timing)."""

_WORDS = {"one": 1, "single": 1, "only": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_WORDS |= {"eight": 8, "sixteen": 16}
_COUNT = r"\d{1,5}|one|single|only|two|three|four|five|six|eight|sixteen"
_MODELS = r"[AHVBL]\d{2,3}|T4|L4|MI\d{3}X?"
"""Data-centre GPU models a count may name instead of `GPU` (`eight A100 80G`, `1x H100`)."""
_SETUP = re.compile(
    # (each run of blanks bounded by a character: `\s*-?\s*` backtracked cubically on a line of
    # spaces)
    rf"\b(?:(?P<n>{_COUNT})|a\s+single)\s*(?:-\s*)?(?:x\s*)?(?:(?P<gpu>GPU|card|{_MODELS})s?"
    r"|(?P<node>node)s?)\b"
    r"|\b(?P<multi>multi|multiple)\s*(?:-\s*)?(?:(?P<mgpu>GPU|card)s?|(?P<mnode>node)s?)\b",
    re.IGNORECASE,
)
"""A device count: `1 GPU`, `single GPU`, `two GPUs`, `eight A100`, `2 nodes`, `multi-GPU` (not
`GPU 0`)."""
_NEEDLES = (
    *("gpu", "card", "node", "a100", "h100", "h200", "v100", "a40", "l40", "b200"),
    *("mi1", "mi2", "mi3"),  # (AMD's MI100 to MI300X: not `mi`, which is in every other line)
)
_PER_DEVICE = re.compile(r"(?:\bper|/|\beach)\s*(?:GPU|card|node|device|worker|rank)\b", re.I)
"""A rate said per device: not comparable with another setup's total."""
_BATCH = re.compile(r"\bbatch[\s_-]*size\s*(?:=|:|of)?\s*(\d+)", re.IGNORECASE)
_MORE_WORK = re.compile(
    r"\b(?:global|effective|total|larger|bigger)\s+batch\b|\bbatch\b[^.\n]{0,30}?\b(?:larger"
    r"|bigger|\d+\s*x)\b",
    re.IGNORECASE,
)
"""The work per step said to grow with the devices (a global batch): no like for like."""


@dataclass
class Setup:
    """A device count and the step figures told under it: (is a time, value) in order."""

    unit: str
    count: int
    opened: Record
    at: int
    figures: list[tuple[bool, float]] = field(default_factory=list)


@dataclass
class SetupReader:
    """The setups a text tells, in order (module doc)."""

    setups: list[Setup] = field(default_factory=list)
    explained: bool = False
    batches: set[str] = field(default_factory=set)
    quiet: int = 0  # lines with digits but no figure since the open setup's last figure

    def feed(self, rec: Record, low: str) -> None:
        """Read one record (`low`: its body in lower case, which gates the search for a
        count)."""
        body = rec.body
        marks = _marks(body) if any(n in low for n in _NEEDLES) else []
        full = not self.setups or len(self.setups[-1].figures) >= MAX_FIGURES
        done = full or self.quiet >= QUIET_LINES
        if not marks and (done or not any(c.isdigit() for c in body)):
            return
        figures = step_figures(body) if any(c.isdigit() for c in body) else ()
        if _PER_DEVICE.search(body):
            figures = tuple(f for f in figures if f.timed)  # a rate per device: no total
        self.quiet = 0 if figures or marks else self.quiet + 1
        for at, unit, count in marks:
            if len(self.setups) >= MAX_SETUPS:
                break
            last = self.setups[-1] if self.setups else None
            if last is not None and last.opened is rec and not _between(figures, last.at, at):
                # two counts with no figure between them are one setup, counted in nodes
                if unit == "gpu" and last.unit == "node":
                    continue  # `2 nodes with 8 GPUs each`
                self.setups.pop()  # `8 GPUs on 2 nodes`, `two or three nodes`
            self.setups.append(Setup(unit, count, rec, at))
        if not self.setups:
            return
        for f in figures:
            owner = next(
                (s for s in reversed(self.setups) if s.opened is not rec or s.at <= f.at), None
            )
            if owner is not None and len(owner.figures) < MAX_FIGURES:
                owner.figures.append((f.timed, f.value))
        if figures:
            self.explained = (
                self.explained
                or explains(body)
                or setups_differ(body)
                or _MORE_WORK.search(body) is not None
            )
            self.batches.update(_BATCH.findall(body))

    def slower(self) -> Record | None:
        """Return the record that opened the setup with more devices and a slower step
        (module doc), or None."""
        if self.explained or len(self.batches) > 1:
            return None
        for more in self.setups:
            for fewer in self.setups:
                if more.unit == fewer.unit and more.count > fewer.count and _slower(more, fewer):
                    return more.opened
        return None


def _between(figures: tuple[Figure, ...], start: int, end: int) -> bool:
    """Whether a figure stands between two places of a line."""
    return any(start <= f.at < end for f in figures)


def _marks(body: str) -> list[tuple[int, str, int]]:
    """Return each device count a line names: where, its unit (gpu, node) and the count."""
    found = []
    for m in _SETUP.finditer(body):
        if m["multi"]:
            found.append((m.start(), "gpu" if m["mgpu"] else "node", 2))
        else:
            n = (m["n"] or "single").lower()
            unit = "gpu" if m["gpu"] else "node"
            found.append((m.start(), unit, _WORDS[n] if n in _WORDS else int(n)))
    return found


def _slower(more: Setup, fewer: Setup) -> bool:
    """Whether the first figure of a kind both setups give is SCALING_RATIO worse on `more`."""
    for timed in (True, False):
        a = next((v for t, v in more.figures if t is timed), None)
        b = next((v for t, v in fewer.figures if t is timed), None)
        if a is None or b is None or a <= 0 or b <= 0:
            continue
        return a >= SCALING_RATIO * b if timed else b >= SCALING_RATIO * a
    return False
