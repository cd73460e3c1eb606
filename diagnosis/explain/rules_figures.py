"""Speed figures compared in one sentence: a speed that changed, a member against its peers.

Short reports of a slowdown give two figures of one speed, in any language, and say how they
relate; these rules read the figures and the relation, not the phrasing around them:

- **a speed that changed** (``figures.speed_changed``): two or more figures of one speed in a
  sentence with a sign of change (``->``, ``from X to Y``, then, now, after, since, at launch;
  ``变成``, ``von X auf Y``, ``de X à Y``, ``da X a Y``, ``с X до Y``, ``xuống còn``,
  ``menjadi``, ``이후``, ...). A speed is a time per step, iteration, batch or epoch, or a rate
  (samples, tokens or images a second, steps a second, TFLOPS, a utilisation such as MFU).
  The last time ``SLOWDOWN_RATIO`` times the lowest before it, or the last rate
  ``RATE_DROP_PCT`` below the highest before it, is a slowdown that stayed. A number without a
  unit counts when the sentence named the speed just before it (``s/it ... 1.3 at start ->
  5.0``) or gave a figure of the same magnitude with a unit (``~5.1k tok/s before, ~2.4k
  after``).
- **a member against its peers** (``figures.member_behind_peers``): a named member (``GPU4``,
  ``rank 0``, ``node-c``, ``gpu-node-12``) given a figure and the others (``the other five``,
  ``the rest``, ``ranks 1-7``, ``its siblings``) another of the same kind, the member's
  ``PEER_GAP_PCT`` worse; or a member said to take N % longer, or give N % fewer, than its
  peers.
- **a rate halved, a time doubled, an ETA that keeps growing** in words (``tokens/s halves
  after resuming``, ``the training ETA kept getting later``).

Guarantees: a period is no step time (``over ~6 hours``, ``12h later``, ``for 30m``); counts,
steps, ids and model names are no figures (``step 41k``, ``a100-14``, ``256-gpu``); figures of
setups compared (``vs``, ``compared to``, batch sizes, GPU models, a target) are no change; a
sentence the speaker explains away (rules_slowdown.EXPLAINED: expected, by design, one slow
iteration every N steps) is silent; a time that falls or a rate that rises is never a slowdown;
a judge reads its line once however many matches ask (hostile lines stay linear).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from diagnosis.catalog import Verdict
from diagnosis.explain.peers import MIN_LINE_PEERS, slow_peer
from diagnosis.explain.quantities import rate
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_slowdown import (
    COMPARED,
    EXPLAINED,
    RATE_DROP_PCT,
    SLOWDOWN_RATIO,
    SLOWED,
)
from diagnosis.explain.rules_straggler import slow_member
from diagnosis.explain.rules_straggler_words import PEER_GAP_PCT
from diagnosis.model import ComponentKind as K

# seconds per time unit, in the languages the readers know (lower case)
_TIME_UNITS = {
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds", "毫秒"), 0.001),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds", "秒", "초", "giây", "detik"), 1.0),
    **dict.fromkeys(("saniye", "sekunden", "secondes", "segundos", "secondi", "секунд"), 1.0),
    **dict.fromkeys(("сек", "min", "mins", "minute", "minutes", "分钟", "分", "분", "phút"), 60.0),
    **dict.fromkeys(("menit", "dakika", "minuten", "minutos", "minuti", "минут", "мин"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "小时", "時間", "시간", "giờ"), 3600.0),
    **dict.fromkeys(("jam", "saat", "stunden", "heures", "horas", "ore", "час", "часа"), 3600.0),
}
_RATE_UNIT = (
    r"it/s|steps?/s(?:ec)?|(?:samples?|images?|imgs?|img|tokens?|toks?|seqs?|sequences)"
    r"(?:/s(?:ec)?|\s+per\s+sec(?:ond)?|_per_sec(?:ond)?)(?:/gpu)?|[GT]FLOP[sS]?(?:/s)?(?:/GPU)?"
    r"|[kKMG]?H/s|wps|tps"
)
_TIME_UNIT = "|".join(sorted((re.escape(u) for u in _TIME_UNITS), key=len, reverse=True))
# a figure with its unit: the time's may be per unit of work (`s/it`, `ms/step`, `s per step`)
_FIGURE = re.compile(
    r"(?<![\w.\-/])(?P<sign>[-+−])?[~≈]?(?P<num>\d+(?:\.\d+)?)(?P<k>\s?[kK](?![a-zA-Z]))?\s*"
    rf"(?:(?P<rate>{_RATE_UNIT})|(?P<pct>%)|(?P<time>{_TIME_UNIT})"
    r"(?:\s*(?:/|per\s+)(?:it\b|iter\w*|steps?|batch|epoch))?)"
    r"(?![a-zA-Zа-яё/])",
    re.IGNORECASE,
)
# a number without a unit (ids, versions and model names are words: `a100-14`, `llama3-8b`)
_BARE = re.compile(
    r"(?<![\w.\-/:=#])[~≈]?(?P<num>\d+(?:\.\d+)?)(?P<k>[kK](?![a-zA-Z]))?(?![\w.\-/:%])"
)
# what makes a number a count, a step, an id or a clock rather than a speed
_COUNTED_BEFORE = re.compile(
    r"(?:\b(?:steps?|iter\w*|epochs?|batch(?:es)?|rank|gpus?|nodes?|hosts?|workers?|cards?|at|"
    r"v|version|bs|seq(?:uence)?(?:\s+len\w*)?|tp|pp|dp|ep|of|top|last|first|every|around|"
    r"past|layers?)\s*[=:#]?\s*|[\[(#])$",
    re.IGNORECASE,
)
_COUNTED_AFTER = re.compile(
    r"^\s*(?:k\s*)?(?:steps?|iter\w*|epochs?|batch\w*|gpus?|nodes?|hosts?|ranks?|workers?|"
    r"cards?|am|pm|gb|g|mb|w|°c|mhz|ghz|layers?|x\b|times|st|nd|rd|th|of\b|identical|"
    r"步|卡|台|個|개|에폭|エポック|ステップ|번째)",
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
# numbers in a row of arrows: one speed over time (`1100 -> 950 -> 800 -> 700`)
_CHAIN = re.compile(
    r"[~≈]?\d+(?:\.\d+)?[kK]?(?:[^\d\n>→]{0,15}?(?:->|→|=>|⟶)\s*[~≈]?\d+(?:\.\d+)?[kK]?)+"
)
_RATE_METRIC = re.compile(
    r"(?:\bthroughput\b|\b(?:tokens?|toks?|samples?|images?|imgs?|img|seqs?)(?:/s\w*|_per_sec\w*)"
    r"(?:/gpu)?|\bit/s\b|\bsteps?(?:/s\w*|_per_second)|\b[GT]FLOP[sS]?(?:/\w+)*|\bMFU\b|\bHFU\b"
    r"|\btps\b|\bwps\b|速度|吞吐)[^\d\n]{0,80}$",
    re.IGNORECASE,
)
_UTILISATION = re.compile(r"\b(?:MFU|HFU|utili[sz]ation|util)\b|利用率|Auslastung", re.IGNORECASE)

# a sign that the figures are one speed over time
_CHANGED = re.compile(
    r"->|→|=>|⟶|\bfrom\s+[~≈]?\d[\d.,]*[^.\n]{0,30}?\bto\s+[~≈]?\d"
    r"|\b(?:then|now|after|afterwards|later|since|until|became|becomes|become|went|goes|gone|"
    r"drop\w*|fell|fall\w*|rose|rises|increas\w*|decreas\w*|grew|grows|climb\w*|creep\w*|"
    r"crept|jump\w*|halv\w*|doubl\w*|initially|overnight|staircase|stay\w*|stuck|"
    r"at\s+(?:the\s+)?(?:start|launch|first|beginning)|used\s+to|before|resum\w*)\b"
    r"|变成|变为|变到|降到|降至|降为|掉到|升到|涨到|之后|以后|后来|现在|一开始|开始时|最初"
    r"|から|その後|今は|最初は|以降|になり|になって|에서|이후|처음|지금은|나중에"
    r"|\bvon\s+[~≈]?\d[^.\n]{0,20}?\bauf\b|\b(?:jetzt|danach|anfangs|zuerst|nach|fällt|sinkt|steigt)\b"
    r"|\b(?:de|da|dès)\s+[~≈]?\d[^.\n]{0,25}?\b(?:à|a|para)\s+[~≈]?\d"
    r"|\b(?:puis|maintenant|après|passe|tombe|chute|luego|después|depois|ahora|agora|cae|cai|"
    r"poi|dopo|ora|adesso|scende|resta)\b"
    r"|(?<![\w])(?:с|от)\s+[~≈]?\d[^.\n]{0,25}?(?:до|на)\s+[~≈]?\d|(?<![\w])(?:потом|после|сейчас|"
    r"теперь|сначала|упал\w*|пада\w*)(?![\w])"
    r"|\b(?:từ|xuống|còn|sau|bây\s+giờ|ban\s+đầu|dari|menjadi|jadi|sekarang|awalnya|setelah|"
    r"turun|sonra|şimdi|başta|düş\w*)\b",
    re.IGNORECASE,
)
# figures not in the order the speed changed (`X instead of Y`, `to X from Y`: other rules read
# them), or of setups compared rather than one job over time (`vs`, GPU models, batch sizes)
_NOT_IN_ORDER = re.compile(
    r"\bvs\.?(?!\s+(?:before|earlier|yesterday|baseline))|\bversus\b|\bcompared\s+(?:to|with)\b"
    r"|\binstead\s+of\b|\brather\s+than\b|\bthan\b|\bto\s+[~≈]?\d[^.\n]{0,25}?\bfrom\s+[~≈]?\d"
    r"|\b(?:bs|batch[\s_-]*size|seq[\s_-]*len\w*|mbs|gbs)\s*[=:]?\s*\d+\b(?:[^.\n]|(?<=\d)\.(?=\d))*?"
    r"\b(?:bs|batch[\s_-]*size|seq[\s_-]*len\w*|mbs|gbs)\s*[=:]?\s*\d+\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Figure:
    """One figure of a speed in a sentence: where, its value (seconds, or a rate), its kind."""

    at: int
    value: float
    timed: bool


def _number(num: str, k: str | None) -> float:
    return float(num) * (1000.0 if k else 1.0)


def speed_figures(sentence: str) -> list[Figure]:
    """Return the figures of a speed a sentence gives, in order (module doc)."""
    text = re.sub(r"(\d)\s*±\s*\d+(?:\.\d+)?", r"\1", sentence)  # `1.01±0.02s`: the figure
    found: list[Figure] = []
    taken: list[tuple[int, int]] = []
    for m in _FIGURE.finditer(text):
        taken.append((m.start(), m.end()))
        if m["sign"]:
            continue  # a change (`-30%`), not a figure
        value = _number(m["num"], m["k"])
        if m["time"]:
            if _PERIOD_BEFORE.search(text[: m.start()]) or _PERIOD_AFTER.match(text[m.end() :]):
                continue
            found.append(Figure(m.start(), value * _TIME_UNITS[m["time"].lower()], True))
        elif m["rate"] or _UTILISATION.search(text):
            scaled = rate(m["num"], m["rate"]) if m["rate"] else float(m["num"])
            found.append(Figure(m.start(), scaled * (1000.0 if m["k"] else 1.0), False))
    chains = [(c.start(), c.end()) for c in _CHAIN.finditer(text)]
    for m in _BARE.finditer(text):
        if any(start <= m.start() < end for start, end in taken):
            continue
        in_chain = next((start for start, end in chains if start <= m.start() < end), None)
        reach = 80 if in_chain is not None else 25
        named = _named_speed(
            text[
                max(0, (m.start() if in_chain is None else in_chain) - reach) : m.start()
                if in_chain is None
                else in_chain
            ]
        )
        if named is None:
            before, after = text[max(0, m.start() - 40) : m.start()], text[m.end() :]
            if _COUNTED_BEFORE.search(before) or _COUNTED_AFTER.match(after):
                continue
        elif _COUNTED_AFTER.match(text[m.end() :]):
            continue
        figure = _bare_figure(m.start(), _number(m["num"], m["k"]), named, found)
        if figure is not None:
            found.append(figure)
    return sorted(found, key=lambda f: f.at)


def _named_speed(before: str) -> tuple[bool, float] | None:
    """The speed a metric just before a bare number names: (a time?, its unit in seconds)."""
    timed = _TIME_METRIC.search(before)
    if timed is not None:
        return True, 0.001 if timed["ms"] else 1.0
    return (False, 1.0) if _RATE_METRIC.search(before) else None


def _bare_figure(
    at: int, value: float, named: tuple[bool, float] | None, before: list[Figure]
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
    peers = [f.value for f in before if f.timed is timed]
    if not peers:
        return Figure(at, value * scale, timed) if named is not None else None
    for unit in (scale, 0.001, 60.0):  # a time named without its unit: the sentence's
        if any(0.1 * v <= value * unit <= 10 * v for v in peers):
            return Figure(at, value * unit, timed)
    return None


def _slowed(figures: list[Figure]) -> bool:
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


_SENTENCE = re.compile(
    r"(?<!\bca\.)(?<!\bvs\.)(?<!approx\.)(?<!\betc\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?;])\s+"
    r"|(?<=[。！？])|\n"
)


def _explained(sentence: str) -> bool:
    return EXPLAINED.search(sentence) is not None


# a figure now against a baseline named after it (`current 2210ms, baseline 1390ms`)
_BASELINE = re.compile(
    r"\bcurrent(?:ly)?\b[^\d\n]{0,10}(?P<now>[~≈]?\d[^,;()\n]{0,20}?)[,;]?\s*(?:vs\.?\s*)?"
    r"(?:the\s+)?(?:baseline|usual|normal|typical|expected)\b[^\d\n]{0,10}"
    r"(?P<then>[~≈]?\d[^,;()\n]{0,20})",
    re.IGNORECASE,
)


def _against_baseline(sentence: str) -> bool:
    """Whether the sentence gives the figure now worse than its baseline (order reversed)."""
    m = _BASELINE.search(sentence)
    if m is None:
        return False
    now, then = speed_figures(m["now"]), speed_figures(m["then"])
    return bool(now and then) and _slowed([then[0], now[0]])


def _changed(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when a sentence of the line gives a speed that changed for the worse
    (module doc), unless it compares setups or explains the change away."""
    line = m.string
    if _explained(line):
        return None
    for sentence in _SENTENCE.split(line):
        if _against_baseline(sentence):
            return SLOWED
        if not _CHANGED.search(sentence) or _NOT_IN_ORDER.search(sentence):
            continue
        if COMPARED.search(sentence):  # configurations, GPU models or a target compared
            continue
        if _slowed(speed_figures(sentence)):
            return SLOWED
    return None


