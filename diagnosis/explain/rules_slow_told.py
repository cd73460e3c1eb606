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
from diagnosis.explain.explained import explained, sentence_at
from diagnosis.explain.happening import denied_within, live
from diagnosis.explain.quantities import figures
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_figures import PAST, PRESENT
from diagnosis.explain.rules_slowdown import SLOWDOWN_RATIO
from diagnosis.explain.rules_slowness import slowed
from diagnosis.explain.rules_straggler import slow_member
from diagnosis.model import ComponentKind as K

# the first stretch of work timed, then a later one (`the next 500`, `Episodes 900-1000`)
_FIRST_THEN_LATER = re.compile(
    r"(?P<first>\b(?:the\s+)?(?:first|initial)\b[^.;\n]{0,60}?)(?:[.;,]\s*|\s+(?:and|but|while)\s+)"
    r"(?P<later>(?:the\s+)?(?:next|following|last|later|then|after\s+that|(?:[A-Za-z]+\s+)?\d[\d,]*"
    r"\s*(?:[-–]|to)\s*\d[\d,]*|(?:around|by|at|after|from)\s+(?:frame|step|epoch|iteration|episode"
    r"|batch|image|target)\s+\d+)\b[^.;\n]{0,60})",
    re.IGNORECASE,
)
_UNIT_OF_WORK = r"(?:epochs?|steps?|iter\w*|episodes?|batch(?:es)?|frames?|samples|images|targets?)"
_COUNT = re.compile(
    rf"(?P<low>\d[\d,]*)\s*(?:[-–]|to)\s*(?P<high>\d[\d,]*)|(?P<n>\d[\d,]*)\s+{_UNIT_OF_WORK}\b"
    rf"|\b{_UNIT_OF_WORK}\s+(?P<low2>\d[\d,]*)\s*(?:[-–]|to)\s*(?P<high2>\d[\d,]*)",
    re.IGNORECASE,
)
_POINT_IN_TIME = re.compile(
    r"\b(?:at|by|after|into)\s+[~≈]?\d+(?:\.\d+)?\s*[a-z]+|\b[~≈]?\d+(?:\.\d+)?\s*[a-z]+\s+(?:into|in)\s+"
    r"the\s+run\b",
    re.IGNORECASE,
)
"""A time since the start (`at 9 hours`, `20 minutes into the run`): a moment, not a stretch."""


def _count(clause: str) -> float | None:
    """The amount of work a clause times (`500 steps`, `Episodes 900-1000`, `steps 500 to
    1000`), or None when it names none."""
    m = _COUNT.search(clause)
    if m is None:
        return None
    low, high = m["low"] or m["low2"], m["high"] or m["high2"]
    if low is not None and high is not None:
        span = float(high.replace(",", "")) - float(low.replace(",", ""))
        return span if span > 0 else None
    return float(m["n"].replace(",", ""))


