"""A slowdown told over a whole report: the first stretch of work against a later one, an ETA
that slips, the others that wait for one member (in ten languages).

People rarely put the two figures of a slowdown in one sentence with a verb of slowing; they tell
how long the first part of the work took and how long a later part takes, or what the others do
while one member is still working. These rules read those three shapes over the whole text:

- **the first stretch, then a later one** (``told.first_then_later``): a clause that times the
  first part of the work (``did 500 steps in the first 20 minutes``, ``First 100 episodes took 10
  minutes``) and a later clause that times a later part (``the next 500 took almost two hours``,
  ``Episodes 900-1000 took 55 minutes``): the later time ``SLOWDOWN_RATIO`` times the first, in
  any units and in words (rules_slowdown's ``figures``);
- **an ETA that slips** (``told.eta_slips``): an ETA said to keep moving or growing, or quoted
  twice with the later remaining time longer than the first (``yesterday ... 6 hours left, this
  morning ... 14 hours left``);
- **the others wait for one** (``told.others_wait``): the peers that finish and wait for one
  member, or one member always last or a factor slower than the rest, in Chinese, Japanese,
  Korean, Russian, German, French, Spanish, Portuguese, Italian and Indonesian (English is
  rules_slowness's).

Guarantees: a first stretch slower than the later one is a warm-up, never a slowdown; a report
the speaker explains (rules_figures' explanations: expected, their own heavier setting, two
setups) is silent; the verdict is a straggler warning of the words' confidence.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.quantities import figures
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_figures import explained
from diagnosis.explain.rules_slowdown import SLOWDOWN_RATIO
from diagnosis.explain.rules_straggler import slow_member
from diagnosis.model import ComponentKind as K

# the first stretch of work timed, then a later one (`the next 500`, `Episodes 900-1000`)
_FIRST_THEN_LATER = re.compile(
    r"(?P<first>\b(?:the\s+)?(?:first|initial)\b[^.;\n]{0,60}?)(?:[.;,]\s*|\s+(?:and|but|while)\s+)"
    r"(?P<later>(?:the\s+)?(?:next|following|last|later|then|after\s+that|(?:[A-Za-z]+\s+)?\d[\d,]*"
    r"\s*[-–]\s*\d[\d,]*|(?:around|by|at|after|from)\s+(?:frame|step|epoch|iteration|episode|batch"
    r"|image|target)\s+\d+)\b[^.;\n]{0,60})",
    re.IGNORECASE,
)


def _first_then_later(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning when the later stretch took SLOWDOWN_RATIO times the first."""
    first, later = figures(m["first"]), figures(m["later"])
    if len(first) != 1 or len(later) != 1 or first[0] <= 0 or explained(m.string):
        return None
    return slow_member(K.JOB) if later[0] >= SLOWDOWN_RATIO * first[0] else None


_ETA = re.compile(
    r"\bETA\b[^.\n]{0,30}?\b(?P<words>keeps?|kept)\s+(?:moving|slipping|growing|increasing|rising"
    r"|going\s+up|getting\s+(?:later|longer))"
    r"|\bETA\b(?P<quoted>.{0,200})",
    re.IGNORECASE | re.DOTALL,
)
_NOW = re.compile(r"\b(?:now|this\s+morning|today|still)\b", re.IGNORECASE)


def _eta_slips(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on an ETA said to slip, or quoted twice and longer now."""
    if explained(m.string):
        return None
    if m["words"]:
        return slow_member(K.JOB)
    times = figures(m["quoted"])
    now = _NOW.search(m["quoted"])
    if len(times) < 2 or now is None or times[0] <= 0:
        return None
    return slow_member(K.JOB) if times[-1] >= SLOWDOWN_RATIO * times[0] else None


_OTHERS_WAIT = re.compile(
    # Chinese: the others wait for one card (`其他7张卡跑完一个epoch都要等3号卡`)
    r"(?:其他|其余|别的)[^。！？]{0,24}?等(?:待)?[^。！？]{0,6}?(?:号卡|卡|节点|机器|rank|GPU)"
    # Japanese: only one is slow, the others are kept waiting (`node03だけ毎回処理が遅く`)
    r"|(?:ノード|GPU|カード|ランク|サーバー?|マシン|[A-Za-z]+\d+)だけ[^。]{0,20}?遅[いく]|待たされ"
    # Korean: only one at half (`한 장만 해시레이트가 절반`), the others wait (`기다`)
    r"|만[^.。]{0,15}?절반|(?:다른|나머지)[^.。]{0,24}?기다리"
    # Russian: N times longer than the rest
    r"|в\s+(?:два|три|полтора|\d+(?:[.,]\d+)?)\s+раза\s+(?:дольше|медленнее)\s+(?:чем\s+)?(?:у\s+)?"
    r"остальн\w*"
    # German: the run waits for one member
    r"|\bwartet\b[^.\n]{0,30}?\bauf\s+(?:Rank|GPU|Knoten|Node|Karte|Worker)\s*\d"
    # French, Spanish, Portuguese, Italian: always the last, the others wait for it
    r"|\btoujours\s+(?:le|la)\s+derni[eè]re?\b|\bles\s+autres\s+l['’]attendent\b"
    r"|\bsiempre\s+(?:es\s+)?(?:el|la)\s+últim[oa]\b|\blos\s+demás\s+(?:la|lo)\s+esperan\b"
    r"|\bsempre\s+(?:é\s+)?(?:o|a)\s+últim[oa]\b|\bmuito\s+depois\s+d(?:os|as)\s+outr[oa]s\b"
    r"|\bsempre\s+(?:l['’]|il\s+|la\s+)?ultim[oa]\b|\bgli\s+altri\s+(?:la|lo)\s+aspettano\b"
    # Indonesian: always the slowest, the others wait
    r"|\bselalu\s+paling\s+lambat\b|\b(?:lain|lainnya)\b[^.\n]{0,40}?\bmenunggu\b",
    re.IGNORECASE,
)


def _others_wait(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on one member the others wait for, unless explained."""
    return None if explained(m.string) else slow_member(K.GPU)


RULES: tuple[Rule, ...] = (
    rule(
        "told.first_then_later",
        _FIRST_THEN_LATER.pattern,
        ("first", "initial"),
        f"The first stretch of the work timed, then a later one {SLOWDOWN_RATIO:g}x as long (`did "
        "500 steps in the first 20 minutes and the next 500 took almost two hours`): the job "
        "became slower and stays slower.",
        judge=_first_then_later,
        flags=re.IGNORECASE,
    ),
    rule(
        "told.eta_slips",
        _ETA.pattern,
        ("eta",),
        "The run's ETA keeps slipping (said, or quoted twice and longer now): the job became "
        "slower than it was.",
        judge=_eta_slips,
        flags=re.IGNORECASE | re.DOTALL,
    ),
    rule(
        "told.others_wait",
        _OTHERS_WAIT.pattern,
        (
            *("其他", "其余", "别的", "だけ", "待たされ", "만", "다른", "나머지", "раза"),
            *("wartet", "toujours", "les autres", "siempre", "los demás", "sempre", "muito depois"),
            *("gli altri", "selalu", "menunggu"),
        ),
        "The others finish and wait for one member, or one member is always the last or a "
        "factor slower than the rest (in ten languages): the straggler they wait for.",
        judge=_others_wait,
        flags=re.IGNORECASE,
    ),
)
