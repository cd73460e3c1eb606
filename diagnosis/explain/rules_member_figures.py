"""Speed figures compared in one sentence: a member against its peers.

Short reports of a slowdown give two figures of one speed, in any language, and say how they
relate; these rules read the figures and the relation, not the phrasing around them:

- **a member against its peers** (``figures.member_behind_peers`` and its siblings): a named
  member (``GPU4``, ``rank 0``, ``node-c``, ``gpu-node-12``, ``pod trainer-7``, ``Ранг 13``)
  given a figure and its peers (``the other five``, ``the rest``, ``ranks 1-7``, ``its
  siblings``, ``他は``, ``node lain``, ``os outros``, ...) another of the same kind, the member's
  ``PEER_GAP_PCT`` worse; a member N % longer or with N % less work than its peers, a factor
  (``1.7x longer than its 7 siblings``, ``他の 1.6 倍``), a lag (``180-220ms after workers
  ...``); members' figures listed on a line or under a label (``per-rank step (s): [...]``).
- **a list over time** (``sec/epoch: 301, 298, 460, 472``), read by the rule that reads a
  label's list of members' figures (``figures.list_behind``).

The named members and their peers (``member_pattern``, ``MEMBER``, ``PEERS``) and the kind of
speed a sentence names (``sentence_kind``) are rules_figures', whose percentage reader names
them too.

Guarantees: a period is no step time (``over ~6 hours``, ``12h later``, ``for 30m``), nor is a
timeout, an interval, a start-up, a save or a ping; counts, steps, ids, versions, months and
model names are no figures, and a number said of another quantity (a loss, memory, a
temperature) is none; a sentence the speaker explains away (explained.EXPLAINED,
``because we ...`` in seven languages, a trade-off, a member's own extra work) is silent; a
time that falls or a rate that rises is never a slowdown, nor is a less or lower that is not
of work (``25% less time``, ``30% lower temperature``); a judge reads its line once however
many matches ask (hostile lines stay linear).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import explained, explained_at
from diagnosis.explain.members import MEMBER, MEMBER_KINDS, PEERS, member_kind, member_pattern
from diagnosis.explain.peers import MIN_LINE_PEERS, slow_peer
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_figures import sentence_kind
from diagnosis.explain.rules_slowdown import SLOWED
from diagnosis.explain.rules_straggler import slow_member
from diagnosis.explain.rules_straggler_words import PEER_GAP_PCT
from diagnosis.explain.speed_figures import (
    NOT_A_STEP,
    NUM,
    PREFIXED_RATE,
    RATE_PREFIXES,
    Figure,
    number,
    speed_figures,
)
from diagnosis.explain.training import step_time_drift, step_time_slowdown
from diagnosis.model import ComponentKind as K

_SPAN = r"(?:[^.;\n]|(?<=\d)\.(?=\d))"  # within a sentence: a decimal point is no full stop
_WHILE = (
    r"(?:[,;、，]\s*|\s+(?:while|whereas|but|and|enquanto|mientras|während|alors\s+que|tandis\s+que|"
    r"mentre|а|але|ama|tapi|sedangkan|trong\s+khi)\s+|\s)"
)
_VERSUS = re.compile(
    r"\bvs\.?|\bversus\b|\bagainst\b|\bcompared\s+(?:to|with)\b|(?<!\w)против(?!\w)|\bcontre\b"
    r"|\bcontra\b|\bgegen\b",
    re.IGNORECASE,
)
_MEMBER_FIGURES = re.compile(
    rf"(?<!\w)(?:{MEMBER})(?P<mine>{_SPAN}{{0,60}}?){_WHILE}(?:for\s+|on\s+|of\s+)?(?:{PEERS})"
    rf"(?P<theirs>{_SPAN}{{0,40}})"
    rf"|(?<!\w)(?:{member_pattern('3')})(?P<mine3>{_SPAN}{{0,60}}?)(?:\bvs\.?|\bversus\b|\bagainst\b|"
    rf"\bcompared\s+(?:to|with)\b|(?<!\w)против(?!\w)|\bcontre\b|\bcontra\b|\bgegen\b)"
    rf"(?P<theirs3>{_SPAN}{{0,20}}?)(?:\b(?:on|for|of|from|in|across)\s+|(?<!\w)у\s+)?"
    rf"(?:{PEERS})",
    re.IGNORECASE,
)
_MEMBER_PERCENT = re.compile(
    rf"\b(?:{MEMBER}|one\s+(?:[\w-]+\s+){{0,3}}?(?P<kindone>GPU|card|device|node|host|rank|worker)"
    r"s?)\b[^.\n]{0,60}?[~≈]?(?P<pct>\d+(?:\.\d+)?)\s*%\s+(?:longer|slower|more\s+time|(?:fewer|less|"
    r"lower)\s+(?P<what>[\w/]+)|(?P<higher>higher|greater|larger))\b",
    re.IGNORECASE,
)
# ... than its peers, or the peers that wait for it (read by the judge after the match, so that
# a line that repeats the head is read in linear time)
_PEERS_AFTER = re.compile(
    rf"[^.\n]{{0,60}}?(?:\bthan\s+(?:(?:on|for|in|at)\s+)?(?:{PEERS})|\b(?:{PEERS})[^.\n]{{0,40}}?"
    r"\bwait)",
    re.IGNORECASE,
)
_MEMBER_FACTOR = re.compile(
    rf"(?<!\w)(?:{MEMBER})[^.\n]{{0,50}}?(?:(?P<x>\d+(?:\.\d+)?)\s*(?:x|times)\s+(?:longer|slower|as\s+"
    rf"long)\b[^.\n]{{0,40}}?\b(?:than|as)\s+(?:(?:on|for|in|at)\s+)?(?:{PEERS})|(?:{PEERS})[^.\n]{{0,10}}?"
    r"(?P<x2>\d+(?:\.\d+)?)\s*倍)"
    rf"|(?<!\w)(?:{member_pattern('3')})[^.\n]{{0,60}}?(?:(?P<low>{NUM})\s*[-–]\s*)?(?P<lag>{NUM})\s*"
    r"(?:ms|s|sec\w*)\s+(?:after|behind|later\s+than)\s+(?:the\s+|all\s+)?(?:other\w*|rest|"
    r"every|workers?|ranks?|GPUs?|nodes?)",
    re.IGNORECASE,
)


def _behind(mine: Sequence[Figure], theirs: Sequence[Figure]) -> bool:
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
    if explained_at(m):
        return None
    mine_text, theirs_text = m["mine"] or m["mine3"] or "", m["theirs"] or m["theirs3"] or ""
    versus = _VERSUS.search(mine_text)
    if versus is not None:  # `2.1 s/step vs 1.4 on the others`: the peers' figure after `vs`
        mine_text, theirs_text = mine_text[: versus.start()], mine_text[versus.end() :]
    mine = speed_figures(mine_text)
    theirs = speed_figures(theirs_text)
    if mine and not theirs:  # `2.1 s/step vs 1.4 on the others`: the unit said once
        theirs = _peers_said(theirs_text, mine[-1], PREFIXED_RATE.search(m.string) is not None)
    return slow_member(member_kind(m)) if _behind(mine, theirs) else None


_WORK = re.compile(
    r"^(?:throughput|tokens?|toks?|samples?|images?|img|it/s|steps?|TFLOP\w*|FLOP\w*|MFU|speed|"
    r"work|bandwidth|hash\w*)",
    re.IGNORECASE,
)


_MEMBERS_NOUN = re.compile(
    r"\s*(?:hosts?|nodes?|gpus?|ranks?|pods?|workers?|cards?|devices?|nós|nodos|узл\w*|ノード|节点|台)\b",
    re.IGNORECASE,
)


def _peers_said(text: str, mine: Figure, prefixed: bool = False) -> tuple[Figure, ...]:
    """The peers' figure said without its unit (`vs 1.4 on the others`, `the other 63 hosts are
    at 520-530`): the first number that is no count of the peers and is of the member's
    magnitude (a range is its middle)."""
    for m in re.finditer(rf"(?P<low>{NUM})\s*[-–]\s*(?P<high>{NUM})|{NUM}", text):
        if _MEMBERS_NOUN.match(text, m.end()):
            continue  # `63 hosts`: how many peers, not their figure
        value = (number(m["low"]) + number(m["high"])) / 2 if m["low"] is not None else number(m[0])
        # a rate's prefix said once (`GPU5 at 25 MH/s while its neighbours are at 50`), a time's
        # unit said once (`three finish in ~55 minutes, dgx-03 needs around 80`)
        units = (1.0, 60.0, 3600.0) if mine.timed else (1.0, *RATE_PREFIXES) if prefixed else (1.0,)
        for unit in units:
            if mine.value <= 0 or 0.1 * mine.value <= value * unit <= 10 * mine.value:
                return (Figure(m.start(), value * unit, mine.timed),)
    return ()


def _member_percent(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the member is said to be PEER_GAP_PCT or more behind its peers:
    longer or slower, or less of a rate of work (less time, a lower temperature: no)."""
    if float(m["pct"]) < PEER_GAP_PCT or _PEERS_AFTER.match(m.string, m.end()) is None:
        return None
    if explained_at(m) or (m["what"] is not None and not _WORK.match(m["what"])):
        return None
    if m["higher"] is not None and (
        not _A_TIME.search(m.string, max(0, m.start("pct") - 60), m.start("pct"))
        or _NOT_A_TIME.match(m.string, m.end("higher"))
    ):
        return None  # higher is worse only of a time (`step time ... 40% higher`)
    return slow_member(member_kind(m))


_A_TIME = re.compile(r"\b(?:time|latency|duration|s/it|ms/step|sec/it)\b", re.IGNORECASE)
_NOT_A_TIME = re.compile(
    r"\s+(?:\w+\s+)?(?:memory|mem|usage|power|temp\w*|util\w*|load|vram|ram|loss|cost)\b",
    re.IGNORECASE,
)


def _member_factor(m: re.Match[str]) -> Verdict | None:
    """Return straggler on a member said to take a factor longer than its peers (at least
    1 + PEER_GAP_PCT/100), or to arrive a measured time after them."""
    factor = m["x"] or m["x2"]
    if factor is not None and float(factor) < 1 + PEER_GAP_PCT / 100:
        return None
    return None if explained_at(m) else slow_member(member_kind(m))


# the peers' figure first, then the member's (`7 of the 8 A100s do ~250 TFLOPS, GPU 2 only
# manages ~140`); in Chinese, Japanese and Korean, a member that `only` reaches a figure and the
# others another (`算力只有 30 MH/s，其他同型号的卡都是 61 MH/s`)
_PEERS_FIRST = re.compile(
    r"\b(?:\d+\s+of\s+(?:the\s+|our\s+|my\s+)?\d+|two|three|four|five|six|seven|the\s+others?"
    r"|the\s+rest)\s+(?:[\w-]+\s+){0,2}?(?:do|does|get|run\s+at|reach|are\s+at|show|score|manage"
    r"|finish(?:es)?\s+in|take)\s+(?P<theirs>[^,;.\n]{0,30}?)[,;]\s*(?:but\s+|while\s+|whereas\s+"
    rf"|and\s+)?(?:{member_pattern('5')})\s+(?:only\s+)?(?:manages?|does|gets?|reach(?:es)?|is\s+at|runs?\s+at"
    r"|shows?|scores?|at|needs?|takes?)\s+(?P<mine>[^,;.\n]{0,30})"
    r"|(?:只有|仅有|只|才|だけ|しか|만)\s*(?P<mine2>[~≈]?\d[\d.,]*\s*[^\s，,。、]{0,8})[^。]{0,10}?"
    r"[，,、；;]\s*(?:而\s*)?(?:其他|其余|别的|他の|ほかの|다른|나머지)(?P<theirs2>[^。]{0,30})",
    re.IGNORECASE,
)


