"""Durations and rates quoted in a line, read as numbers: what the slowdown rules compare.

- ``figures(line)``: every duration in seconds, in the order written: a number with a unit
  (``30 s``, ``8 hours/epoch``, ``700 ms``, ``half an hour``, ``eight hours``), a range as its
  middle (``3-4s``), both ends of ``from X to Y s``,
  a clock duration (``1:20 min``, ``2:05 h``, ``1:10:00 h``), and a step rate as its inverse
  (``12it/s``, ``5 iteration per seconds``: 1/12 s, 1/5 s).
- ``quoted_rates(line)``: every rate (hash rates, samples, images or tokens per second, FLOPS,
  bytes per second), scaled by its prefix (``950 kH/s`` < ``1.2 MH/s``), a range as its middle
  (``32-33 MH/s``), in the order the quantity changed: ``to X from Y`` reads Y then X, and
  ``the Sol/s rate drops from 26 to 20`` reads the bare figures after a rate that falls.
- ``value(amount, unit)``: one figure of either kind as a number (seconds, or a scaled rate),
  with whether it is a duration.

Guarantees: a unit must end its word (``2 hosts`` is no duration, ``64 samples`` no rate); a
time of day (``at 12:30``) has no unit and is no duration; a learning, dropout, error or loss
rate is never a rate of work.
"""

from __future__ import annotations

import re

