"""A job that slows down and stays slow, told in words: step, iteration or epoch times that rise.

A synchronous job whose step time rises and stays up is waiting for something that became slow
(a fail-slow GPU, NIC or host, a throttled device, a data stall); the corpus labels it
`straggler` (tests/fixtures/explain/corpus/README.md). The rules read people's reports:

- the times they quote for a step, iteration, epoch or batch as it changed (``each iter was
  taking 6 seconds ... now upwards of 30 seconds per iteration``, ``it/s goes up from 10 to
  250 s/it``): the last figure at least ``SLOWDOWN_RATIO`` times the first is a slowdown that
  stayed;
- the step or training time said to increase, grow or go up, or the training (iteration) speed
  said to slow down, drop or degrade.

A report spread over sentences (one figure each) is judged by the engine on the prose lines of
one input together, with the same ratio and the same need for a word of change.

Guarantees: figures need a step word (epoch, iter, step, batch, ``s/it``) in the same line, a
word of change (then, now, after, became, ``from X to Y``: not a profile's phases) and at
least two time figures; a time that falls (warm-up, then steady) or rises less than the
ratio is silent, as is a sentence that denies the rise (``does not increase``). A speed that
increases, or a time that decreases, is never a slowdown.
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

SLOWDOWN_RATIO = 2.0
"""A step time quoted this many times its lowest earlier figure, at the end, is a slowdown that
stayed."""
RATE_DROP_PCT = 10.0
"""A rate (hash rate, samples/s, TFLOPS) said to fall this many percent below its highest earlier
figure is a slowdown."""

SLOWED = verdict(C.STRAGGLER, B.UNKNOWN, K.JOB, S.WARNING, A.MONITOR, 0.35)

_SECONDS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0}
_SECONDS |= {"min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0, "s/it": 1.0}
_SECONDS |= {"h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}
_UNIT = r"(?:ms|s/it|sec/it|secs?|seconds?|s|mins?|minutes?|h|hrs?|hours?)"
_WORD_AMOUNT = {"a": 1.0, "an": 1.0, "one": 1.0, "half an": 0.5, "half a": 0.5}
# a figure, optionally per unit of work (`8 hours/epoch`, `30 s per iteration`)
_FIGURE = re.compile(
    rf"\b(?:from\s+(?P<start>\d+(?:\.\d+)?)\s*(?P<start_unit>{_UNIT})?\s+to\s+)?"
    rf"(?:(?P<value>\d+(?:\.\d+)?)\s*|(?P<words>half\s+an?|an?|one)\s+)(?P<unit>{_UNIT})"
    r"(?:/(?:epoch|iter\w*|step|batch|it)\b)?(?![\w/])",
    re.IGNORECASE,
)
_STEP_WORD = re.compile(
    r"\b(?:epoch|iter(?:ation)?|step|batch)s?\b|\bs/it\b|\bit/s\b", re.IGNORECASE
)
# a duration on a clock (`1:20 min`, `6:30 min`, `2:05 h`): minutes:seconds or hours:minutes
_CLOCK = re.compile(
    r"\b(?P<major>\d{1,3}):(?P<minor>[0-5]\d)\s*(?P<unit>mins?|minutes?|h|hrs?|hours?)\b",
    re.IGNORECASE,
)
# a rate of steps (`~12it/s`): its inverse is a step time
_STEP_RATE = re.compile(
    r"(?P<value>\d+(?:\.\d+)?)\s*(?:it/s\b|(?:it|iters?|iterations?|steps?)\s*(?:/|per)\s*sec(?:ond)?s?\b)",
    re.IGNORECASE,
)
# the figures are one quantity over time: a change is said (a profile's phases are not)
CHANGE = re.compile(
    r"\b(?:then|now|after|later|subsequent\w*|became|become|becomes|goes\s+up|went\s+up|rose|"
    r"rises|increas\w*|grew|grows|jump\w*|climb\w*|until|however|drops?|dropped|falls?|fell|"
    r"decreas\w*|initially|at\s+first|(?:at|from|in)\s+the\s+beginning)\b"
    r"|\bfrom\s+\d[^.\n]{0,20}?\bto\s+\d",
    re.IGNORECASE,
)
_DENIAL = re.compile(
    r"\b(?:not|never|no\s+longer|doesn't|didn't|don't|won't|stopped)\b[^.\n]{0,20}$",
    re.IGNORECASE,
)


def _seconds(value: str, unit: str) -> float:
    unit = unit.lower().replace("sec/it", "s/it")
    return float(value) * _SECONDS[unit]


def figures(line: str) -> list[float]:
    """Return the time figures of a line in seconds, in order (``from X to Y s``: both; a step
    rate ``12it/s`` as its inverse, 1/12 s)."""
    found: list[tuple[int, float]] = [
        (m.start(), 1.0 / float(m["value"])) for m in _STEP_RATE.finditer(line) if float(m["value"])
    ]
    clocks = list(_CLOCK.finditer(line))
    for m in clocks:
        minutes = m["unit"].lower().startswith("m")
        major, minor = float(m["major"]), float(m["minor"])
        found.append((m.start(), major * 60 + minor if minutes else major * 3600 + minor * 60))
    for m in _FIGURE.finditer(line):
        if any(c.start() <= m.start("unit") < c.end() for c in clocks):
            continue  # the minutes of `1:20 min`, read above
        if m["words"] is not None and m["unit"].lower() in ("s", "h", "hr", "hrs", "min", "mins"):
            continue  # `a s`, `an h`: not an amount in words
        if m["start"] is not None:
            found.append((m.start(), _seconds(m["start"], m["start_unit"] or m["unit"])))
        amount = m["value"] or str(_WORD_AMOUNT[" ".join(m["words"].lower().split())])
        found.append((m.start("unit"), _seconds(amount, m["unit"])))
    return [seconds for _, seconds in sorted(found)]


def rose(times: list[float]) -> bool:
    """Return whether the last of the quoted step times is SLOWDOWN_RATIO times the lowest one
    before it (a time that fell first, then rose, is judged from its best)."""
    if len(times) < 2:
        return False
    best = min(times[:-1])
    return best > 0 and times[-1] >= SLOWDOWN_RATIO * best


def quoted_step_times(body: str) -> tuple[list[float], bool] | None:
    """Return the step times a line quotes and whether it says they changed, or None when it
    names no step (epoch, iteration, step, batch, s/it) or quotes no time.

    The engine keeps these across the lines of one person's report (``... kept at about 2
    seconds.`` then ``... suddenly became about a minute.``), where one line holds one figure.
    """
    if not _STEP_WORD.search(body):
        return None
    times = figures(body)
    return (times, CHANGE.search(body) is not None) if times else None


def _rose(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the line's last step time is SLOWDOWN_RATIO times its first."""
    quoted = quoted_step_times(m.string)
    if quoted is None or not quoted[1]:
        return None
    return SLOWED if rose(quoted[0]) else None


