"""Speed figures compared in one sentence: a speed that changed.

Short reports of a slowdown give two figures of one speed, in any language, and say how they
relate; these rules read the figures and the relation, not the phrasing around them:

- **a speed that changed** (``figures.speed_changed``, ``figures_slowed``): two or more figures
  of one speed with a sign of change (``->``, ``from X to Y``, then, now, since, at launch;
  ``变成``, ``von X auf Y``, ``de X à Y``, ``da X a Y``, ``с X до Y``, ``xuống còn``,
  ``menjadi``, ``이후``, ``van X naar Y``, ...); a figure against its baseline (``current=381k
  baseline=512k``, ``1840 (7d baseline 1210)``, ``7-day avg``, ``fleet_median``); figures
  marked as past and present in either order (``2.1s now; it was 1.3s yesterday``); a figure
  before ``instead of`` in ten languages, or ``down to X from Y``. A speed is a time per step,
  iteration, batch or epoch (the sentence must name one, in a dozen languages) or a rate
  (samples, tokens or images a second, steps a second, TFLOPS, the model's FLOPs utilisation).
  The last time ``SLOWDOWN_RATIO`` times the lowest before it, or the last rate
  ``RATE_DROP_PCT`` below the highest before it, is a slowdown that stayed. A number without a
  unit counts when the speed is named just before it (``s/it ... 1.3 at start -> 5.0``) or a
  figure of the same magnitude has one (``~5.1k tok/s before, ~2.4k after``); thousands
  separators, decimal commas, k and M suffixes and ranges are read.
- **a percentage** said of a rate or a step time in any of the languages (``tps dropped 18%``,
  ``慢了大概 15%``, ``%15 daha yavaş``), **a rate halved, a time doubled, an ETA that keeps
  growing**.

A member against its peers is rules_member_figures'; the named members and their peers are
``members``'; the kind of speed a sentence names (``sentence_kind``) is here.

Guarantees: a period is no step time (``over ~6 hours``, ``12h later``, ``for 30m``), nor is a
timeout, an interval, a start-up, a save or a ping; counts, steps, ids, versions, months and
model names are no figures, and a number said of another quantity (a loss, memory, a
temperature) is none; figures of setups compared (``vs``, batch sizes, GPU models, precisions,
model sizes, GPU counts, versions, a target) are no change; a sentence the speaker explains
away (explained.EXPLAINED, ``because we ...`` in seven languages, a trade-off, a warm-up,
a member's own extra work) is silent; a time that falls or a rate that rises is never a
slowdown; a judge reads its line once however many matches ask (hostile lines stay linear).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import SENTENCE, came_back, explained, said_planned
from diagnosis.explain.members import MEMBER, PEERS, member_kind
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_slowdown import (
    COMPARED,
    RATE_DROP_PCT,
    SLOWDOWN_RATIO,
    SLOWED,
)
from diagnosis.explain.rules_straggler import slow_member
from diagnosis.explain.rules_straggler_words import PEER_GAP_PCT
from diagnosis.explain.speed_figures import (
    NOT_A_STEP,
    NUM,
    Figure,
    number,
    slowed,
    speed_figures,
    step_figures,
)

# a sign that the figures are one speed over time
_CHANGED = re.compile(
    r"->|→|=>|⟶|\bfrom\s+(?:about\s+|around\s+|roughly\s+|~)?[~≈]?\d[\d.,]*[^.\n]{0,30}?\bto\s+"
    r"(?:about\s+|around\s+|roughly\s+|approximately\s+|only\s+|under\s+|over\s+|almost\s+"
    r"|nearly\s+|just\s+)?[~≈]?\d"
    # times of day and stages of the run (`at 11am ... by 3pm`, `first half ... second half`,
    # `at 10k steps ... at 20k`)
    r"|\b(?:by|until)\s+\d{1,2}(?::\d\d)?\s*(?:am|pm)\b"
    r"|\b(?:first|second|last)\s+half\s+of\s+(?:the\s+|every\s+|each\s+)?(?:run|training|job)\b"
    r"|\bat\s+\d+k?\s+(?:steps?|iter\w*|epochs?)\b|\bstarted\s+(?:at|with|out\s+at)\b"
    r"|\brerun\b|\bon\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
    r"|\bthe\s+first\s+\w+\s+(?:took|takes?|were|was|ran|runs?|did)\b"
    # successive runs of the same work (`the 1st call runs at 315 fps, the 2nd at 275`, `epoch
    # 1: 3.1 it/s, epoch 2: 2.7 it/s`)
    r"|\b1st\b[^.\n]{0,80}?\b2nd\b"
    r"|\b(?P<nth>epoch|run|call|pass|round|attempt)\s?#?1\b[^\n]{0,60}?\b(?P=nth)\s?#?2\b"
    r"|\b(?:then|now|after|afterwards|later|since|until|became|becomes|become|went|goes|gone|"
    r"drop\w*|fell|fall\w*|rose|rises|increas\w*|decreas\w*|grew|grows|climb\w*|creep\w*|"
    r"crept|jump\w*|halv\w*|doubl\w*|initially|overnight|staircase|stay\w*|stuck|"
    r"at\s+(?:the\s+)?(?:start|launch|first|beginning)|used\s+to|before|resum\w*)\b"
    r"|变成|变为|变到|降到|降至|降为|掉到|升到|涨到|之后|以后|后来|现在|一开始|开始时|最初"
    # (the steps after, not `below`: `详细日志放在后面`)
    r"|(?:后面|后续)(?=[^。！？，,\n]{0,6}?(?:每|step|步|iter|epoch|轮|的?(?:时间|速度|耗时)|\d))"
    r"|から|その後|今は|最初は|以降|になり|になって|後に|後には|直後|에서|이후|처음|지금은|나중에"
    r"|\bvon\s+[~≈]?\d[^.\n]{0,20}?\bauf\b|\b(?:jetzt|danach|anfangs|zuerst|nach|fällt|sinkt|steigt)\b"
    r"|\b(?:de|da|dès)\s+[~≈]?\d[^.\n]{0,25}?\b(?:à|a|para)\s+[~≈]?\d"
    r"|\b(?:puis|maintenant|après|passe|tombe|chute|luego|después|depois|ahora|agora|cae|cai|"
    r"poi|dopo|ora|adesso|scende|resta)\b"
    r"|(?<![\w])(?:с|от)\s+[~≈]?\d[^.\n]{0,25}?(?:до|на)\s+[~≈]?\d|(?<![\w])(?:потом|после|сейчас|"
    r"теперь|сначала|упал\w*|пада\w*)(?![\w])"
    r"|\b(?:từ|xuống|còn|sau|bây\s+giờ|ban\s+đầu|dari|menjadi|jadi|sekarang|awalnya|setelah|"
    r"turun|sonra|şimdi|başta|düş\w*)\b"
    r"|จาก|เป็น|ตั้งแต่|ลดลง|(?<![\w])(?:من|إلى|ارتفع|انخفض|منذ)(?![\w])"
    r"|\bvan\s+[~≈]?\d[^.\n]{0,20}?\bnaar\b|\b(?:zakte|daalde|steeg|sinds)\b"
    r"|\b(?:od|z)\s+[~≈]?\d[^.\n]{0,20}?\b(?:do|na)\b|\b(?:teraz|spad\w*|wzr[oó]s\w*|od\s+wczoraj)\b",
    re.IGNORECASE,
)
# two configurations given (`bs32 -> 0.8 s/it, bs64 -> 1.5 s/it`): setups compared
_BATCHES = re.compile(
    r"\b(?:bs|batch[\s_-]*size|seq[\s_-]*len\w*|mbs|gbs)\s*[=:]?\s*\d+\b(?:[^.\n]|(?<=\d)\.(?=\d))*?"
    r"\b(?:bs|batch[\s_-]*size|seq[\s_-]*len\w*|mbs|gbs)\s*[=:]?\s*\d+\b",
    re.IGNORECASE,
)
# figures not in the order the speed changed (`X instead of Y`, `to X from Y`: other rules read
# them), or of setups compared rather than one job over time (`vs`, GPU models, batch sizes)
_NOT_IN_ORDER = re.compile(
    r"\bvs\.?(?!\s+(?:before|earlier|yesterday|baseline))|\bversus\b|\bcompared\s+(?:to|with)\b"
    # (`more than 1 hour` is a bound, not a figure compared)
    r"|\brather\s+than\b|(?<!\bmore\s)(?<!\bless\s)(?<!\bfewer\s)\bthan\b"
    r"|\bto\s+[~≈]?\d[^.\n]{0,25}?\bfrom\s+[~≈]?\d|" + _BATCHES.pattern,
    re.IGNORECASE,
)


# a figure against its baseline (`current 2210ms, baseline 1390ms`, `1840 (7d baseline 1210)`,
# `150 MB/s vs 4 GB/s normal`, `3.1s vs 2.0s median across 32 pods`): the baseline is the past
_BASELINE_WORD = re.compile(
    r"(?:\b|_)(?:(?:\d+\s*[dhw]|\d+-day)\s+)?(?:baseline|usual|normal|typical|median)(?:_\w+)?\b"
    r"|\b\d+\s*[dhw]\s+(?:avg|average|mean)\b|\b\d+-(?:day|week|hour)\s+(?:avg|average|mean)\b",
    re.IGNORECASE,
)
_TO_FROM = re.compile(
    r"\b(?:down|up|dropped|fell|rose|grew|climbed)\s+to\s+(?P<now>~?\d[\d.,]*\s*[^\s,;]*)\s+from\s+"
    r"(?P<then>~?\d[\d.,]*\s*[^\s,;]*)",
    re.IGNORECASE,
)
_PERCENTILES = re.compile(r"\bp(?:9[05]|99|50|999)\b|\bpercentile", re.IGNORECASE)
_SAID_NUMBER = re.compile(rf"(?P<num>{NUM})(?P<k>[kKM](?![a-zA-Z]))?")
# the figure first, the past after a word that says it came before (`2,4 s statt 1,6 s`)
_INSTEAD = re.compile(
    r"\binstead\s+of\b|\b(?:an)?statt\b|\bau\s+lieu\s+de\b|\ben\s+(?:lugar|vez)\s+de\b|"
    r"\bem\s+vez\s+de\b|\bao\s+inv[eé]s\s+de\b|\binvece\s+di\b|(?<![\w])вместо(?![\w])|"
    r"\bzamiast\b|\byerine\b|\bthay\s+vì\b|而不是|而非|代わりに|대신"
    # `run at 30mhs rather than ~68mhs`: a figure against the one it should be
    r"|\brather\s+th[ae]n(?=\s*[~≈]?\d)",
    re.IGNORECASE,
)


def _said_after(sentence: str, at: int, timed: bool) -> Figure | None:
    """The figure given just after `at` (within a few characters, an `=` or `:` allowed), read
    as the kind of the sentence's figures."""
    m = re.match(r"\W{0,4}", sentence[at:])
    said = _SAID_NUMBER.match(sentence, at + (m.end() if m else 0))
    if said is None:
        return None
    return Figure(said.start(), number(said["num"], said["k"]), timed)


