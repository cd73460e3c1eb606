"""A job that slows down and stays slow, told in words: step, iteration or epoch times that rise.

A synchronous job whose step time rises and stays up is waiting for something that became slow
(a fail-slow GPU, NIC or host, a throttled device, a data stall); the corpus labels it
`straggler` (tests/fixtures/explain/corpus/README.md). The rules read people's reports:

- the times they quote for a step, iteration, epoch or batch as it changed (``each iter was
  taking 6 seconds ... now upwards of 30 seconds per iteration``, ``it/s goes up from 10 to
  250 s/it``): the last figure at least ``SLOWDOWN_RATIO`` times the lowest before it is a
  slowdown that stayed;
- the step or training time said to increase, grow or go up, or the training (iteration) speed
  said to slow down, drop or degrade (unless the times it quotes rose less than
  ``RATE_DROP_PCT``);
- a rate said to fall whose figures, before and after, fall ``RATE_DROP_PCT`` or more
  (``slowdown.rate_fell``: ``dropped to 32-33 MH/s`` after ``41 MH/s``);
- a step time or rate given against the job's own past or expectation
  (``slowdown.against_its_past``: ``2 hours instead of 20 minutes``, ``while it used to take
  3 s``, ``expected about 1 s/step but I get 5``).

Figures are read by diagnosis/explain/quantities.py (units, prefixes, clocks, the order a
quantity changed in). A slowdown the text explains away (``EXPLAINED``: said to be expected or
normal, or caused by the speaker's own change) is silent.

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
from functools import lru_cache

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import explains
from diagnosis.explain.quantities import (
    ABOUT,
    RATE_UNIT,
    UNIT,
    figures,
    quoted_rates,
    value,
)
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

SLOWDOWN_RATIO = 1.2
"""A step time quoted this many times its lowest earlier figure, at the end, is a slowdown that
stayed."""
RATE_DROP_PCT = 10.0
"""A rate (hash rate, samples/s, TFLOPS) said to fall this many percent below its highest earlier
figure is a slowdown."""

SLOWED = verdict(C.STRAGGLER, B.UNKNOWN, K.JOB, S.WARNING, A.MONITOR, 0.35)

_STEP_WORD = re.compile(
    r"(?<![A-Za-z])(?:epoch|iter(?:ation)?|step|batch)s?(?![A-Za-z])|\b(?:s|sec)/it\b|\bit/s\b"
    # in Chinese, Japanese and Korean: a step, an epoch, one inference or request, per image
    r"|步|迭代|单次推理|每次推理|推理耗时|请求耗时|ステップ|エポック|イテレーション|에폭|스텝|이미지당"
    # a time per item of the job's work (`5 seconds per picture`)
    r"|\b(?:per|each|every)\s+(?:image|picture|frame|sample|render|generation|episode|sequence)\b"
    # a service's time for one request (`5 mins for a request`)
    r"|\b(?:for|per|each)\s+(?:a\s+|one\s+|each\s+)?(?:request|response|prompt|query)\b",
    re.IGNORECASE,
)
# the figures are one quantity over time: a change is said (a profile's phases are not)
CHANGE = re.compile(
    r"\b(?:then|now|after|later|subsequent\w*|became|become|becomes|goes\s+up|went\s+up|rose|"
    r"rises|increas\w*|grew|grows|jump\w*|climb\w*|until|however|drops?|dropped|falls?|fell|"
    r"decreas\w*|initially|at\s+first|(?:at|from|in)\s+the\s+beginning|used\s+to"
    r"|since(?!\s+(?:version|release|v?\d)))\b"
    # a later figure said to be reached already (`For 15 step it is already 20-30s`)
    r"|\balready\s+(?:up\s+to\s+)?~?\d[\d.]*(?:\s*-\s*\d[\d.]*)?\s*(?:s|secs?|seconds?|ms|min\w*|h|hrs?"
    r"|hours?|s/it)\b(?!\s+(?:in|into|ago|of|left)\b)"
    # figure to figure (`0.9s -> 2.7s`; not a label's arrow: `bs32 -> 0.8 s/it`)
    r"|\bfrom\s+~?\d[\d.,]*[^.\n]{0,20}?\bto\s+~?\d|(?<![\w.])\d+(?:\.\d+)?(?:\s*[a-z/]+)?\s*(?:->|→|=>)\s*~?\d"
    # in Chinese: the first N (epochs), by the N-th, later, now (`前6个 ... 到第7个epoch的时候`)
    r"|前\s*\d+\s*个|到第\s*\d+\s*个|之后|以后|后来|现在|一开始|最初|刚启动|刚开始"
    # in Japanese and Korean: at first, now, after, hours later
    r"|その後|今は|時間後|後には|처음|지금|이후|나중에|시간\s*후",
    re.IGNORECASE,
)
_DENIAL = re.compile(
    r"\b(?:not|never|no\s+longer|doesn't|didn't|don't|won't|stopped)\b[^.\n]{0,20}$",
    re.IGNORECASE,
)


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


_SENTENCE = re.compile(r"(?<=[.!?])\s+|;\s+")


def _rose(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the line's (or one of its sentences') last step time is
    SLOWDOWN_RATIO times the lowest one before it, unless the line explains it away."""
    return SLOWED if _line_rose(m.string) else None