_RATE_UNIT = (
    r"(?:[kKMGTP]?H/s|[kKMGTP]?h/s|MHs?|Sol/s|sols?\b|(?:samples|images|imgs?|tokens|toks?|tks"
    r"|sequences|seqs)/s(?:ec(?:ond)?)?|(?:samples|images|tokens)\s+per\s+sec(?:ond)?|[GT]FLOPS"
    r"|TFLOP/s|[GM]B/s|Gbps)"
)
_RATE_FIGURE = re.compile(
    rf"(?P<value>\d+(?:\.\d+)?)(?:\s*(?:-|–)\s*(?P<high>\d+(?:\.\d+)?))?\s*{_RATE_UNIT}(?![\w/])",
    re.IGNORECASE,
)
# `Sol/s rate drops from 26 to 20`: the unit (or the word rate) named once, the figures bare
_RATE_FROM_TO = re.compile(
    r"\b(?:hash\s*rate|rate|throughput|speed)\b[^.\n]{0,30}?\bfrom\s+(?P<a>\d+(?:\.\d+)?)"
    r"\s+to\s+(?P<b>\d+(?:\.\d+)?)\b",
    re.IGNORECASE,
)
_LEARNING_RATE = re.compile(r"\b(?:learning|lr|dropout|error|loss)\s+rates?\b", re.IGNORECASE)