def _against_baseline(sentence: str) -> bool:
    """Whether the sentence gives a figure worse than its baseline (the baseline is the past)."""
    if not _BASELINE_WORD.search(sentence):
        return False
    figures = speed_figures(sentence)
    for word in _BASELINE_WORD.finditer(sentence):
        if "median" in word[0].lower() and _PERCENTILES.search(sentence):
            continue  # `p99 1.9s, median 1.0s`: one run's spread, not its past
        after = next((f for f in figures if word.end() <= f.at <= word.end() + 6), None)
        before = next(
            (f for f in reversed(figures) if word.start() - 15 <= f.at < word.start()), None
        )
        kind = sentence_kind(sentence)
        said = _said_after(sentence, word.end(), kind) if kind is not None else None
        then = after or said or before
        if then is None:
            continue
        said_now = _current_figures(sentence, then.timed, figures)
        if kind is not None and then is not before:
            said_now.extend(_said_before(sentence, word.start(), kind))
        now = next(
            (f for f in [*said_now, *figures] if abs(f.at - then.at) > 2 and f.timed is then.timed),
            None,
        )
        if now is not None and slowed([then, now]):
            return True
    return False


def _said_before(sentence: str, at: int, timed: bool) -> list[Figure]:
    """The number said last before `at` (`= 1.02M, baseline ...`, `=1840 (7d baseline`)."""
    said = list(_SAID_NUMBER.finditer(sentence[max(0, at - 25) : at]))
    if not said:
        return []
    last, offset = said[-1], max(0, at - 25)
    return [Figure(offset + last.start(), number(last["num"], last["k"]), timed)]


