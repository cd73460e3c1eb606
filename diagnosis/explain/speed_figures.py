"""The figures of a speed a sentence gives: times per step and rates of work, read as numbers.

``speed_figures(sentence)`` returns each figure with where it stands, its value (seconds, or a
rate scaled by its prefix) and its kind:

- a number with a unit of time (in the languages the readers know: ``1.2 s``, ``640ms``,
  ``20분``, ``2,4 s``) or of a rate (samples, tokens or images a second, it/s as a step time,
  TFLOPS, hash rates; MFU's percentage when the sentence names the model's FLOPs utilisation);
  thousands separators, decimal commas, k and M suffixes and ranges (``1.4-1.5k``) are read;
- a number without a unit when the speed is named just before it (``s/it ... 1.3 -> 5.0``, a
  row of arrows) or when a figure of the same magnitude in the sentence has one.

``slowed(figures)`` says whether the last figure of a kind is a slowdown against those before
it (``SLOWDOWN_RATIO`` for times, ``RATE_DROP_PCT`` for rates). ``STEP_CONTEXT`` and
``NOT_A_STEP`` tell whether a sentence's times can be a step's.

Guarantees: a period (``over ~6 hours``, ``12h later``) is no step time; counts, steps, ids,
versions, months and model names are no figures, nor is a number said of another quantity (a
loss, memory, a temperature); at most ``MAX_BARE`` numbers without a unit are read in a
sentence, each against the last few figures (a hostile line stays linear).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from diagnosis.explain.quantities import rate
from diagnosis.explain.rules_slowdown import RATE_DROP_PCT, SLOWDOWN_RATIO

# seconds per time unit, in the languages the readers know (lower case)
_TIME_UNITS = {
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds", "毫秒"), 0.001),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds", "秒", "초", "giây", "detik"), 1.0),
    **dict.fromkeys(("saniye", "sekunden", "secondes", "segundos", "secondi", "секунд"), 1.0),
    **dict.fromkeys(("сек", "min", "mins", "minute", "minutes", "分钟", "分", "분", "phút"), 60.0),
    **dict.fromkeys(("menit", "dakika", "minuten", "minutos", "minuti", "минут", "мин"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "小时", "時間", "시간", "giờ"), 3600.0),
    **dict.fromkeys(("jam", "saat", "stunden", "heures", "horas", "ore", "час", "часа"), 3600.0),
    **dict.fromkeys(("day", "days", "天", "日"), 86400.0),
    **dict.fromkeys(("с", "ث", "วินาที", "sekund", "seconden", "सेकंड"), 1.0),
    **dict.fromkeys(("นาที", "minut", "minuten"), 60.0),
    **dict.fromkeys(("ชั่วโมง", "godzin", "uur"), 3600.0),
}
_RATE_UNIT = (
    r"it/s|steps?/s(?:ec)?|(?:samples?|images?|imgs?|img|tokens?|toks?|seqs?|sequences|amostras"
    r"|muestras|échantillons|campioni)"
    r"(?:/s(?:ec)?|\s+per\s+sec(?:ond)?|_per_sec(?:ond)?)(?:/gpu)?|[GTP]FLOP[sS]?(?:/s)?(?:/GPU)?"
    r"|[kKMG]?H/s|[kKMG]h(?:/?s)?|wps|tps|ns/day|fps|frames?/s(?:ec)?|PPD"
)
_TIME_UNIT = "|".join(sorted((re.escape(u) for u in _TIME_UNITS), key=len, reverse=True))
# a number: thousands separated by commas (`5,200`), a decimal comma (`2,4`), a point
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?"
# a figure with its unit: the time's may be per unit of work (`s/it`, `ms/step`, `s per step`);
# a range (`1.4-1.5k`) is read as its middle
_FIGURE = re.compile(
    rf"(?<![A-Za-z0-9_.\-/])(?<!\d:)(?P<sign>[-+−])?[~≈]?(?:(?P<low>{NUM})\s*[-–]\s*)?(?P<num>{NUM})"
    r"(?P<k>\s?[kKM](?![a-zA-Z]))?\+?多?\s*"
    rf"(?:(?P<rate>{_RATE_UNIT})|(?P<pct>%)|(?P<time>{_TIME_UNIT})"
    r"(?:\s*(?:/|per\s+)(?:it\b|iter\w*|steps?|batch|epoch))?)"
    r"(?![a-zA-Zа-яё/])",
    re.IGNORECASE,
)
# a number without a unit (ids, versions and model names are words: `a100-14`, `llama3-8b`)
_BARE = re.compile(
    rf"(?<![A-Za-z0-9_.\-/:=#,])[~≈]?(?P<num>{NUM})(?P<k>[kKM](?![a-zA-Z]))?(?![\w\-/:%])(?!\.\d)"
)
_OTHER_QUANTITY = re.compile(
    r"\b(?:loss|lr|learning\s+rate|acc(?:uracy)?|grad\w*|norm|perplexity|ppl|reward|score|bleu|"
    r"memory|mem|temp\w*|power|clock\w*|fan|util\w*|timeout|interval)\b[^\d\n]{0,20}$",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
"""A clock time (`at 08:40`) between a speed's name and its figure is no figure of it."""
_MODEL_BEFORE = re.compile(r"\b(?:my|our|RTX|GTX|Tesla|Quadro|Radeon|RX)\s*$", re.IGNORECASE)
_MODEL_NUMBER = re.compile(
    r"\b(?:my|our|RTX|GTX|Tesla|Quadro|Radeon|RX)\s*\d{3,4}\w*", re.IGNORECASE
)
# what makes a number a count, a step, an id or a clock rather than a speed
_COUNTED_BEFORE = re.compile(
    r"(?:\b(?:steps?|iter\w*|epochs?|batch(?:es)?|rank|gpus?|nodes?|hosts?|workers?|cards?|at|"
    r"frames?|episodes?|shards?|targets?|"
    r"v|version|bs|seq(?:uence)?(?:\s+len\w*)?|tp|pp|dp|ep|of|top|last|first|every|"
    r"past|layers?|my|our|RTX|GTX|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|"
    r"oct\w*|nov\w*|dec\w*|(?:py)?torch|cuda|nccl|driver|python|transformers|deepspeed|megatron|jax|nemo|"
    r"release|rc)\s*(?:to\s+|from\s+)?[=:#]?\s*v?|[\[(#])$",
    re.IGNORECASE,
)
_WORD_TIME = re.compile(
    r"\b(?:takes?|took|taking)\s+(?:(?:more|less|longer)\s+th[ae]n\s+|over\s+|about\s+"
    r"|almost\s+|nearly\s+|around\s+|roughly\s+)?(?:an?|one)\s+(?P<time>hour|minute|day)\b",
    re.IGNORECASE,
)
"""A duration of one unit said in a word that the work takes (`now it takes more than an
hour`); a pause `of about a minute` or a rate `12 a minute` is none."""
_NTH_AT = re.compile(r"\b(?:\d(?:st|nd|rd|th)|second|third|fourth|fifth|last)\s+at\s*$", re.I)
"""`the 2nd at 275`: the figure of the n-th one, not a step it happened at."""
_COUNTED_AFTER = re.compile(
    r"^(?:st|nd|rd|th)\b"  # an ordinal (`1st`), glued to its number
    r"|^\s*(?:k\s*)?(?:steps?|iter\w*|epochs?|batch\w*|gpus?|nodes?|hosts?|ranks?|workers?|pods?"
    r"|cards?|am|pm|gb|g|mb|w|°c|mhz|ghz|layers?|x|times|of|identical|images?|samples?|files?"
    r"|examples?|sequences?|atoms?|frames?(?!\s*/))(?![A-Za-z])"
    r"|^\s*(?:步|卡|台|個|개|에폭|エポック|ステップ|번째)",
    re.IGNORECASE,
)
# a time that is a period, not a step's: `over ~6 hours`, `after an hour`, `12h later`
_PERIOD_BEFORE = re.compile(
    r"\b(?:over|after|for|within|since|during|last|past|every|sustained\s+for|consecutive)\s+"
    r"(?:the\s+)?(?:~|≈|about\s+)?$",
    re.IGNORECASE,
)
_PERIOD_AFTER = re.compile(r"^\s*(?:later|ago|in|into|of\s+training|after|before)\b", re.I)
# the speed named before a bare number (its unit, where it gives one: `step_time_ms`, `(ms)`)
_TIME_METRIC = re.compile(
    r"(?:\b(?:step|iter(?:ation)?|batch|epoch)[\s_-]*tim\w*?(?:_(?P<ms>ms))?\b|\btime\s+per\s+\w+"
    r"|\b(?:s|sec)/(?:it|step|iter)\b|\bms/(?:it|step|iter)\b|['\"]time['\"]|\btiming\b)"
    r"[^\d\n]{0,80}$",
    re.IGNORECASE,
)
# numbers in a row of arrows: one speed over time (`1100 -> 950 -> 800 -> 700`); a row starts
# where its first number does (a run of digits is scanned once)
_ARROW = re.compile(r"->|→|=>|⟶")
_CHAIN = re.compile(
    rf"(?<![\d.,])[~≈]?(?:{NUM})[kKM]?(?:[^\d\n>→]{{0,15}}?(?:->|→|=>|⟶)\s*[~≈]?(?:{NUM})[kKM]?)+"
)
_RATE_METRIC = re.compile(
    r"(?:\bthroughput\b|\b(?:tokens?|toks?|samples?|images?|imgs?|img|seqs?)(?:/s\w*|_per_sec\w*)"
    r"(?:/gpu)?|\bit/s\b|\bsteps?(?:/s\w*|_per_second)|\b[GT]FLOP[sS]?(?:/\w+)*|\bMFU\b|\bHFU\b"
    r"|\btps\b|\bwps\b|\bns/day\b|\bfps\b|\bPPD\b|速度|吞吐)[^\d\n]{0,80}$",
    re.IGNORECASE,
)
_UTILISATION = re.compile(r"\b(?:MFU|HFU|model\s+flops\s+utili[sz]ation)\b", re.IGNORECASE)
"""A percentage is a speed only as the model's FLOPs utilisation (a GPU's or memory's
utilisation that falls is a job that ended or a setting, not a slowdown)."""