# a named member: `GPU4`, `GPU 2`, `rank 0`, `r3`, `node-c`, `gpu-node-12`, `host a100-14`
_MEMBER = (
    r"(?P<kind>GPU|card|device|node|host|rank|worker)(?:[\s#-]*(?:\d+|[a-z])\b|"
    r"\s+[\w-]*\d[\w-]*)|(?P<kind2>node|host|gpu)-[\w-]+"
)
_PEERS = (
    r"(?:the\s+|all\s+(?:the\s+)?)?(?:other|remaining)\b[^.\n]{0,20}?|(?:the\s+)?others\b|"
    r"(?:the\s+)?rest\b|(?:its|their)\s+(?:identical\s+)?(?:peers|siblings)\b|everyone\s+else|"
    r"(?:ranks?|GPUs?|nodes?|hosts?|workers?|cards?)\s*\d+\s*(?:-|–|to|through)\s*\d+"
)
_SPAN = r"(?:[^.;\n]|(?<=\d)\.(?=\d))"  # within a sentence: a decimal point is no full stop
_MEMBER_FIGURES = re.compile(
    rf"\b(?:{_MEMBER})(?P<mine>{_SPAN}{{0,50}}?)(?:\b(?:while|whereas|but|and)\s+(?:for\s+)?"
    rf"(?:{_PEERS})(?P<theirs>{_SPAN}{{0,40}})|,\s*(?:{_PEERS})(?P<theirs2>{_SPAN}{{0,30}})"
    rf"|\b(?:vs\.?|versus|against|compared\s+(?:to|with))(?P<theirs3>{_SPAN}{{0,20}}?)"
    rf"\b(?:on|for|of|from|in)\s+(?:{_PEERS}))",
    re.IGNORECASE,
)
_MEMBER_PERCENT = re.compile(
    rf"\b(?:{_MEMBER}|one\s+(?:[\w-]+\s+){{0,3}}?(?P<kind3>GPU|card|device|node|host|rank|worker))"
    r"\b[^.\n]{0,60}?[~≈]?(?P<pct>\d+(?:\.\d+)?)\s*%\s+(?:longer|slower|more\s+time|fewer|less|"
    rf"lower)\b[^.\n]{{0,60}}?(?:\bthan\s+(?:{_PEERS})|\b(?:{_PEERS})[^.\n]{{0,40}}?\bwait)",
    re.IGNORECASE,
)
_KIND = {"gpu": K.GPU, "card": K.GPU, "device": K.GPU, "node": K.NODE, "host": K.NODE}