SECONDS = {"ms": 0.001, "msec": 0.001, "msecs": 0.001, "millisecond": 0.001}
SECONDS |= {"milliseconds": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0}
SECONDS |= {"seconds": 1.0, "s/it": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0}
SECONDS |= {"minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0}
SECONDS |= {"hours": 3600.0}
SECONDS |= {"秒": 1.0, "초": 1.0, "分钟": 60.0, "分鐘": 60.0, "분": 60.0}
SECONDS |= {"小时": 3600.0, "小時": 3600.0, "時間": 3600.0, "시간": 3600.0}
"""Seconds per duration unit (lower case; ``sec/it`` is read as ``s/it``; in Chinese, Japanese
and Korean too, though not a bare `分`, which is also a score's point)."""
UNIT = (
    r"(?:ms|msecs?|milliseconds?|s/it|sec/it|secs?|seconds?|s|mins?|minutes?|h|hrs?|hours?"
    r"|秒|초|分钟|分鐘|분|小时|小時|時間|시간)"
)
RATE_UNIT = (
    r"(?:[kMGTP]?H/s|MHs?|Sol/s|sols?|(?:samples|images|imgs?|tokens|toks?|tks|sequences|seqs)"
    r"/s(?:ec(?:ond)?)?|(?:samples|images|tokens)\s+(?:per|a)\s+sec(?:ond)?|[GT]FLOPS|TFLOP/s"
    r"|[kKMGT]?B/s|[MG]bps)"
)
RATE_HINTS = ("/s", "mhs", "sol", "flops", "bps", " per sec", " a sec")
"""What every unit of RATE_UNIT holds (lower case): a line without one holds no rate figure
(a cheap gate before the search)."""
_PREFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_WORD_AMOUNT = {"a": 1.0, "an": 1.0, "one": 1.0, "half an": 0.5, "half a": 0.5}
_NUMBERS = {"two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0, "six": 6.0, "seven": 7.0}
_NUMBERS |= {"eight": 8.0, "nine": 9.0, "ten": 10.0, "eleven": 11.0, "twelve": 12.0}
_NUMBERS |= {"fifteen": 15.0, "twenty": 20.0, "thirty": 30.0, "forty": 40.0, "fifty": 50.0}
_WORD_AMOUNT |= _NUMBERS
_CJK = "\u3000-\u9fff\uac00-\ud7af\uff00-\uffef"
"""Chinese, Japanese and Korean characters (and full-width forms): no spaces around a figure."""
# a figure, optionally per unit of work (`8 hours/epoch`, `30 s per iteration`); a CJK character
# next to it bounds it as a space would (`耗时450s左右`)
_FIGURE = re.compile(
    rf"(?:\b|(?<=[{_CJK}]))(?:from\s+(?P<start>\d+(?:\.\d+)?)\s*(?P<start_unit>{UNIT})?\s+to\s+)?"
    r"(?:(?P<low>\d+(?:\.\d+)?)\s*[-–]\s*(?=\d))?"  # a range (`3-4s`): read as its middle
    rf"(?:(?P<value>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)\+?\s*(?:(?:more|extra)\s+)?"
    rf"|(?P<words>half\s+an?|an?|one|{'|'.join(_NUMBERS)})\s+)"
    rf"(?P<unit>{UNIT})"
    rf"(?:/(?:epoch|iter\w*|step|batch|it)\b)?(?![^\W{_CJK}]|/)",
    re.IGNORECASE,
)
# a duration on a clock: minutes:seconds or hours:minutes with a unit, hours:minutes:seconds
_CLOCK = re.compile(
    r"(?<![\d:])(?P<major>\d{1,3}):(?P<minor>[0-5]\d)(?::(?P<sec>[0-5]\d))?\s*"
    r"(?P<unit>mins?|minutes?|h|hrs?|hours?)\b",
    re.IGNORECASE,
)
# a rate of steps (`~12it/s`, `5 iteration per seconds`): its inverse is a step time
_STEP_RATE = re.compile(
    r"(?<![\d.])(?P<value>\d+(?:\.\d+)?)\s*(?:it/s\b|(?:it|iters?|iterations?|steps?)\s*(?:/|per)\s*"
    r"sec(?:ond)?s?\b)",
    re.IGNORECASE,
)
_AMOUNT = r"(?<![\d,.])(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:[.,]\d+)?"
"""A rate's figure: thousands separated by commas (`4,980`), a decimal point or comma."""
_RATE_FIGURE = re.compile(
    rf"(?P<value>{_AMOUNT})(?:\s*(?:-|–)\s*(?P<high>{_AMOUNT}))?\s*(?P<unit>{RATE_UNIT})"
    r"(?![\w/])",
    re.IGNORECASE,
)
_FALLS = r"(?:drops?|dropped|fell|falls|fallen|decreas\w*|declin\w*|(?:goes|went)\s+down)"
ABOUT = r"(?:~\s*|(?:about|around|approx\.?|approximately|roughly|cca\.?|ca\.|circa)\s+)?"
"""A figure said to be about so much (`from cca 78 to 40`, `~3 s`): an optional pattern."""
# `the Sol/s rate drops from 26 to 20`, `my Sols/s drop from cca 78 to 40`: a rate of work
# named once (a word or its unit), then its bare figures
_RATE_FROM_TO = re.compile(
    r"(?<!learning )(?<!dropout )(?<!error )(?<!loss )(?<!lr )"
    r"(?:\b(?:hash\s*rate|rate|throughput|speed|\w+\s+per\s+second|\w+_per_sec(?:ond)?)"
    r"|(?<![\w/])(?:[kMG]?H|Sols?|it|toks?|tokens|samples|images|img)/s(?:ec)?)\s+"
    rf"(?:\w+\s+){{0,2}}?(?:{_FALLS}|went|goes)\s+from\s+{ABOUT}(?P<a>{_AMOUNT})\s+to\s+"
    rf"{ABOUT}(?P<b>{_AMOUNT})\b",
    re.IGNORECASE,
)
# `at 150 H/s ... then drops down to about 15-20`: the bare figure a rate fell to, in the
# unit of the rate quoted before it
_FELL_TO_BARE = re.compile(
    rf"(?:\b{_FALLS}\s+(?:down\s+)?|\bdown\s+)to\s+(?:about\s+|around\s+|roughly\s+|~)?"
    r"(?P<value>\d+(?:\.\d+)?)(?:\s*(?:-|–)\s*(?P<high>\d+(?:\.\d+)?))?(?!\.\d|[\d,–-]|\s*[%\w/])",
    re.IGNORECASE,
)
OTHER_QUANTITIES = r"loss|lr|learning|accuracy|acc|reward|perplexity|ppl|error|temperature|memory"
"""Words of quantities that fall or rise beside a speed without being one (a regex
alternation, lower case): a rate quoted, then `the loss drops to 0.5`."""
_ANOTHER_QUANTITY = re.compile(
    rf"\b(?:{OTHER_QUANTITIES}|temp|usage|utili[sz]ation|power|price|cost|latency|percent"
    r"|batch|size|workers|gpus|nodes|replicas?|instances?|pods?|scal\w*)\b",
    re.IGNORECASE,
)
"""What else falls after a rate is quoted (`at 3000 samples/s the loss drops to 0.5`)."""
# `recovered to 2000 samples/s from 300 samples/s`: the later figure first
_TO_FROM = re.compile(
    rf"\bto\s+~?(?P<b>{_AMOUNT})\s*(?P<b_unit>{RATE_UNIT})\s+from\s+~?"
    rf"(?P<a>{_AMOUNT})\s*(?P<a_unit>{RATE_UNIT})(?![\w/])",
    re.IGNORECASE,
)


def seconds(amount: str, unit: str) -> float:
    """Return a duration in seconds (`unit` one of ``SECONDS``, any case)."""
    return amount_of(amount) * SECONDS[unit.lower().replace("sec/it", "s/it")]


_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def amount_of(text: str) -> float:
    """Return a figure's number: commas between thousands dropped (`4,980`), else a comma is
    the decimal mark (`4,98`)."""
    if _THOUSANDS.fullmatch(text):
        return float(text.replace(",", ""))
    return float(text.replace(",", "."))


def rate(amount: str, unit: str) -> float:
    """Return a rate scaled by its prefix (``950 kH/s`` is 950,000; ``1.2 MH/s`` 1,200,000)."""
    scale = (
        _PREFIX.get(unit[:1].lower(), 1.0)
        if re.match(r"[kMGTP](?:H|B|b|FLOP)", unit, re.I)
        else 1.0
    )
    return amount_of(amount) * scale


def value(amount: str, unit: str) -> tuple[float, bool]:
    """Return a figure as a number (seconds, or a scaled rate) and whether it is a duration."""
    if unit.lower().replace("sec/it", "s/it") in SECONDS:
        return seconds(amount, unit), True
    return rate(amount, unit), False


# what follows `a second` when it is a duration (`a second per step`, `a second later`)
_ORDINAL = re.compile(
    r"\s+(?!(?:per|each|to|for|and|or|later|ago|of|on|in|at|every|longer|slower|faster|more|less"
    r"|before|after|behind|or\s+two)\b)[A-Za-z]"
)


def figures(line: str) -> list[float]:
    """Return the durations of a line in seconds, in order (module doc)."""
    found: list[tuple[int, float]] = [
        (m.start(), 1.0 / float(m["value"])) for m in _STEP_RATE.finditer(line) if float(m["value"])
    ]
    clocks = list(_CLOCK.finditer(line))
    for m in clocks:
        major, minor = float(m["major"]), float(m["minor"])
        if m["sec"] is not None:  # h:mm:ss whatever the unit says
            found.append((m.start(), major * 3600 + minor * 60 + float(m["sec"])))
        elif m["unit"].lower().startswith("m"):
            found.append((m.start(), major * 60 + minor))
        else:
            found.append((m.start(), major * 3600 + minor * 60))
    for m in _FIGURE.finditer(line):
        if any(c.start() <= m.start("unit") < c.end() for c in clocks):
            continue  # the minutes of `1:20 min`, read above
        if m["words"] is not None and m["unit"].lower() in ("s", "h", "hr", "hrs", "min", "mins"):
            continue  # `a s`, `an h`: not an amount in words
        if (
            m["words"] is not None
            and _ORDINAL.match(line, m.end())
            and m["unit"].lower() == "second"
        ):
            continue  # `a second GPU`: the ordinal, not a duration
        if m["start"] is not None:
            found.append((m.start(), seconds(m["start"], m["start_unit"] or m["unit"])))
        amount = (m["value"] or "").replace(",", "") or str(
            _WORD_AMOUNT[" ".join(m["words"].lower().split())]
        )
        if m["low"] is not None:
            amount = str((float(m["low"]) + float(amount)) / 2)
        found.append((m.start("unit"), seconds(amount, m["unit"])))
    return [duration for _, duration in sorted(found)]


def quoted_rates(line: str) -> list[float]:
    """Return the rates of a line, in the order the quantity changed (module doc)."""
    found: list[tuple[int, float]] = []
    reversed_spans = []
    for m in _TO_FROM.finditer(line):
        reversed_spans.append((m.start(), m.end()))
        found += [
            (m.start(), rate(m["a"], m["a_unit"])),
            (m.start() + 1, rate(m["b"], m["b_unit"])),
        ]
    for m in _RATE_FIGURE.finditer(line):
        if any(start <= m.start() < end for start, end in reversed_spans):
            continue
        middle = (amount_of(m["value"]) + amount_of(m["high"] or m["value"])) / 2
        found.append((m.start(), rate(str(middle), m["unit"])))
    for m in _RATE_FROM_TO.finditer(line):
        found += [(m.start("a"), amount_of(m["a"])), (m.start("b"), amount_of(m["b"]))]
    for m in _FELL_TO_BARE.finditer(line):
        quoted = list(_RATE_FIGURE.finditer(line, 0, m.start()))
        if quoted and not _ANOTHER_QUANTITY.search(line, quoted[-1].end(), m.start()):
            middle = (float(m["value"]) + float(m["high"] or m["value"])) / 2
            found.append((m.start("value"), rate(str(middle), quoted[-1]["unit"])))
    return [figure for _, figure in sorted(found)]