def _current_figures(sentence: str, timed: bool, figures: Sequence[Figure]) -> list[Figure]:
    """Figures said after `current` or `now` (`current=381k`, `current 402ms`), bare or not."""
    found = []
    for word in re.finditer(r"\b(?:current(?:ly)?|now)\b", sentence, re.IGNORECASE):
        near = [f for f in figures if word.end() <= f.at <= word.end() + 6]
        said = near[0] if near else _said_after(sentence, word.end(), timed)
        if said is not None:
            found.append(said)
    return found


_TIME_WORDS = re.compile(
    r"\b(?:step|iter(?:ation)?|batch|epoch)[\s_-]*tim\w*|\btime\s+per\b|\b(?:s|sec|ms)/(?:it|step|"
    r"iter|epoch)\b|\bsec(?:onds)?\s+per\b|\bwall-?clock\b",
    re.IGNORECASE,
)
_RATE_WORDS = re.compile(
    r"\bthroughput|tokens?(?:/s|_per_sec)|toks?/s|samples?(?:/s|_per_sec)|\bit/s\b|steps?/s|"
    r"steps_per_second|\b[GT]FLOP|\bMFU\b|\bHFU\b|\btps\b|\bwps\b|img/s|images/s",
    re.IGNORECASE,
)


def sentence_kind(sentence: str) -> bool | None:
    """Whether the speed a sentence names is a time (True), a rate (False), or neither/both."""
    timed, rated = _TIME_WORDS.search(sentence), _RATE_WORDS.search(sentence)
    return None if bool(timed) == bool(rated) else bool(timed)