def _kind(m: re.Match[str]) -> K:
    named = m["kind"] or m["kind2"] or (m.groupdict().get("kind3"))
    return _KIND.get((named or "").lower(), K.JOB)


def _behind(mine: list[Figure], theirs: list[Figure]) -> bool:
    """Whether the member's figure is PEER_GAP_PCT worse than the peers' of the same kind."""
    if not mine:
        return False
    own = mine[-1]
    same = [f for f in theirs if f.timed is own.timed] or [
        Figure(f.at, f.value, own.timed) for f in theirs if not f.timed
    ]
    if not same or same[0].value <= 0:
        return False
    gap = (own.value / same[0].value - 1) if own.timed else (1 - own.value / same[0].value)
    return gap * 100 >= PEER_GAP_PCT


def _member_figures(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the member's figure is PEER_GAP_PCT worse than its peers'."""
    if _explained(m.string):
        return None
    mine = speed_figures(m["mine"])
    theirs_text = m["theirs"] or m["theirs2"] or m["theirs3"] or ""
    theirs = speed_figures(theirs_text)
    if mine and not theirs:  # `2.1 s/step vs 1.4 on the others`: the unit said once
        theirs = [
            Figure(0, float(n), mine[-1].timed)
            for n in re.findall(r"\d+(?:\.\d+)?", theirs_text)[:1]
        ]
    return slow_member(_kind(m)) if _behind(mine, theirs) else None


def _member_percent(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the member is said to be PEER_GAP_PCT or more behind its peers."""
    if float(m["pct"]) < PEER_GAP_PCT or _explained(m.string):
        return None
    return slow_member(_kind(m))


def _percent_changed(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when a rate fell, or a time rose, by RATE_DROP_PCT or more."""
    pct = float(m["fell"] or m["rose"])
    return _words(m) if pct >= RATE_DROP_PCT else None


# members' times listed on one line (`r0 212ms r1 209ms r2 214ms r3 355ms`)
_LISTED = re.compile(
    r"\b(?P<kind>r|rank|gpu|node|worker|host)\s*#?(?P<id>\d+)\s*[:=]?\s*(?P<num>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>ms|s|sec)\b",
    re.IGNORECASE,
)


def _listed(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one of the members' times listed on the line is far behind the
    others' (peers.slow_peer on their inverse)."""
    return slow_member(_KIND.get(m["kind"].lower(), K.JOB)) if _one_behind(m.string) else None


@lru_cache(maxsize=64)
def _one_behind(line: str) -> bool:
    """Whether one member of those the line lists is far behind (once a line: every match of
    the rule asks the same)."""
    pairs = [(p["id"], 1 / float(p["num"])) for p in _LISTED.finditer(line) if float(p["num"])]
    return slow_peer(pairs, MIN_LINE_PEERS + 1) is not None and not _explained(line)


def _words(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown unless the words before deny it or the line explains it away."""
    before = m.string[max(0, m.start() - 25) : m.start()]
    if re.search(r"\b(?:not|never|no|n't|didn't|doesn't|won't)\b", before + m[0], re.I):
        return None
    return None if _explained(m.string) else SLOWED


_CHANGE_WORDS = (
    "current|baseline|->|→|=>|⟶|from|then|now|after|since|went|goes|drop|fell|fall|"
    "increas|decreas|grew|grows|climb|creep|crept|halv|doubl|initially|overnight|"
    "stay|at launch|at start|at the start|at first|used to|before|resum|later|became|"
    "become|变|降|掉|之后|以后|后来|现在|开始|最初|から|その後|今は|以降|에서|이후|처음|지금|von|jetzt|danach|"
    "anfangs|nach|fällt|sinkt|de |da |puis|maintenant|après|passe|tombe|luego|"
    "después|depois|ahora|agora|poi|dopo|ora|adesso|scende|с |от |потом|после|сейчас|"
    "теперь|упал|пада|từ|xuống|còn|sau|dari|menjadi|sekarang|awalnya|setelah|sonra|"
    "şimdi|başta|düş"
)
_CHANGE_NEEDLES = tuple(_CHANGE_WORDS.split("|"))
"""The words and signs of change (`_CHANGED`) that gate the change reader."""


MEMBER_RULES: tuple[Rule, ...] = (
    rule(
        "figures.member_behind_peers",
        _MEMBER_FIGURES.pattern,
        (
            "other",
            "rest",
            "peers",
            "siblings",
            "everyone else",
            "vs",
            "versus",
            "against",
            "compared",
            "ranks",
            "gpus",
            "nodes",
            "hosts",
            "workers",
            "cards",
        ),
        f"A named member's speed given against its peers', {PEER_GAP_PCT:g} % worse (`GPU4 "
        "takes 1.7s/step while the other five take 1.1s/step`): in a synchronous job every "
        "other member waits for it at each step.",
        judge=_member_figures,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.member_percent_behind",
        _MEMBER_PERCENT.pattern,
        ("longer", "slower", "more time", "fewer", "less", "lower"),
        f"A member said to take at least {PEER_GAP_PCT:g} % longer (or give that much less) "
        "than its peers: the others wait for it at each step.",
        judge=_member_percent,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.members_listed",
        _LISTED.pattern,
        ("ms", "s", "sec"),
        "Members' times listed on one line, one far behind the others (`r0 212ms r1 209ms r3 "
        "355ms`): the others wait for it at each step.",
        judge=_listed,
        flags=re.IGNORECASE,
    ),
)
"""Members against their peers: before the step-time readers, which take a line that says
`step time 1.38s` as one healthy step."""

RULES: tuple[Rule, ...] = (
    rule(
        "figures.speed_changed",
        r".+",
        _CHANGE_NEEDLES,
        "A speed quoted as it changed (`11.2s/step to 14.9s/step`, `tokens/s/gpu 3900 -> "
        f"2700`): {SLOWDOWN_RATIO:g}x the time, or {RATE_DROP_PCT:g} % below the rate, and "
        "staying: the job waits for something that became slow.",
        judge=_changed,
    ),
    rule(
        "figures.percent_changed",
        r"\b(?:throughput|tps|wps|tokens?/s\w*|toks?/s\w*|samples?/s\w*|samples_per_sec\w*|img/s|"
        r"images/s|it/s|steps?/s\w*|steps_per_second|TFLOP\w*|MFU|HFU|speed)\b[^.\n\d]{0,20}?"
        r"\b(?:dropped|drops|fell|falls|decreased|went\s+down|down|declined|regressed)\s+(?:by\s+)?"
        r"(?:about\s+|~)?(?P<fell>\d+(?:\.\d+)?)\s*%"
        r"|\b(?:step|iteration|iter|epoch|batch)[\s_]*time\w*\b[^.\n\d]{0,20}?(?:\b(?:rose|rises|"
        r"increased|went\s+up|up|grew|regressed)\s+(?:by\s+)?(?:about\s+|~)?|\+)"
        r"(?P<rose>\d+(?:\.\d+)?)\s*%",
        ("%",),
        f"A rate said to have fallen, or a step time to have risen, by {RATE_DROP_PCT:g} % or "
        "more: the job became slower.",
        judge=_percent_changed,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.halved_in_words",
        r"\b(?:throughput|tokens?/s\w*|toks?/s\w*|samples?/s\w*|samples_per_sec\w*|img/s|"
        r"images/s|it/s|steps?/s\w*|steps_per_second|TFLOP\w*|MFU|speed)\b[^.\n]{0,20}?"
        r"\b(?:halves|halved|is\s+halved|dropped\s+by\s+half|(?:fell|dropped|went\s+down)\s+"
        r"(?:by\s+)?(?:half|in\s+half))\b"
        r"|\b(?:step|iteration|iter|epoch|batch)\s+time\b[^.\n]{0,20}?\b(?:doubled|tripled|"
        r"quadrupled)\b"
        r"|\bETA\b[^.\n]{0,30}?\b(?:keeps?|kept)\s+(?:growing|increasing|rising|going\s+up|"
        r"getting\s+(?:later|longer))",
        ("halv", "half", "doubled", "tripled", "quadrupled", "eta"),
        "A rate said to have halved, a step time to have doubled, or the run's ETA to keep "
        "growing: the job became slower and stays slower.",
        judge=_words,
        flags=re.IGNORECASE,
    ),
)