def _peers_first(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the member's figure is PEER_GAP_PCT worse than its peers' said
    first (or, in CJK, after the member's `only`)."""
    if explained_at(m):
        return None
    mine_text, theirs_text = m["mine"] or m["mine2"] or "", m["theirs"] or m["theirs2"] or ""
    mine, theirs = speed_figures(mine_text), speed_figures(theirs_text)
    if mine and not theirs:  # the unit said once, by either side
        theirs = _peers_said(theirs_text, mine[-1], PREFIXED_RATE.search(m.string) is not None)
    elif theirs and not mine:
        mine = _peers_said(mine_text, theirs[-1], PREFIXED_RATE.search(m.string) is not None)
    return slow_member(member_kind(m) if m["mine"] else K.GPU) if _behind(mine, theirs) else None


# a member at half its peers, in the other languages the readers know (`他のGPUの半分くらいの速度`,
# `вдвое меньший хешрейт, чем остальные`, `nur halb so schnell wie die anderen`, `la mitad de
# hashrate que las demás`)
_HALF_OF_PEERS = re.compile(
    r"他の[^。、]{0,12}?の?半分|(?:其他|其余|别的)[^。，]{0,12}?的?一半|(?:다른|나머지)[^.。]{0,15}?절반"
    r"|вдвое\s+(?:меньш|медленн|ниже)\w*[^.\n]{0,40}?чем\s+(?:у\s+)?(?:остальн|други)\w*"
    r"|\bhalb\s+so\s+(?:schnell|viel|hoch)\s+wie\s+(?:die|alle)\s+(?:anderen|übrigen)"
    r"|\bhalb\s+so\s+(?:schnell|viel|hoch)\s+wie\s+(?:der|dem)\s+Rest\b"
    r"|\bmitad\s+(?:de[l]?\s+(?:\w+\s+)?)?(?:que\s+)?(?:las|los)\s+(?:demás|otr[oa]s)"
    r"|\bmetade\s+(?:d[oa]\s+(?:\w+\s+)?)?(?:d[oa]s|que\s+(?:as|os))\s+(?:outr[oa]s|demais)"
    r"|\bmoitié\s+(?:\w+\s+){0,3}?(?:des|que\s+les)\s+autres"
    r"|\bmetà\s+(?:\w+\s+){0,3}?(?:degli|delle|rispetto\s+a(?:gli|lle|i)|che\s+gli|che\s+le)"
    r"\s+altr[ie]",
    re.IGNORECASE,
)
_SPEED_WORD = re.compile(
    r"速度|算力|吞吐|性能|速さ|処理|성능|속도|해시|hash|MH/s|скорост|хешрейт|производительн|schnell"
    r"|Geschwindigkeit|Leistung|velocidad|rendimiento|velocidade|desempenho|vitesse|performance"
    r"|velocità|prestazioni|it/s|fps|FLOPS|ns/day",
    re.IGNORECASE,
)


_NOT_SPEED = re.compile(
    r"显存|内存|价格|价钱|メモリ|価格|메모리|가격|памят|цен|Speicher|Preis|memoria|precio|memória"
    r"|preço|mémoire|prix|prezzo|memory|price",
    re.IGNORECASE,
)


def _half_of_peers(m: re.Match[str]) -> Verdict | None:
    """Return straggler on a member said to reach half its peers' speed: a speed named next to
    the half, no price or memory there (half the price of other shops, half the memory of
    the other cards are no slowdown), unless explained."""
    near = m.string[max(0, m.start() - 30) : m.end() + 30]
    if explained(m.string) or not _SPEED_WORD.search(near) or _NOT_SPEED.search(near):
        return None
    return slow_member(K.GPU)


# members' figures listed on one line (`r0 212ms r1 209ms r3 355ms`, `host-a 1480, host-d 910`)
_LISTED = re.compile(
    r"(?<![\w-])(?P<kind>r|rank|gpu|node|worker|host|pod)[-_#]?\s?(?P<id>\d+|[a-z])(?![\w-])\s*[:=]?\s*"
    rf"(?P<num>{NUM})\s*(?P<unit>ms|s|sec)?\b",
    re.IGNORECASE,
)
# a label and four or more figures (`sec/epoch: 301, 298, 305, 460`, `[1.21, 1.20, 1.98]`)
_LIST = re.compile(
    r"[:=]\s*\[?\s*(?P<items>[~≈]?\d[\d.]*\s*(?:ms|s|%)?"
    r"(?:\s*[,/;|]\s*[~≈]?\d[\d.]*\s*(?:ms|s|%)?){3,})\s*\]?(?P<after>[^\n]{0,40})"
)
_PER_MEMBER = re.compile(
    r"\bper[-\s]?(?:rank|host|gpu|node|worker|pod|device)\b|\((?:rank|host|gpu|node|worker|pod)\s*\w+\)",
    re.IGNORECASE,
)
_OVER_TIME = re.compile(
    r"\bsec(?:onds)?/epoch\b|\bper\s+(?:\d+\s+)?(?:steps?|epochs?|iter\w*)\b|\bwall-?clock\b|"
    r"\b(?:epoch|step|iter(?:ation)?)[\s_-]*times?\b|\bs/it\b|\bit/s\b|\bthroughput\b|\bMFU\b|"
    r"\btokens?/s\b|\bsamples?/s\b",
    re.IGNORECASE,
)


def _listed(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one of the members' figures listed on the line is far behind the
    others' (peers.slow_peer: a time is read as its inverse)."""
    return (
        slow_member(MEMBER_KINDS.get(m["kind"].lower(), K.JOB)) if _one_behind(m.string) else None
    )


@lru_cache(maxsize=64)
def _one_behind(line: str) -> bool:
    """Whether one member of those the line lists is far behind (once a line: every match of
    the rule asks the same). Times are the members' own unit or the line's time metric; rates
    the line's rate metric."""
    if NOT_A_STEP.search(line) or re.search(r"\blatenc\w*|\bRTT\b", line, re.IGNORECASE):
        return False  # a checkpoint's save, a ping, a load: not the members' step times
    listed = list(_LISTED.finditer(line))
    kind = sentence_kind(line)
    timed = any(p["unit"] for p in listed) or kind is True
    if not (timed or kind is False) or explained(line):
        return False
    pairs = [(p["id"], number(p["num"])) for p in listed]
    pairs = [(i, 1 / v if timed else v) for i, v in pairs if v > 0]
    return slow_peer(pairs, MIN_LINE_PEERS + 1) is not None


_OTHER_LABEL = re.compile(
    r"\b(?:loss|lr|learning\s+rate|acc\w*|grad\w*|norm|memory|mem|GB|MB|disk|free|temp\w*|power|"
    r"util\w*|ppl|perplexity|reward|score)\b",
    re.IGNORECASE,
)
_SPEED_LABEL = re.compile(
    r"\b(?:throughput|tokens?/s\w*|samples?/s\w*|it/s|s/it|steps?/s|TFLOP\w*|MFU|HFU|speed|img/s|"
    r"images/s|sec(?:onds)?/epoch|wall-?clock|step|epoch|iter\w*|time)\b",
    re.IGNORECASE,
)


def _list_behind(m: re.Match[str]) -> Verdict | None:
    """Return straggler for a list of figures: one member far behind the rest (a list per
    member) or a series whose last figures stay worse (a list over time)."""
    label = re.split(r"[:=\n]", m.string[max(0, m.start() - 60) : m.start()])[-1]
    after = m["after"]
    values = [number(v) for v in re.findall(r"\d+(?:\.\d+)?", m["items"])]
    timed = sentence_kind(label) is not False and (
        "%" not in m["items"]
        and (
            re.search(r"\b(?:s|sec|ms|time|wall-?clock)\b|\(s\)", label, re.I)
            or bool(re.search(r"\d\s*m?s\b", m["items"]))
        )
    )
    if explained(m.string) or min(values) <= 0:
        return None
    if _OTHER_LABEL.search(label) or not (_SPEED_LABEL.search(label) or timed):
        return None  # `train loss per epoch`, `GPU memory used (GB) per rank`: no speed
    if _PER_MEMBER.search(label) or _PER_MEMBER.search(after):
        rates = [(str(n), 1 / v if timed else v) for n, v in enumerate(values)]
        return slow_member(K.JOB) if slow_peer(rates, MIN_LINE_PEERS + 1) is not None else None
    if not _OVER_TIME.search(label):
        return None
    times = values if timed else [1 / v for v in values]
    slow = step_time_slowdown(times)
    return SLOWED if slow is not None or step_time_drift(times) is not None else None


_PEER_WORDS = (
    "other|rest|peers|siblings|neighbour|neighbor|twin|everyone else|vs|versus|against|compared|"
    "devices|identical|three|four|two|"
    "ranks|gpus|nodes|hosts|"
    "workers|cards|pods|median|他は|他の|其他|其余|其它|다른|demás|otros|otras|outros|outras|demais|"
    "anderen|übrigen|autres|altri|altre|остальн|други|против|lain|diğer|pozostał|andere|khác"
)
_PEER_NEEDLES = tuple(_PEER_WORDS.split("|"))
"""The words that name the peers or set a member against them (the member rules' gate)."""


MEMBER_RULES: tuple[Rule, ...] = (
    rule(
        "figures.member_behind_peers",
        _MEMBER_FIGURES.pattern,
        _PEER_NEEDLES,
        f"A named member's speed given against its peers', {PEER_GAP_PCT:g} % worse (`GPU4 "
        "takes 1.7s/step while the other five take 1.1s/step`): in a synchronous job every "
        "other member waits for it at each step.",
        judge=_member_figures,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.member_percent_behind",
        _MEMBER_PERCENT.pattern,
        ("longer", "slower", "more time", "fewer", "less", "lower", "higher", "greater", "larger"),
        f"A member said to take at least {PEER_GAP_PCT:g} % longer (or give that much less) "
        "than its peers: the others wait for it at each step.",
        judge=_member_percent,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.member_factor_behind",
        _MEMBER_FACTOR.pattern,
        ("longer", "slower", "as long", "倍", "after", "behind", "later than"),
        "A member said to take a factor longer than its peers (`1.7x longer than its 7 "
        "siblings`, `他の 1.6 倍`) or to finish a measured time after them: the straggler the "
        "others wait for.",
        judge=_member_factor,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.peers_then_member",
        _PEERS_FIRST.pattern,
        (
            *(" of ", "只", "仅有", "才", "だけ", "しか", "만", "two ", "three ", "four "),
            *("five ", "six ", "seven ", "the other", "the rest"),
        ),
        f"The peers' speed said first, then a member's {PEER_GAP_PCT:g} % worse (`7 of the 8 "
        "A100s do ~250 TFLOPS, GPU 2 only manages ~140`; `只有 30 MH/s，其他 ... 61 MH/s`): the "
        "others wait for it at each step.",
        judge=_peers_first,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.half_of_peers",
        _HALF_OF_PEERS.pattern,
        (
            *("他の", "其他", "其余", "别的", "다른", "나머지", "вдвое", "halb so", "mitad"),
            *("metade", "moitié", "metà"),
        ),
        "A member said to reach half its peers' speed, in Japanese, Chinese, Korean, Russian, "
        "German, Spanish, Portuguese, French or Italian: the straggler the others wait for.",
        judge=_half_of_peers,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.members_listed",
        _LISTED.pattern,
        (*(f"r{n}" for n in range(10)), "rank", "gpu", "node", "worker", "host", "pod"),
        "Members' figures listed on one line, one far behind the others (`r0 212ms r1 209ms r3 "
        "355ms`, `host-a 1480, host-d 910`): the others wait for it at each step.",
        judge=_listed,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.list_behind",
        _LIST.pattern,
        (
            *("epoch", "step", "iter", "per", "wall", "s/it", "it/s", "throughput", "mfu"),
            *("token", "sample", "rank", "host", "gpu", "node", "worker", "pod", "device", "time"),
        ),
        "A label and four or more figures: per member, one far behind the rest (`per-rank step "
        "(s): [1.21, 1.20, 1.98, 1.21]`); over time, the last ones staying worse (`sec/epoch: "
        "301, 298, 460, 472`).",
        judge=_list_behind,
    ),
)
"""Members against their peers: before the step-time readers, which take a line that says
`step time 1.38s` as one healthy step."""