PAST = re.compile(
    r"\b(?:yesterday|before|earlier|previously|originally|last\s+(?:week|night|run|month)|"
    r"used\s+to\s+be|(?:it\s+)?was|(?:days?|weeks?|months?)\s+ago)\b|昨天|之前|以前|昨日|以前は|어제|gestern|vorher|hier|ayer|ontem|"
    r"ieri|вчера|раньше"
    # a run's first steps (`前45步时间正常0.7s左右`, `for the first 45 steps`)
    r"|前\s*\d+\s*(?:步|个?steps?|个?iters?|轮|个?epochs?)|\bfirst\s+\d+\s+(?:steps|iterations|iters"
    r"|epochs|batches)\b",
    re.IGNORECASE,
)
PRESENT = re.compile(
    r"\b(?:now|today|currently|this\s+(?:week|morning|run))\b|今天|现在|今日|今は|오늘|지금|heute|jetzt|"
    r"aujourd'hui|maintenant|hoy|ahora|hoje|agora|oggi|ora|сегодня|сейчас"
    # the steps after them (`后面每step时间基本在30s左右`, `afterwards`)
    r"|后来|往后|(?:后面|后续)(?=[^。！？，,\n]{0,6}?(?:每|step|步|iter|epoch|轮|的?(?:时间|速度|耗时)|\d))"
    r"|\b(?:afterwards|after\s+that|later\s+on)\b",
    re.IGNORECASE,
)


def _past_and_present(line: str) -> bool:
    """Whether a figure marked as now is worse than one marked as before, in either order
    (`Step time is 2.1s now; it was 1.3s yesterday`, `yesterday: 1.2 s/it, today: 2.6 s/it`)."""
    if not (PAST.search(line) and PRESENT.search(line)) or NOT_A_STEP.search(line):
        return False
    if _counts_differ(line) or COMPARED.search(line):
        return False
    figures = step_figures(line)
    then = [f for f in figures if _nearest_marker(line, f.at) is PAST]
    now = [f for f in figures if _nearest_marker(line, f.at) is PRESENT]
    return any(
        a.timed is b.timed and a is not b and slowed([a, b]) for a in then[:2] for b in now[:2]
    )


def _nearest_marker(line: str, at: int) -> re.Pattern[str] | None:
    """The marker (past or present) nearest the figure at `at`, within a few words; else the
    one kind of marker its own sentence holds (`Two days ago it took 10 minutes an image. Now
    ... 45 minutes.`)."""
    best: tuple[int, re.Pattern[str]] | None = None
    for marker in (PAST, PRESENT):
        for m in marker.finditer(line, max(0, at - 18), min(len(line), at + 18)):
            distance = at - m.end() if m.end() <= at else m.start() - at
            if best is None or distance < best[0]:
                best = (distance, marker)
    if best is not None:
        return best[1]
    start = max((b.end() for b in SENTENCE.finditer(line, 0, at)), default=0)
    stop = SENTENCE.search(line, at)
    end = stop.start() if stop else len(line)
    kinds = [marker for marker in (PAST, PRESENT) if marker.search(line, start, end)]
    return kinds[0] if len(kinds) == 1 else None