@lru_cache(maxsize=64)
def _line_rose(line: str) -> bool:
    """`_rose` once a line (every match of the rule asks the same of the whole line)."""
    if explains(line) or COMPARED.search(line):
        return False
    # the line, else one of its sentences (`went from 1.2 s/it to 3.5 s/it ... never recovers.
    # if I restart it's back to 1.2 s/it`: the restart's figure ends the line, not the report)
    sentences = _SENTENCE.split(line)
    for body in (line, *(sentences if len(sentences) > 1 else ())):
        quoted = quoted_step_times(body)
        if quoted is not None and quoted[1] and rose(quoted[0]):
            return True
    return False


@lru_cache(maxsize=64)
def _explained(line: str) -> bool:
    """EXPLAINED on a line, once a line (a judge may see many matches of one line)."""
    return explains(line)


_rates = lru_cache(maxsize=64)(quoted_rates)
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z\u4e00-\u9fff])|[。！？\n]")


def _sentence_end(line: str, at: int) -> int:
    """Return where the sentence holding `at` ends (its stop included), or the line's end."""
    end = _SENTENCE_END.search(line, at)
    return end.end() if end else len(line)


def fell(rates: list[float]) -> bool:
    """Return whether the last of the quoted rates is RATE_DROP_PCT below the highest one
    before it."""
    if len(rates) < 2:
        return False
    best = max(rates[:-1])
    return best > 0 and rates[-1] <= (1 - RATE_DROP_PCT / 100) * best