def quoted_rates(line: str) -> list[float]:
    """Return the rate figures of a line, in order (a range ``32-33 MH/s`` as its middle;
    ``rate drops from 26 to 20``: both)."""
    found = [
        (m.start(), (float(m["value"]) + float(m["high"] or m["value"])) / 2)
        for m in _RATE_FIGURE.finditer(line)
    ]
    if not _LEARNING_RATE.search(line):
        for m in _RATE_FROM_TO.finditer(line):
            found += [(m.start("a"), float(m["a"])), (m.start("b"), float(m["b"]))]
    return [rate for _, rate in sorted(found)]


def _rate_fell(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the line says a rate fell and its last rate figure is
    RATE_DROP_PCT below the highest one before it, unless the words before the fall deny it."""
    if _DENIAL.search(m.string[max(0, m.start() - 40) : m.start()]):
        return None
    rates = quoted_rates(m.string)
    if len(rates) < 2:
        return None
    best = max(rates[:-1])
    return SLOWED if best > 0 and rates[-1] <= (1 - RATE_DROP_PCT / 100) * best else None


def _barely(times: list[float]) -> bool:
    """Return whether times quoted before and after rose less than RATE_DROP_PCT (the same
    smallest gap worth naming as for rates)."""
    return (
        len(times) >= 2
        and min(times[:-1]) > 0
        and times[-1] / min(times[:-1]) - 1 < RATE_DROP_PCT / 100
    )


def _said_to_grow(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown unless the words just before the verb (any of the pattern's verb
    groups) deny it, or the times it quotes rose less than RATE_DROP_PCT."""
    for group in ("verb", "verb2", "verb3", "verb4"):
        if m[group] is not None:
            before = m.string[max(0, m.start(group) - 40) : m.start(group)]
            return None if _DENIAL.search(before) or _barely(figures(m.string)) else SLOWED
    return None


# a figure against the job's own past or expectation: `takes 2 hours instead of 20 minutes`,
# `30 s per step while it used to take 3 s`, `expected 1 s/step but got 5 s/step`
def _fig(name: str) -> str:
    return (
        rf"(?P<{name}>\d+(?:\.\d+)?)\s*(?P<{name}_unit>{_RATE_UNIT}|{_UNIT})"
        r"(?:/(?:epoch|iter\w*|step|batch|it)\b)?"
    )


_ABOUT = r"(?:~|about\s+|around\s+)?"
_AGAINST = re.compile(
    _fig("now") + r"[^.\n]{0,40}?\b(?:instead\s+of|(?:while|but|when|whereas)\s+(?:it\s+)?used\s+to"
    r"(?:\s+(?:be|take))?|(?:than|from)\s+(?:the\s+)?(?:usual|normal|expected|before))\s+"
    + _ABOUT
    + _fig("then")
    + r"|\bexpect\w*\s+"
    + _ABOUT
    + _fig("then2")
    + r"[^.\n]{0,40}?\b(?:but|however)\b[^.\n]{0,30}?"
    + _fig("now2"),
    re.IGNORECASE,
)


def _against(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the figure now is SLOWDOWN_RATIO times the job's own earlier or
    expected time, or RATE_DROP_PCT below its rate (both figures of one kind)."""
    now, then = ("now", "then") if m["now"] is not None else ("now2", "then2")
    now_unit, then_unit = m[f"{now}_unit"].lower(), m[f"{then}_unit"].lower()
    timed = now_unit in _SECONDS
    if timed != (then_unit in _SECONDS):
        return None
    if timed:
        slower = _seconds(m[now], now_unit) >= SLOWDOWN_RATIO * _seconds(m[then], then_unit)
        return SLOWED if slower else None
    drop = 1 - float(m[now]) / float(m[then]) if float(m[then]) else 0.0
    return SLOWED if drop * 100 >= RATE_DROP_PCT else None


RULES: tuple[Rule, ...] = (
    rule(
        "slowdown.against_its_past",
        _AGAINST.pattern,
        ("instead of", "used to", "usual", "normal", "expected", "before", "expect"),
        "A step time (or rate) given against the job's own past or expectation (`2 hours "
        f"instead of 20 minutes`): {SLOWDOWN_RATIO:g}x the time, or {RATE_DROP_PCT:g} % below "
        "the rate, is a slowdown; the job waits for something that became slow.",
        judge=_against,
        flags=re.IGNORECASE,
    ),
    rule(
        "slowdown.rate_fell",
        r"\b(?:drops?|dropped|dropping|fell|falls?|falling|fallen|decreas\w+|declin\w+|degrad\w+"
        r"|(?:goes|went|gone|is|was)\s+down|down\s+to)\b",
        ("drop", "fell", "fall", "decreas", "declin", "degrad", "down"),
        "A rate (hash rate, samples or tokens per second, TFLOPS) said to fall, quoted before "
        f"and after, at least {RATE_DROP_PCT:g} % below its best: the device or the job became "
        "slow (thermal or power throttling, a degraded link, a software change); compare it "
        "with its peers.",
        judge=_rate_fell,
        flags=re.IGNORECASE,
    ),
    rule(
        "slowdown.step_time_rose",
        rf"(?:\d\s*|\b(?:an?|one)\s+){_UNIT}\b|\d\s*it/s\b",
        ("epoch", "iter", "step", "batch", "s/it", "it/s"),
        "The step (iteration, epoch) times quoted rise to at least "
        f"{SLOWDOWN_RATIO:g}x the first and stay there: a synchronous job that slowed down "
        "waits for a member or a resource that became slow (a fail-slow GPU, NIC or host, a "
        "throttled device, a data stall); compare the members' step times.",
        judge=_rose,
        flags=re.IGNORECASE,
    ),
    rule(
        "slowdown.time_said_to_grow",
        r"\b(?:training|train|iteration|iter|step|epoch|batch)[\s-]*(?:time|duration)s?\b"
        r"[^.\n]{0,40}?\b(?P<verb>increas\w*|grow\w*|goes\s+up|going\s+up|rises|rising|"
        r"keeps?\s+(?:increas|grow|ris)\w*|tak(?:es?|ing)\s+(?:\w+\s+)?(?:more\s+time|longer))"
        r"|\b(?:training|iteration|iter|step)\s+(?:speed|throughput)\b[^.\n]{0,30}?"
        r"\b(?P<verb2>slows?\s+down|slowing\s+down|drops?|dropping|decreas\w*|degrad\w*|"
        r"(?:gets?|getting|got|becomes?|became)\s+(?:\d+(?:\.\d+)?x\s+|much\s+)?slower)"
        r"|\b(?:epoch|iteration|iter|step|batch)s?\b[^.\n]{0,30}?\b(?P<verb4>(?:take|takes|taking|"
        r"took)\s+(?:\w+\s+)?longer)"
        r"|\btraining\s+(?P<verb3>slows?\s+down|slowing\s+down|(?:gets|becomes|getting|"
        r"became|got)\s+slower)",
        (
            *("increas", "grow", "goes up", "going up", "rises", "rising", "slow", "drop"),
            *("decreas", "more time", "longer"),
        ),
        "The step or training time said to grow (or the training speed to fall) as the job "
        "runs: a synchronous job that slows down waits for something that became slow; "
        "compare the members' step times and the node's health.",
        judge=_said_to_grow,
        flags=re.IGNORECASE,
    ),
)