def _instead(sentence: str) -> bool:
    """Whether a figure said before `instead of` (in any language) is worse than the one after."""
    m = _INSTEAD.search(sentence)
    if m is None:
        return False
    figures = step_figures(sentence)
    now = [f for f in figures if f.at < m.start()]
    then = [f for f in figures if f.at >= m.end()]
    return bool(now and then) and now[-1].timed is then[0].timed and slowed([then[0], now[-1]])


_DIGIT = re.compile(r"\d")
# setups beyond rules_slowdown.COMPARED: model sizes, precisions, the speaker's own switch
_SETUPS = re.compile(
    # model sizes (`7B ... 13B`, `350M params`; not a rate's `~4M to ~1.5M`)
    r"\b\d+(?:\.\d+)?(?:B|M(?=\s*(?:param|model)))\b.*\b\d+(?:\.\d+)?(?:B|M(?=\s*(?:param|model)))\b"
    r"|\b(?:FP8|BF16|FP16|FP32|TF32)\b.*\b(?:FP8|BF16|"
    r"FP16|FP32|TF32)\b|\b(?:after|when|since)\s+(?:we\s+|I\s+)?(?:switch\w*|mov\w*|chang\w*|"
    r"enabl\w*|disabl\w*|turn\w*|upgrad\w*|downgrad\w*|increas\w*|rais\w*|doubl\w*|went|added)\b",
    re.IGNORECASE,
)
_WARMUP = re.compile(
    r"\b(?:warm-?up|warming\s+up|torch\.compile|autotun\w*|compil(?:e|ing|ation)|cold\s+start)\b",
    re.IGNORECASE,
)
_COUNTS = re.compile(r"\bon\s+(\d+)\s+(?:GPUs?|nodes?|hosts?)\b", re.IGNORECASE)


def _counts_differ(text: str) -> bool:
    """Whether the text gives the figures on different numbers of GPUs or nodes."""
    return len({m.group(1) for m in _COUNTS.finditer(text)}) > 1 or bool(
        re.search(r"\bmaintenance\b|\bdrained\b", text, re.IGNORECASE)
    )


_SAME_PACE = re.compile(
    r"\bsame\s+pace\b|\bpace\s+is\s+(?:the\s+same|constant|steady)\b|ペースは一定|速度は一定|速度稳定"
    r"|速度没有变化|속도는\s*일정"
    r"|\b(?:it['’]s|it\s+has)\s+been\s+(?:steady|stable|constant|flat)\b"
    # a rate said to hold (`2.4 it/s で一定`, `同じ速度で再開`: resumes at the same speed)
    r"|(?:it/s|s/it|/s)\s*で一定|同じ速度で",
    re.IGNORECASE,
)
"""The speaker says the pace stayed the same (in another sentence of the report too)."""
_STEADY = re.compile(
    r"\b(?:step\s*time|iter\w*\s+time|throughput|tokens?/s|samples?/s|it/s|s/it|speed|MFU)\b"
    r"[^.;\n]{0,30}?\b(?:flat|steady|stable|unchanged|constant|the\s+same(?!\s+\w))\b"
    # (the rate just named) `It's been steady at that the whole time`
    r"|\b(?:it['’]s|it\s+has|has)\s+been\s+(?:steady|stable|constant|flat)\b",
    re.IGNORECASE,
)