def _rate_fell(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the line says a rate fell and its last rate figure is
    RATE_DROP_PCT below the highest one before it, unless the words before the fall deny it or
    the line explains it away (``EXPLAINED``)."""
    if _DENIAL.search(m.string[max(0, m.start() - 40) : m.start()]) or _explained(m.string):
        return None
    # the report up to the fall's sentence: a later sentence's figure is another setup's or a
    # later time's (`... now decreased to ~8 MH/s. On a P100 ... 70 MH/s now`); a return to the
    # old rate is read by EXPLAINED above
    rates = _rates(m.string[: _sentence_end(m.string, m.end())])
    if len(rates) < 2:
        rates = _rates(m.string)
    return SLOWED if fell(rates) else None


def _barely(times: list[float]) -> bool:
    """Return whether times quoted before and after rose less than RATE_DROP_PCT (the same
    smallest gap worth naming as for rates)."""
    return (
        len(times) >= 2
        and min(times[:-1]) > 0
        and times[-1] / min(times[:-1]) - 1 < RATE_DROP_PCT / 100
    )


_FIRST = re.compile(r"\b(?:first|initial|1st|opening)\s+(?:few\s+|couple\s+of\s+|\d+\s+)?$", re.I)
"""The first epochs or steps: longer than the rest is a warm-up."""


_DECAYS = r"(?:decay\w*|drop\w*|fell|falls?|falling|declin\w*|decreas\w*|degrad\w*)"
_AT_LEAST = r"(?:at\s+least\s+|about\s+|around\s+|almost\s+|nearly\s+|over\s+|~\s*)?"
_FACTOR = 1.5
"""A time said to grow, or a rate to fall, by this factor or more is a slowdown."""


_EXPECTED = re.compile(
    r"\b(?:we|I)\s+(?:would\s+)?expect(?:ed)?\b|\b(?:is|was|are|were)\s+expected\b"
    r"|\bas\s+expected\b|\bas\s+(?:it\s+)?should\b|\bthat's\s+what\s+we\s+see\b|\bit's\s+fine\b"
    r"|\b(?:but|and|while)\s+(?:it\s+)?(?:cut|cuts|saved?|saves|halved|halves|reduc\w+|lower\w*)"
    r"\s+(?:the\s+)?(?:peak\s+)?memory\b",
    re.IGNORECASE,
)
"""A factor the sentence expects, or pays for memory with (a trade-off)."""


def _by_a_factor(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the factor is _FACTOR or more, unless the words before deny it
    or the line explains it away (``EXPLAINED``)."""
    factor = float(m["n"] or m["n2"] or m["n3"] or m["n4"])
    before = m.string[max(0, m.start() - 40) : m.start()]
    denied = _DENIAL.search(before) or re.search(r"\bno\s+(?:an?\s+)?$", before, re.IGNORECASE)
    if factor < _FACTOR or denied or _explained(m.string) or _EXPECTED.search(m.string):
        return None
    return SLOWED


def _said_to_grow(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown unless the words just before the verb (any of the pattern's verb
    groups) deny it, the times it quotes rose less than RATE_DROP_PCT, or it is said of the
    first epochs or steps (a warm-up)."""
    if _FIRST.search(m.string, max(0, m.start() - 30), m.start()):
        return None
    for group in ("verb", "verb2", "verb3", "verb4"):
        if m[group] is not None:
            before = m.string[max(0, m.start(group) - 40) : m.start(group)]
            explained = explains(m.string)
            denied = _DENIAL.search(before) or _barely(figures(m.string))
            return None if denied or explained else SLOWED
    return None


# a figure against the job's own past or expectation: `takes 2 hours instead of 20 minutes`,
# `30 s per step while it used to take 3 s`, `expected 1 s/step but got 5 s/step`
def _fig(name: str) -> str:
    return (
        rf"(?<![\d.])(?P<{name}>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d++(?:\.\d++)?)\s*"
        rf"(?P<{name}_unit>{RATE_UNIT}|{UNIT})"
        r"(?:/(?:epoch|iter\w*|step|batch|it)\b)?(?![\w/])"
    )


_AGAINST = re.compile(
    _fig("now")
    + r"[^.\n]{0,40}?\b(?:instead\s+of|(?:while|but|when|whereas|where)\s+(?:it\s+)?used\s+to"
    r"(?:\s+(?:be|take))?"
    # (`whereas normally it would take about 5 second`)
    r"|(?:while|but|whereas|where)\s+normally\s+(?:it\s+)?(?:would\s+|should\s+)?(?:take|be)"
    r"|(?:than|from)\s+(?:the\s+)?(?:usual|normal|expected|before))\s+"
    + ABOUT
    + _fig("then")
    # (`we expect 470 GB/s ... but got`, `the expected throughput is 27,688 tokens/sec, but I
    # only achieved 7099`)
    + r"|\bexpect\w*\s+(?:(?:throughput|bandwidth|busbw|algbw|speed|rate|performance|result"
    r"|value|number)\s+(?:is|was|of|would\s+be|should\s+be)\s+)?"
    + ABOUT
    + _fig("then2")
    + r"[^.\n]{0,40}?\b(?:but|however)\b[^.\n]{0,30}?"
    + _fig("now2"),
    re.IGNORECASE,
)


_A_CONSTANT = re.compile(
    r"\b(?:defined|hard-?coded|set|configured|declared|initiali[sz]ed)\s+(?:as|to)\s*[~=]?\s*$",
    re.IGNORECASE,
)
"""Words before a figure that make it a constant's value in code or a configuration (`an nvlink
bandwidth is defined as 20GB/s instead of 25GB/s`): no measured speed."""


def _against(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the figure now is SLOWDOWN_RATIO times the job's own earlier or
    expected step time, or RATE_DROP_PCT below its rate (both figures of one kind; a time must
    be a step's, ``2 hours instead of 20 minutes`` of an epoch, not a timeout's; a constant's
    value, ``defined as 20GB/s instead of 25GB/s``, is none)."""
    now, then = ("now", "then") if m["now"] is not None else ("now2", "then2")
    if _A_CONSTANT.search(m.string, max(0, m.start(now) - 40), m.start(now)):
        return None
    now_value, timed = value(m[now], m[f"{now}_unit"])
    then_value, then_timed = value(m[then], m[f"{then}_unit"])
    if timed != then_timed or then_value <= 0 or explains(m.string):
        return None
    if timed:
        slower = _STEP_WORD.search(m.string) and now_value >= SLOWDOWN_RATIO * then_value
        return SLOWED if slower else None
    return SLOWED if (1 - now_value / then_value) * 100 >= RATE_DROP_PCT else None


COMPARED = re.compile(
    r"\bwith\s+(?:TP|PP|DP|EP|bs|batch)\b|\b(?:TP|PP|DP|EP)\s*=|\b(?:goal|expected|aim\w*)\b"
    # a target as a goal (not `per target`, `the same targets` of a protein run)
    r"|\b(?:our|the|a|its|my)\s+target\b(?!s)(?!\s+(?:protein|structure|sequence))"
    r"|\btarget(?:ed)?\s+(?:of|was|is|at)\b"
    r"|\b(?:torch|pytorch|cuda|nccl|driver|version|v)\s*\d+(?:\.\d+)+\s*(?:->|→|to|vs\.?)\s*v?\d"
    r"|\b(?:[AHVBL]\d{2,3}|RTX\s?\d{4})\b.*\b(?:[AHVBL]\d{2,3}|RTX\s?\d{4})\b"
    # two settings compared side by side (`Compared two configs`, `ZeRO-2 gives ..., ZeRO-3`)
    r"|(?i:\bcompared\s+(?:two|2|both|the\s+two)\s+(?:configs?|configurations|setups|settings|runs"
    r"|options)\b)"
    r"|\bZeRO-?([0-3])\b.*\bZeRO-?(?!\1)[0-3]\b",
)
"""Configurations, GPU models, versions or a target compared (``52% with TP=1 and 31% with
TP=8``, ``up to 60% on H100 and 45% on A100``, ``our target was 50%``, ``torch 2.3 -> 2.4``): no
job that slowed."""


def _utilisation_fell(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when the later utilisation figure is RATE_DROP_PCT below the earlier,
    unless the line explains it away or denies the fall."""
    before, after = float(m["before"]), float(m["after"])
    if explains(m.string) or _DENIAL.search(m.string[: m.start("after")]):
        return None
    if COMPARED.search(m.string):
        return None  # configurations or hardware compared, or a target missed
    return SLOWED if before > 0 and after <= (1 - RATE_DROP_PCT / 100) * before else None


NOT_A_FALL = r"(?!\s+(?:within|inside|outside|between)\b)"
"""After a word of falling: not a figure that falls within (or outside) a range."""

RULES: tuple[Rule, ...] = (
    rule(
        "slowdown.utilisation_fell",
        r"\b(?:MFU|HFU|model\s+flops\s+utili[sz]ation)\b[^.\n]{0,60}?~?(?P<before>\d+(?:\.\d+)?)\s*%"
        r"[^.\n]{0,80}?\b(?:now|then|after|dropped|fell|(?:went|gone|goes)\s+down|down\s+to)\b"
        r"[^.\n]{0,40}?~?"
        r"(?P<after>\d+(?:\.\d+)?)\s*%",
        ("mfu", "hfu", "flops"),
        "The job's model FLOPs utilisation quoted as it fell (`MFU was ~52% ... now 31%`): the "
        "job does less work a second than it did, waiting for something that became slow.",
        judge=_utilisation_fell,
        flags=re.IGNORECASE,
    ),
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
        r"\b(?:drops?(?!-)|dropped|dropping|fell|falls?|falling|fallen|decreas\w+|declin\w+|degrad\w+"
        r"|(?:goes|went|gone|is|was)\s+down|down\s+to)\b" + NOT_A_FALL,
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
        rf"(?:\d\s*|\b(?:an?|one)\s+){UNIT}\b|\d\s*it/s\b",
        # (_STEP_WORD's: a step, or one item of the job's work or one request)
        (
            *("epoch", "iter", "step", "batch", "s/it", "it/s", "image", "picture", "frame"),
            *("sample", "render", "generation", "episode", "sequence", "request", "response"),
            *("prompt", "query"),
        ),
        "The step (iteration, epoch) times quoted rise to at least "
        f"{SLOWDOWN_RATIO:g}x the first and stay there: a synchronous job that slowed down "
        "waits for a member or a resource that became slow (a fail-slow GPU, NIC or host, a "
        "throttled device, a data stall); compare the members' step times.",
        judge=_rose,
        flags=re.IGNORECASE,
    ),
    rule(
        "slowdown.by_a_factor",
        r"\b(?P<n>\d+(?:\.\d+)?)\s*[x×]\s+(?:increase|rise|jump|growth)\s+in\s+(?:the\s+)?"
        r"(?:\w+\s+)?(?:step|iteration|iter|epoch|batch|training|train|learn(?:ing)?|forward"
        r"|backward|compute)[\s-]+(?:time|duration|latency)\b"
        rf"|\b(?:throughput|speed)\s+(?:is|was|went|has\s+gone)\s+down\s+(?:by\s+)?{_AT_LEAST}"
        r"(?P<n4>\d+(?:\.\d+)?)\s*(?:x|times)\b"
        rf"|\b{_DECAYS}\s+(?:in\s+)?(?:the\s+)?(?:\w+\s+)?(?:throughput|speed)\s+by\s+{_AT_LEAST}"
        r"(?P<n2>\d+(?:\.\d+)?)\s*(?:x|times)\b"
        rf"|\b(?:throughput|speed)\s+(?:has\s+|had\s+)?{_DECAYS}\s+by\s+{_AT_LEAST}"
        r"(?P<n3>\d+(?:\.\d+)?)\s*(?:x|times)\b",
        ("increase", "rise", "jump", "growth", "decay", "drop", "fell", "fall", "declin")
        + ("decreas", "down"),
        "A time said to grow, or a throughput to fall, by a factor (`a 7X increase in learn "
        f"time`, `decaying throughput by at least 10 times`): {_FACTOR:g} times or more is a "
        "slowdown, unless the sentence denies it or explains it away (a trade-off turned on).",
        judge=_by_a_factor,
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