@dataclass(frozen=True)
class Figure:
    """One figure of a speed in a sentence: where, its value (seconds, or a rate), its kind."""

    at: int
    value: float
    timed: bool


_SUFFIX = {"k": 1e3, "m": 1e6}
_MIN_SEC = re.compile(r"(?<![\w.])(\d{1,3})m(\d{1,2})s\b")


def number(num: str, k: str | None = None) -> float:
    """A number as written: `5,200` (thousands), `2,4` (a decimal comma), `381k`, `1.02M`."""
    if "," in num:
        num = num.replace(",", "" if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", num) else ".")
    return float(num) * _SUFFIX.get((k or "").strip().lower(), 1.0)


@lru_cache(maxsize=512)
def speed_figures(sentence: str) -> tuple[Figure, ...]:
    """Return the figures of a speed a sentence gives, in order (module doc); once a text (the
    readers ask of a line and of its sentences more than once)."""
    text = re.sub(r"(\d)\s*±\s*\d+(?:\.\d+)?", r"\1", sentence)  # `1.01±0.02s`: the figure
    # `3m12s` is 192 s (the same length, so that the figures stay where they were)
    text = _MIN_SEC.sub(lambda m: f"{int(m[1]) * 60 + int(m[2])}s".rjust(len(m[0])), text)
    found: list[Figure] = []
    taken: list[tuple[int, int]] = []
    for m in _FIGURE.finditer(text):
        taken.append((m.start(), m.end()))
        if m["sign"]:
            continue  # a change (`-30%`), not a figure
        value = number(m["num"], m["k"])
        if m["low"] is not None:
            value = (value + number(m["low"], m["k"])) / 2
        if m["time"]:
            before = text[max(0, m.start() - 30) : m.start()]
            if _PERIOD_BEFORE.search(before) or _PERIOD_AFTER.match(text[m.end() : m.end() + 30]):
                continue
            found.append(Figure(m.start(), value * _TIME_UNITS[m["time"].lower()], True))
        elif m["rate"] and re.match(r"(?:it|steps?)/s", m["rate"], re.IGNORECASE):
            if value > 0:  # a rate of steps is a step time: tqdm switches it/s to s/it
                found.append(Figure(m.start(), 1 / value, True))
        elif m["rate"] or _UTILISATION.search(text):
            found.append(
                Figure(m.start(), value * (rate("1", m["rate"]) if m["rate"] else 1), False)
            )
    for m in _WORD_TIME.finditer(text):
        if not (
            _PERIOD_BEFORE.search(text[max(0, m.start() - 30) : m.start()])
            or _PERIOD_AFTER.match(text[m.end() : m.end() + 30])
        ):
            found.append(Figure(m.start(), _TIME_UNITS[m["time"].lower()], True))
    chains = [(c.start(), c.end()) for c in _CHAIN.finditer(text)] if _ARROW.search(text) else []
    prefixed = PREFIXED_RATE.search(text) is not None
    for n, m in enumerate(_BARE.finditer(text)):
        if n >= MAX_BARE:
            break
        if any(start <= m.start() < end for start, end in taken):
            continue
        in_chain = next((start for start, end in chains if start <= m.start() < end), None)
        reach = 80 if in_chain is not None else 40
        named = _named_speed(
            text[
                max(0, (m.start() if in_chain is None else in_chain) - reach) : m.start()
                if in_chain is None
                else in_chain
            ]
        )
        if _OTHER_QUANTITY.search(text[max(0, m.start() - 25) : m.start()]):
            continue  # `loss went from 1.9 to 2.8`: another quantity's figure
        if _MODEL_BEFORE.search(text, max(0, m.start() - 12), m.start()):
            continue  # `on my 3080`: a GPU model, not a figure
        if named is None:
            before, after = text[max(0, m.start() - 40) : m.start()], text[m.end() :]
            if (
                _COUNTED_BEFORE.search(before) and not _NTH_AT.search(before)
            ) or _COUNTED_AFTER.match(after):
                continue
        elif _COUNTED_AFTER.match(text[m.end() :]):
            continue
        figure = _bare_figure(m.start(), number(m["num"], m["k"]), named, found, prefixed)
        if figure is not None:
            found.append(figure)
    return tuple(sorted(found, key=lambda f: f.at))


MAX_BARE = 64
"""Numbers without a unit read in one sentence (a speed report quotes a few)."""


def _named_speed(before: str) -> tuple[bool, float] | None:
    """The speed a metric just before a bare number names: (a time?, its unit in seconds); a GPU
    model between them is no figure (`PPD on my 3080 dropped from ~4M`)."""
    before = _CLOCK.sub("clock", _MODEL_NUMBER.sub("model", before))
    timed = _TIME_METRIC.search(before)
    if timed is not None:
        return True, 0.001 if timed["ms"] else 1.0
    return (False, 1.0) if _RATE_METRIC.search(before) else None


RATE_PREFIXES = (1e3, 1e6, 1e9, 1e12, 1e15)
PREFIXED_RATE = re.compile(r"\d\s*(?:[kKMG]H/s|[kKMG]h(?:/?s)?\b|[GTP]FLOP)", re.IGNORECASE)
"""A rate with a metric prefix (`48 MH/s`, `250 TFLOPS`): a bare number beside it may carry the
same prefix unsaid (`from 62 to 48 MH/s`)."""


def _bare_figure(
    at: int,
    value: float,
    named: tuple[bool, float] | None,
    before: list[Figure],
    prefixed: bool = False,
) -> Figure | None:
    """A bare number as a figure: of the speed named just before it (its unit, when the
    metric gives none, that of the sentence's own figures of the kind if it fits their
    magnitude), else of the sentence's one kind of figure when it is of the same magnitude (a
    tenth to ten times)."""
    kinds = {f.timed for f in before}
    timed, scale = (
        named if named is not None else (next(iter(kinds)), 1.0) if len(kinds) == 1 else (None, 1.0)
    )
    if timed is None:
        return None
    peers = [f.value for f in before[-8:] if f.timed is timed]
    if not peers:
        return Figure(at, value * scale, timed) if named is not None else None
    # a time named without its unit, or a rate without its prefix (`from 62 to 48 MH/s`)
    if timed:
        units: tuple[float, ...] = (scale, 0.001, 60.0, 3600.0)
    else:
        units = (scale, *RATE_PREFIXES) if prefixed else (scale,)
    for unit in units:
        if any(0.1 * v <= value * unit <= 10 * v for v in peers):
            return Figure(at, value * unit, timed)
    return None


STEP_CONTEXT = re.compile(
    r"\b(?:epoch|iter(?:ation)?|step|batch)s?\b|(?:s|sec|ms)/(?:it|step|iter)|(?<![a-z])it/s\b|\bETA\b|"
    r"\btrain\w*\s+time\b|step_time|iter_time|\b(?:fwd|bwd|forward|backward)\b|"
    r"\bend[- ]to[- ]end\b|\belapsed\b|\bwall[- ]?(?:clock|time)\b|\brun\s*time\b|"
    r"步|迭代|训练|请求耗时|推理耗时|イテレーション|ステップ|エポック|에폭|스텝|Schritt\w*|[ée]poca|époque|epoca|шаг\w*|"
    r"эпох\w*|langkah|adım|bước|الخطوة|ขั้น|krok\w*|stap|\btime-?steps?\b|\bper\s+(?:frame|target|image"
    r"|sample|timestep|shard|file|bucket|episode)\b"
    # one inference or generation's time (`10-15 minutes an inference`)
    r"|\b(?:per|an?|each|every)\s+(?:inference|generation|render)\b"
    # the same work said to take longer (`same mesh`, `nothing changed`): its duration is a speed
    r"|\bsame\s+(?:job|targets?|input|data(?:set)?|config\w*|commit|work|mesh|scene|model|run"
    r"|settings|code)\b|\b(?:nothing|no\s+setting)\s+(?:changed|else\s+changed)\b"
    r"|\b(?:changed|upgraded)\s+nothing\b",
    re.IGNORECASE,
)
NOT_A_STEP = re.compile(
    r"\b(?:timeout|interval|start-?up|boot\w*|compil\w*|ckpt|checkpoint\w*|sav(?:e|ing)|load\w*|"
    r"download\w*|ping|rtt|queue\w*|pending|wait\s+time|RMA|delivery|shipping|parts?)\b"
    # a total estimated from a step's time (`8k * 0.9 sec = 1.8 hours`)
    r"|[*×]\s*~?\d+(?:\.\d+)?\s*(?:s|secs?|seconds?|ms|min(?:utes?)?)\s*=",
    re.IGNORECASE,
)
"""Times that are no step's: a timeout, an interval, a start-up, a save, a ping, a total
estimated as steps times a step's time."""


def step_figures(text: str) -> tuple[Figure, ...]:
    """The figures of `text` that can be a step's speed: its times only when it names a step
    and no timeout, interval, start-up, save or ping (``STEP_CONTEXT``, ``NOT_A_STEP``)."""
    figures = speed_figures(text)
    if STEP_CONTEXT.search(text) and not NOT_A_STEP.search(text):
        return figures
    return tuple(f for f in figures if not f.timed)


def slowed(figures: Sequence[Figure]) -> bool:
    """Whether the last figure of the most given kind is a slowdown against those before it."""
    for timed in (True, False):
        values = [f.value for f in figures if f.timed is timed]
        if len(values) < 2 or min(values[:-1]) <= 0:
            continue
        if timed and values[-1] >= SLOWDOWN_RATIO * min(values[:-1]):
            return True
        if not timed and values[-1] <= (1 - RATE_DROP_PCT / 100) * max(values[:-1]):
            return True
    return False