def _first_then_later(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning when the later stretch took SLOWDOWN_RATIO times the first,
    per unit of work when both name theirs; a moment since the start is no stretch."""
    if _POINT_IN_TIME.search(m["first"]) or _POINT_IN_TIME.search(m["later"]):
        return None
    first, later = figures(m["first"]), figures(m["later"])
    if len(first) != 1 or len(later) != 1 or first[0] <= 0 or _stopped_or_explained(m.string):
        return None
    work_first, work_later = _count(m["first"]), _count(m["later"])
    if work_first and work_later:  # `the first 10 epochs 1 h, the next 50 epochs 5 h`: one pace
        return _slower(later[0] / work_later, first[0] / work_first)
    return _slower(later[0], first[0])


def _slower(now: float, then: float) -> Verdict | None:
    return slow_member(K.JOB) if then > 0 and now >= SLOWDOWN_RATIO * then else None


_STALLED = re.compile(
    r"\b(?:stuck|hung|hangs?|hanging|frozen|freezes?|deadlock\w*|died|crash\w*|killed|no\s+step"
    r"|no\s+(?:new\s+)?logs?|nothing\s+(?:moves|progresses|since)|(?:error|exception|timeout|watchdog)"
    r"\b)|\bto\s+a\s+halt\b|colgad|bloqu|завис|卡住|止ま|멈",
    re.IGNORECASE,
)
"""A stop, a crash or an error on the same line: that is what the line reports, not a slowdown."""
_MORE_WORK = re.compile(
    r"\b(?:rais|increas|add|doubl|extend|bump)\w*\s+(?:the\s+|more\s+)?(?:\w+\s+)?(?:max_)?(?:epochs?"
    r"|data(?:set)?|samples|steps|iterations)\b|\bas\s+planned\b|\bon\s+(?:track|schedule)\b",
    re.IGNORECASE,
)
"""More work asked for, or a plan kept: a longer ETA or a longer stretch said to be expected."""


def _stopped_or_explained(text: str) -> bool:
    """Whether the text reports a stop or a crash, or explains the time away."""
    return bool(_STALLED.search(text) or _MORE_WORK.search(text) or explained(text))


_ETA = re.compile(
    r"\bETA\b[^.\n]{0,30}?\b(?P<words>keeps?|kept)\s+(?:moving|slipping|growing|increasing|rising"
    r"|going\s+up|getting\s+(?:later|longer))"
    r"|\bETA\b(?P<quoted>.{0,200})",
    re.IGNORECASE | re.DOTALL,
)
_STARTED = re.compile(r"\b(?:started|were|at\s+first|initially)\b", re.IGNORECASE)
"""Words of an earlier ETA beyond rules_figures.PAST (`ETA started at 3 days`)."""
_NOT_A_RUN = re.compile(
    r"\bper\s+epoch\b|\bthis\s+epoch\b|\bfor\s+the\s+whole\b|\b(?:RMA|part|parts|delivery|ship\w*"
    r"|order|ticket|vendor|support)\b",
    re.IGNORECASE,
)
"""An ETA of something else than the run (an epoch beside the whole run, a part, an RMA)."""


_DAYS = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:more\s+)?days?\b", re.IGNORECASE)


def _eta_times(text: str) -> list[float]:
    """An ETA's times in seconds, days included (an ETA is said in days as often as in hours)."""
    days = [float(d) * 86400 for d in _DAYS.findall(text)]
    return days + figures(text) if days else figures(text)


def _eta_slips(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on an ETA said to slip, or quoted before and after `now` and
    longer after it, when it is the run's and no stop, crash or added work explains it."""
    if _stopped_or_explained(m.string) or _NOT_A_RUN.search(m.string):
        return None
    if m["words"]:
        return slow_member(K.JOB)
    quoted = m["quoted"]
    now = PRESENT.search(quoted)
    if now is None or not (
        PAST.search(quoted, 0, now.start()) or _STARTED.search(quoted, 0, now.start())
    ):
        return None  # no earlier figure said before the one of now
    before, after = _eta_times(quoted[: now.start()]), _eta_times(quoted[now.start() :])
    if not before or not after:
        return None
    return _slower(after[-1], before[0])


_OTHERS_WAIT = re.compile(
    # Chinese: the others wait for one card (`其他7张卡跑完一个epoch都要等3号卡`)
    r"(?:其他|其余|别的)\s*\d*\s*(?:张|块|个|台)?\s*(?:卡|GPU|节点|机器|rank)[^。！？]{0,24}?等(?:待)?"
    r"[^。！？]{0,6}?(?:号卡|卡|节点|机器|rank|GPU|它)"
    # Japanese: only one member is slow at its work, the others are kept waiting
    r"|(?:ノード|GPU|カード|ランク|サーバー?|マシン|(?<![A-Za-z])[A-Za-z]{1,12}\d{1,4})だけ[^。]{0,12}?"
    r"(?:処理|学習|速度|ステップ|計算|エポック)[^。]{0,8}?遅[いく]|他の(?:ノード|GPU|カード|ランク)[^。]{0,30}?待たされ"
    # Korean: only one member at half, the others wait for one
    r"|(?:한\s*(?:장|대|개)|(?<![A-Za-z])[A-Za-z]{1,12}[-\d]*\d|\d+번)만[^.。]{0,15}?(?:절반|느려)"
    r"|(?:다른|나머지)[^.。]{0,24}?(?:GPU|노드|카드|랭크|\d+번)[^.。]{0,10}?기다"
    # Russian: N times longer than the rest
    r"|в\s+(?:два|три|полтора|\d+(?:[.,]\d+)?)\s+раза\s+(?:дольше|медленнее)\s+(?:чем\s+)?(?:у\s+)?"
    r"остальн\w*"
    # German: the run waits for one member
    r"|\bwarte[nt]\b[^.\n]{0,30}?\bauf\s+(?:Rank|GPU|Knoten|Node|Karte|Worker)\s*\d"
    r"|\bauf\s+(?:Rank|GPU|Knoten|Node|Karte|Worker)\s*\d+\s+warte[nt]\b"
    # French, Spanish, Portuguese, Italian: one member always the last, the others wait for it
    r"|\b(?:GPU|rang|n(?:œ|oe)ud|carte|worker|serveur)\s*\d*\s+(?:est|arrive|finit|termine)?\s*toujours"
    r"\s+(?:le\s+dernier|la\s+dernière)\b"
    r"|\bles\s+autres\s+l['’]attendent\b"
    r"|\b(?:GPU|rank|nodo|tarjeta|servidor)\s*\d*\s+(?:es|va|queda|termina|llega)?\s*siempre\s+"
    r"(?:es\s+|va\s+|queda\s+|termina\s+|llega\s+)?(?:el\s+último|la\s+última)\b"
    r"|\blos\s+demás\s+(?:la|lo)\s+esperan\b"
    r"|\b(?:GPU|rank|nó|placa|servidor)\s*\d*\s+(?:é|fica|termina|chega)?\s*sempre\s+"
    r"(?:é\s+|fica\s+|termina\s+|chega\s+)?(?:o\s+último|a\s+última)\b"
    r"|\b(?:termin|acab|fica)\w*[^.\n]{0,40}?\bmuito\s+depois\s+d(?:os|as)\s+outr[oa]s\b"
    r"|\b(?:GPU|rank|nodo|scheda|server)\s*\d*\s+(?:è|arriva|finisce)?\s*sempre\s+(?:l['’]|il\s+|la\s+)"
    r"ultim[oa]\b"
    r"|\bgli\s+altri\s+(?:la|lo)\s+aspettano\b"
    # Indonesian: one member always the slowest, the other members wait
    r"|\bselalu\s+paling\s+lambat\b|\b(?:GPU|node|rank|kartu|server)\s+(?:lain|lainnya)\s+(?:sudah\s+)?"
    r"selesai\b[^.\n]{0,40}?\bmenunggu\b",
    re.IGNORECASE,
)
_NORMAL_ELSEWHERE = re.compile(
    r"(?<!不)正常|(?<!не\s)нормально|\bnormal(?:e|mente)?\b|\bwie\s+erwartet\b|\bcomme\s+prévu\b"
    r"|예정대로|정상|予定通り|想定",
    re.IGNORECASE,
)


_EVERY_TIME = re.compile(
    r"\b(?:every|each|always|again|consistently|jede[mnrs]?|immer|ständig|chaque|toujours|cada"
    r"|siempre|sempre|ogni|setiap|selalu|каждый|каждом|всегда)\b|每|都|毎回|いつも|매|항상|계속",
    re.IGNORECASE,
)
_A_WAIT = re.compile(r"等|待|기다|wart|attend|esper|aspett|menunggu", re.IGNORECASE)
_ONCE = re.compile(
    r"\bnur\s+einmal\b|\bonly\s+once\b|\bune\s+seule\s+fois\b|只有一次|一度だけ", re.IGNORECASE
)


def _others_wait(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on one member the others wait for, every time, unless the
    text says it stopped, crashed or is normal (a wait once is a start-up, not a straggler)."""
    if _stopped_or_explained(m.string) or _NORMAL_ELSEWHERE.search(m.string):
        return None
    waited = _A_WAIT.search(m[0]) is not None
    if waited and (not _EVERY_TIME.search(m.string) or _ONCE.search(m.string)):
        return None
    return slow_member(K.GPU)


# another's figures better than the speaker's (`your benchmarks ... are much better than mine`,
# `This throughput is quite higher than ours`), or the speaker a figure slower (`I am basically
# 50% slower on all benchmarks`)
_OTHERS_FASTER = re.compile(
    r"\b(?:better|higher|faster|quicker)\s+than\s+(?:ours|mine)\b"
    r"|\b(?:I\s+am|I'm|we\s+are|we're)\s+(?:\w+\s+)?(?:\d+(?:\.\d+)?\s*(?:%|percent)"
    r"|\d+(?:\.\d+)?\s*(?:x|times))"
    r"\s+slower\b",
    re.IGNORECASE,
)
_SPEED_WORD = re.compile(
    r"\b(?:throughput|speed|benchmarks?|performance|perf|it/s|samples?/s\w*|tokens?/s\w*"
    r"|images?/s\w*|FLOPS|TFLOPS|MFU|fps)\b",
    re.IGNORECASE,
)
_NOT_SPEED = re.compile(
    r"\b(?:loss|accuracy|acc|score|perplexity|ppl|reward|memory|time|latency|duration|price"
    r"|cost|temperature)\b",
    re.IGNORECASE,
)


def _told_now(m: re.Match[str]) -> bool:
    """Whether the words at `m` tell a slowdown happening now (happening.live) that the text
    does not explain away (explained)."""
    return live(m) and not explained(m.string)


# a speed said to have regressed (`an ~11% MLPerf throughput regression`, `training speed
# regressed by 20%`)
_REGRESSION = re.compile(
    r"\b(?:throughput|performance|perf|training\s+speed|speed|tokens?/s\w*|samples?/s\w*|MFU"
    r"|TFLOPS|step\s+time|iteration\s+time)\s+(?:regressions?\b(?!\s+(?:tests?|suites?|checks?"
    r"|benchmarks?|detection|dashboards?))|regressed\b)",
    re.IGNORECASE,
)


# a published speed the speaker cannot reach (`I'm not able to reproduce the throughput numbers
# quoted in the repo`, `we cannot match the MFU reported in the paper`)
_BELOW_PUBLISHED = re.compile(
    r"\b(?:not\s+able\s+to|unable\s+to|can(?:no|')t|could(?:n't|\s+not)|fail(?:ed|ing|s)?\s+to)\s+"
    r"(?:reproduce|repoduce|replicate|reach|match|achieve|get\s+(?:close\s+to|near))\s+(?:the\s+)?"
    r"(?:\w+\s+){0,2}?(?:throughput|performance|speed|MFU|TFLOPS|tokens?/s\w*|samples?/s\w*)"
    r"(?:\s+(?:numbers?|figures?|results?))?(?:\s+(?:quoted|reported|published|claimed|listed"
    r"|mentioned|shown|stated))?\s+(?:in|on|from|by|of)\s+(?:the\s+)?(?:repo\w*|README|paper"
    r"|docs?|documentation|blog|benchmarks?|table|model\s+card)\b",
    re.IGNORECASE,
)


_PURPOSE = re.compile(r"\W*(?:to|in\s+order\s+to)\s+\w+\b", re.IGNORECASE)
"""A sentence that opens with its purpose (`To catch throughput regressions early ...`)."""


def _regressed(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on a speed said to have regressed now, unless the text
    explains it or opens with its purpose (`To catch throughput regressions early, ...`)."""
    if _PURPOSE.match(sentence_at(m)) or not _told_now(m):
        return None
    return slowed(sentence_at(m))


# GPUs said idle between steps (`a lot of GPU idle time between each iteration`): fed too slowly
_IDLE_BETWEEN = re.compile(
    r"\bGPUs?\s+(?:\w+\s+){0,2}?idl(?:e|ing)\s+(?:time\s+)?(?:between|in\s+between)\s+(?:each\s+|the\s+|two\s+)?"
    r"(?:iterations?|steps?|batch(?:es)?|epochs?)\b",
    re.IGNORECASE,
)
# a collective's bandwidth said below its link (`busbw is 50, theoretical busbw should be 200`,
# `only 9.84 GB/s, which is far away from the link bandwidth`)
_BELOW_LINK = re.compile(
    r"\b(?:busbw|bus\s*bandwidth|algbw|bandwidth)\b(?:[^.\n]|\.(?=\d)){0,100}?\b(?:theoretical"
    r"|link\s+bandwidth"
    r"|line\s+rate|link\s+speed|wire\s+speed)\b",
    re.IGNORECASE,
)
_LOW = re.compile(
    r"\b(?:only|far|lower|less|below|short\s+of|should\s+be|a\s+fraction)\b", re.IGNORECASE
)
_NEAR_LINK = 0.8
_HAVE_WANT = re.compile(
    r"\b(?:is|are|of|gets?|got|reaches?|reached)\s+(?:only\s+)?~?(?P<have>\d+(?:\.\d+)?)\s*"
    r"(?P<have_unit>[GMT]?B/s|[GMT]?b(?:/s|ps)|[GMT]b)?\b[^.\n]{0,80}?"
    r"\bshould\s+be\s+(?:about\s+|around\s+|~)?(?P<want>\d+(?:\.\d+)?)\s*"
    r"(?P<want_unit>[GMT]?B/s|[GMT]?b(?:/s|ps)|[GMT]b)?",
    re.IGNORECASE,
)


_ACCEPTED = re.compile(
    r"\bwill\s+always\s+be\b|\bwhich\s+is\s+(?:fine|ok|okay|expected|normal|acceptable)\b"
    r"|\bnegligible\b",
    re.IGNORECASE,
)


_CAUSE = re.compile(
    r"\b(?:because|since|due\s+to|of\s+course|as\s+you\s+(?:use|have))\b", re.IGNORECASE
)
"""A comparison that gives its own cause (`because you use NVLink`, `so of course`): explained."""


def _in_bytes(figures: re.Match[str], which: str) -> float:
    """A figure of `_HAVE_WANT` in bytes: one given in bits (`400 Gb/s`, `200Gbps`) over 8."""
    unit = figures[f"{which}_unit"] or ""
    value = float(figures[which])
    return value / 8 if "b" in unit else value


def _fed_slowly(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on GPUs said idle between steps, said now (not denied inside
    the words: `the GPUs are never idle between steps`) and not explained."""
    if denied_within(m) or _ACCEPTED.search(sentence_at(m)):
        return None
    if not _told_now(m):
        return None
    return slowed(sentence_at(m))


def _below_link(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning on a collective's bandwidth said below its link's: a word of
    lowness in the sentence, a figure below the one it should be when both are given."""
    sentence = sentence_at(m)
    if not _LOW.search(sentence) or not _told_now(m):
        return None
    if _ACCEPTED.search(sentence):
        return None  # (`will always be lower than the theoretical`, `which is fine`)
    figures = _HAVE_WANT.search(sentence)
    if figures is not None and _in_bytes(figures, "have") >= _NEAR_LINK * _in_bytes(
        figures, "want"
    ):
        return None  # (within a fifth of the link: a collective's usual overhead)
    return slowed(sentence)


def _others_faster(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning where the sentence compares speeds (a rate, a benchmark; not
    a loss, a time or a price, whose higher is not faster), says it now, and the text does not
    explain it."""
    sentence = sentence_at(m)
    before = m.string[max(0, m.start() - 30) : m.start()]
    if not _SPEED_WORD.search(sentence) or _NOT_SPEED.search(before) or _CAUSE.search(sentence):
        return None
    if not _told_now(m):
        return None
    return slowed(sentence)


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
            *(
                "wartet",
                "warten",
                "toujours",
                "les autres",
                "siempre",
                "los demás",
                "sempre",
                "muito depois",
            ),
            *("gli altri", "selalu", "menunggu", "기다", "느려", "절반"),
        ),
        "The others finish and wait for one member, or one member is always the last or a "
        "factor slower than the rest (in ten languages): the straggler they wait for.",
        judge=_others_wait,
        flags=re.IGNORECASE,
    ),
    rule(
        "told.below_published",
        _BELOW_PUBLISHED.pattern,
        ("able to", "unable", "not", "n't", "fail"),
        "A published speed the speaker says they cannot reach (`not able to reproduce the "
        "throughput numbers quoted in the repo`): the job runs below what the same setup gives.",
        judge=_regressed,
        flags=re.IGNORECASE,
    ),
    rule(
        "told.speed_regressed",
        _REGRESSION.pattern,
        ("regress",),
        "A speed said to have regressed (`an ~11% MLPerf throughput regression between two "
        "tags`): the job runs slower than it did.",
        judge=_regressed,
        flags=re.IGNORECASE,
    ),
    rule(
        "told.gpus_idle_between_steps",
        _IDLE_BETWEEN.pattern,
        ("idle",),
        "GPUs said idle between steps (`a lot of GPU idle time between each iteration`): they "
        "wait for their input (the data loader, storage, the CPU); the job runs below its speed.",
        judge=_fed_slowly,
        flags=re.IGNORECASE,
    ),
    rule(
        "told.below_link_bandwidth",
        _BELOW_LINK.pattern,
        ("theoretical", "link bandwidth", "line rate", "link speed", "wire speed"),
        "A collective's bandwidth said below its link's (`busbw is 50, theoretical busbw should be "
        "200`, `far away from the link bandwidth`): the collectives, and the job, run slower "
        "than the fabric allows.",
        judge=_below_link,
        flags=re.IGNORECASE,
    ),
    rule(
        "told.others_faster",
        _OTHERS_FASTER.pattern,
        ("than ours", "than mine", "slower"),
        "Another's figures said better than the speaker's (`your benchmarks are much better than "
        "mine`, `This throughput is quite higher than ours`), or the speaker a figure slower "
        "(`I am 50% slower on all benchmarks`): the job runs slower than it should.",
        judge=_others_faster,
        flags=re.IGNORECASE,
    ),
)