def _changed(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when a sentence of the line gives a speed that changed for the worse
    (module doc), unless it compares setups or explains the change away."""
    return SLOWED if figures_slowed(m.string) else None


_OPTION_VALUE = re.compile(r"(?<!\S)-{1,2}[A-Za-z][\w-]*(?:=|\s+)(?=[\d.])\S+")
"""A command-line option and its figure (`./ethminer -M 3000000`, `--batch-size=64`)."""


@lru_cache(maxsize=256)
def figures_slowed(line: str) -> bool:
    """Whether a sentence of `line` gives a speed that changed for the worse: against its
    baseline, its past, in order or before `instead of` (module doc); once a line."""
    if not _DIGIT.search(line) or _WARMUP.search(line) or _SAME_PACE.search(line):
        return False  # no figure; a warm-up's or a compile's steps are slow by design; one pace
    line = _OPTION_VALUE.sub(" ", line)  # a command's settings (`-M 100 => 28Mh/s`) are no reading
    if len(speed_figures(line)) < 2 and not _BASELINE_WORD.search(line):
        return False  # one figure or none, and no baseline to set it against: no change
    if said_planned(line):
        return False  # the speaker says the change was planned, in any sentence of the report
    if came_back(line):
        return False  # a later sentence says the speed came back by itself: a dip that ended
    if _past_and_present(line) and not explained(line):
        return True
    for sentence in SENTENCE.split(line):
        if explained(sentence) or _WARMUP.search(sentence):
            continue
        if _against_baseline(sentence):
            return True
        reverse = _TO_FROM.search(sentence)
        if reverse is not None:  # `down to 28% from 45%`: the later figure first
            figures = speed_figures(sentence)
            now = [f for f in figures if reverse.start("now") <= f.at < reverse.end("now")]
            then = [f for f in figures if reverse.start("then") <= f.at < reverse.end("then")]
            if now and then and now[0].timed is then[0].timed and slowed([then[0], now[0]]):
                return True
            continue
        if _INSTEAD.search(sentence):  # the figure first, then its past: not in order
            if _instead(sentence):
                return True
            continue
        if not _CHANGED.search(sentence) or _NOT_IN_ORDER.search(sentence):
            continue
        if COMPARED.search(sentence) or _SETUPS.search(sentence) or _STEADY.search(sentence):
            continue  # configurations, models, precisions or a target compared; a steady speed
        if slowed(step_figures(sentence)):
            return True
    return False


# a percentage slower in the other languages (`慢了大概 15%`, `%15 daha yavaş`, `25% ほど遅い`)
_PERCENT_SLOWER = re.compile(
    r"(?P<pct>\d+(?:[.,]\d+)?)\s*%[^.\n。]{0,12}?(?:慢|遅|느려|yavaş|lent[oa]|langsamer|plus\s+lent|"
    r"медленн\w*|lambat|chậm|trage|wolniej|más\s+(?:en|tiempo|por|lento)|mais\s+(?:tempo|lento))"
    r"|(?:慢了|遅く|느려|медленнее|lebih\s+lambat|chậm\s+hơn)[^.\n。]{0,12}?(?P<pct2>\d+(?:[.,]\d+)?)\s*%"
    r"|%\s*(?P<pct3>\d+(?:[.,]\d+)?)\s*(?:daha\s+)?yavaş",
    re.IGNORECASE,
)
_THAN_ELSEWHERE = re.compile(
    r"より|比|\bque\b|\bals\b|(?<!\w)чем(?!\w)|\bdaripada\b|\bhơn\b|\bthan\b"
)
_PEER_ELSEWHERE = re.compile(rf"(?:{PEERS})", re.IGNORECASE)


def _percent_slower(m: re.Match[str]) -> Verdict | None:
    """Return straggler on a job or member said to be N % slower in another language, when
    the comparison (if any) is with its peers or its past, not another setup."""
    pct = number(m["pct"] or m["pct2"] or m["pct3"])
    line = m.string
    if pct < PEER_GAP_PCT or explained(line):
        return None
    if _THAN_ELSEWHERE.search(line) and not _PEER_ELSEWHERE.search(line):
        return None  # slower than another setup
    member = re.search(rf"(?<!\w)(?:{MEMBER})", line, re.IGNORECASE)
    return slow_member(member_kind(member)) if member and _PEER_ELSEWHERE.search(line) else SLOWED


def _percent_changed(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown when a rate fell, or a time rose, by RATE_DROP_PCT or more."""
    pct = float(m["fell"] or m["rose"] or m["fell2"] or m["rose2"] or m["fell3"])
    return _words(m) if pct >= RATE_DROP_PCT else None


def _words(m: re.Match[str]) -> Verdict | None:
    """Return a slowdown unless the words before deny it or the line explains it away."""
    before = m.string[max(0, m.start() - 25) : m.start()]
    if re.search(r"\b(?:not|never|no|n't|didn't|doesn't|won't)\b", before + m[0], re.I):
        return None
    compared = COMPARED.search(m.string) or _SETUPS.search(m.string) or _BATCHES.search(m.string)
    return None if compared or explained(m.string) else SLOWED


_CHANGE_WORDS = (
    "avg|average|mean|yesterday|today|earlier|previously|originally|now;|now.|昨天|今天|昨日|今日|어제|오늘|gestern|"
    "heute|hier|aujourd|ayer|hoy|ontem|hoje|ieri|oggi|вчера|сегодня|раньше|current|"
    "baseline|usual|normal|typical|median|instead|statt|au lieu|en lugar|en vez|em vez|"
    "ao invés|invece|вместо|zamiast|yerine|thay vì|而不是|而非|代わりに|대신|จาก|เป็น|ตั้งแต่|من |"
    "إلى|van |zakte|daalde|steeg|sinds|od |teraz|spad|->|→|=>|⟶|from |then|now |now,|now:|"
    "after|since|went|goes|drop|fell|fall|increas|decreas|grew|grows|climb|creep|crept|"
    "halv|doubl|initially|overnight|stay|at launch|at start|at the start|at first|used to|"
    "before|resum|later|became|become|变|降|掉|之后|以后|后来|后面|后续|现在|开始|最初|から|その後|今は|以降|"
    "에서|이후|처음|지금|"
    "am |pm |am,|pm,|half|k steps|started|後に|直後|rerun|day|the first|"
    "von |jetzt|danach|anfangs|nach |fällt|sinkt|de |da |puis|maintenant|après|passe|"
    "tombe|luego|después|depois|ahora|agora| poi | dopo | ora |adesso|scende|с |от |потом|"
    "после|сейчас|теперь|упал|пада|từ |xuống|còn |sau |dari |menjadi|sekarang|awalnya|"
    "setelah|sonra|şimdi|başta|düş|1st|epoch 1|epoch #1|run 1|run #1|call 1|call #1|pass 1|"
    "round 1|attempt 1"
)
_CHANGE_NEEDLES = tuple(_CHANGE_WORDS.split("|"))
"""The words and signs of change (`_CHANGED`) that gate the change reader."""

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
        r"images/s|it/s|steps?/s\w*|steps_per_second|TFLOP\w*|MFU|HFU|(?:training|train|iteration)\s+"
        r"speed)\b[^.\n\d]{0,20}?"
        r"\b(?:dropped|drops|fell|falls|decreased|went\s+down|down|declined|regressed)\s+(?:by\s+)?"
        r"(?:about\s+|~)?(?P<fell>\d+(?:\.\d+)?)\s*%"
        r"|(?P<fell2>\d+(?:\.\d+)?)\s*%\s+(?:drop|decrease|fall|decline|regression|reduction|loss)\s+"
        r"(?:in|of)\s+(?:the\s+)?(?:throughput|tokens?/s|toks?/s|samples?/s|img/s|it/s|TFLOP\w*|MFU|"
        r"training\s+speed)"
        r"|(?P<rose2>\d+(?:\.\d+)?)\s*%\s+(?:increase|rise|jump|regression)\s+(?:in|of)\s+(?:the\s+)?"
        r"(?:step|iteration|iter|epoch)\s*time"
        r"|\b(?:throughput|tokens?/s\w*|samples?/s\w*|MFU|TFLOP\w*|it/s)\b[^.\n\d]{0,20}?"
        r"(?P<fell3>\d+(?:\.\d+)?)\s*%\s+(?:lower|less|down)\s+than\s+(?:yesterday|before|usual|last\s+\w+|"
        r"the\s+baseline|it\s+was)"
        r"|(?:\b(?:step|iteration|iter|epoch|batch)[\s_]*time\w*|\bs/it)\b[^.\n\d]{0,40}?(?:\b(?:rose|rises|"
        r"increased|went\s+up|up|grew|regressed)\s+(?:by\s+)?(?:about\s+|~)?|\+)"
        r"(?P<rose>\d+(?:\.\d+)?)\s*%",
        ("%",),
        f"A rate said to have fallen, or a step time to have risen, by {RATE_DROP_PCT:g} % or "
        "more: the job became slower.",
        judge=_percent_changed,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.percent_slower_elsewhere",
        _PERCENT_SLOWER.pattern,
        ("%",),
        "A job (or a member against its peers) said to be N % slower in another language "
        "(`慢了大概 15%`, `%15 daha yavaş`, `他のノードより 25% ほど遅い`, `un 30% más ... que el "
        "resto`): the job waits for something that became slow.",
        judge=_percent_slower,
        flags=re.IGNORECASE,
    ),
    rule(
        "figures.halved_in_words",
        r"\b(?:throughput|tokens?/s\w*|toks?/s\w*|samples?/s\w*|samples_per_sec\w*|img/s|"
        r"images/s|it/s|steps?/s\w*|steps_per_second|TFLOP\w*|MFU|speed)\b[^.\n]{0,32}?"
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
