"""Two groups of a job's members given figures in a sentence: the faster group waits.

People compare some members with the rest in words and figures: ``some gpus are getting ETH
hashrate in the 30s or early 50s while the others are getting 58 mh/s``, ``Most cards get about
450-480MH. Some cards ... only do 220MH``, ``The first cards they have consistent 100-110 sol
but the other 2 have 35-40 sol``. One clause names some members (some, a few, one, two, the
first, N cards) and another the others (the others, the rest, the other N, most cards); the
first amount of each clause is its figure (a range as its middle). Figures ``PEER_GAP_PCT``
apart, either way, make a straggler finding: in one synchronous job the faster group waits for
the slower.

Guarantees: only prose is read; the others' clause must carry a rate (hash rate, speed, H/s,
MH, Sol) or a time unit, and a group quoted in the other kind of unit is no comparison; the
rule runs after every other category's rules (rules.all_rules), so a line another rule
explains never reaches it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from diagnosis.catalog import Verdict
from diagnosis.explain.records import is_prose
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_straggler import member_kind, slow_member
from diagnosis.explain.rules_straggler_words import PEER_GAP_PCT
from diagnosis.explain.slowness_sentences import NOT_TRAINING

_CLAUSE_END = re.compile(r"[.;!?](?:\s|$)|\b(?:while|whereas|but)\b|\n", re.IGNORECASE)
_MAJORITY = re.compile(
    r"\b(?:the\s+)?(?:others|other\s+(?:ones|\w+s|\d+)|rest|remaining\s+\w+|most\s+(?:of\s+)?\w+)\b",
    re.IGNORECASE,
)
_AMOUNT = re.compile(
    r"(?<![\w.])(?P<low>\d+(?:\.\d+)?)(?:\s*(?:-|–)\s*(?P<high>\d+(?:\.\d+)?))?(?!x\b)"
)
_RATE_WORDS = re.compile(
    r"hash\s*rate|speed|throughput|FLOPS|/s\b|(?:\b|(?<=\d))(?:(?-i:[kMGT]?H|MHs?)|Sol|sols?|mh|kh|gh)\b",
    re.IGNORECASE,
)
_SPACED_TIME = re.compile(r"\d\s+(?:ms|s|secs?|seconds?|mins?|minutes?|hours?)\b", re.I)
_TIME_UNITS = re.compile(r"(?:\b|(?<=\d))(?:ms|s|secs?|seconds?|mins?|minutes?|hours?)\b", re.I)


CLAUSE_CHARS = 200
"""How far a clause is read for its figure: a sentence's worth, so a long line costs little."""
MAX_MAJORITIES = 4
"""Clauses about the others read per line (the first few: a long line costs little)."""


def _clause_figure(text: str, start: int) -> tuple[float, str] | None:
    """Return the first amount of the clause starting at `start` (a range as its middle) and
    the clause's text (at most CLAUSE_CHARS)."""
    limit = min(len(text), start + CLAUSE_CHARS)
    end = _CLAUSE_END.search(text, start, limit)
    clause = text[start : end.start() if end else limit]
    amount = _AMOUNT.search(clause)
    if amount is None:
        return None
    return (float(amount["low"]) + float(amount["high"] or amount["low"])) / 2, clause


@lru_cache(maxsize=256)
def _majorities(text: str) -> tuple[tuple[int, float, str], ...]:
    """Return (position, figure, clause) of the first few clauses about the others in `text`."""
    found = []
    for g in _MAJORITY.finditer(text):
        figure = _clause_figure(text, g.end())
        if figure is not None:
            found.append((g.start(), *figure))
        if len(found) == MAX_MAJORITIES:
            break
    return tuple(found)


def _apart(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the clause naming some members gives a figure PEER_GAP_PCT apart
    from the clause about the others (or most of them), either way: in one synchronous job the
    faster group waits for the slower. The others' clause says what is compared (a rate or a
    time); a group quoted in the other kind of unit is no comparison, nor are figures of
    something other than training (a boot, a download: slowness_sentences.NOT_TRAINING)."""
    if not is_prose(m.string) or NOT_TRAINING.search(m.string):
        return None
    some = _clause_figure(m.string, max(m.end(g) for g in ("kind", "kind2", "kind3")))
    if some is None:
        return None
    some_end = m.end() + len(some[1])
    majority = next(
        (
            (figure, clause)
            for at, figure, clause in _majorities(m.string)
            if not m.start() <= at < some_end
        ),
        None,
    )
    if majority is None or majority[0] <= 0:
        return None
    rate = _RATE_WORDS.search(majority[1]) and not _SPACED_TIME.search(some[1])
    timed = _TIME_UNITS.search(majority[1]) and not _RATE_WORDS.search(some[1])
    if not (rate or timed):
        return None
    gap = abs(majority[0] - some[0]) / max(majority[0], some[0])
    return slow_member(member_kind(m)) if gap * 100 >= PEER_GAP_PCT else None


RULES: tuple[Rule, ...] = (
    rule(
        "straggler.members_apart",
        r"\b(?:(?:some|a\s+few|few|one|two|three|four|a\s+couple)\s+(?:of\s+(?:the|my|our|these)\s+)?"
        r"(?:[\w-]+\s+){0,2}?(?P<kind>GPU|card|device|node|host|rank|worker)s?"
        r"|(?:the\s+)?(?:first|second|third|last)\s+(?:(?:\d+|two|three|four)\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?P<kind3>GPU|card|device|node|host|rank|worker)s?"
        r"|\d+\s+(?:of\s+(?:the|my|our|these)\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?P<kind2>GPU|card|device|node|host|rank|worker)s)\b",
        ("others", "other", "rest", "remaining", "most"),
        "Some members given a figure apart from the others' (or most members') by "
        f"{PEER_GAP_PCT:g} % or more (``some gpus are getting 30s ... while the others are "
        "getting 58 mh/s``): in one job the faster members wait for the slower.",
        judge=_apart,
        flags=re.IGNORECASE,
    ),
)
