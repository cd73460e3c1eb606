"""A slowdown told in general words: the last rule, for the reports no earlier rule reads.

The straggler and slowdown rules before this one each follow one way of saying it (a member
much slower than its peers, step times quoted as they rose, a detector's warning). People say
it in many more ways; this rule reads the general shape instead of a phrase. A sentence of
prose reports a slowdown when it has all of:

1. a word of slowness (``SLOWNESS``): slower, slowdown, slows down, straggling, lagging, a
   bottleneck, throttled, a lower hash rate, the speed dropped, the time grew, N ms late, takes
   longer, longer than its peers, very different from the others, different paces, a rate stuck
   at a figure (not zero: a hang) with a comparison around it, half the rate; or a plain
   one (``slow``, ``slowest``, ``poor performance``) with a comparison or a change in the same
   sentence (than, the others, only, after, now, ``from X to Y``) or a word of becoming just
   before it (``gets slow``, ``became very slow``);
2. a subject it can be about (``SUBJECT``) in the sentence or its neighbours: a member (GPU,
   card, node, host, rank, worker, machine) or the job's progress (training, epoch, iteration,
   step, throughput, speed, hash rate); a time said to grow (``the data time goes longer and
   longer``) is its own subject;
3. nothing in the sentence that says it reports none (slowness_sentences: a denial, something
   slow that is not training, a GPU model compared, a gap below ``MIN_GAP_PCT``).

A pronoun for the rate the sentence before named that falls (``the training speed is about
400 images/s. It decreases gradually ...``) is a word of slowness too. The same shape in Chinese
is read by rules_slowness_cjk (Chinese and Korean).

Guarantees: only sentences are read (slowness_sentences.reads_as_sentence; a log line or a
table is left to the rules of its format); the rule runs after every other rule, so a record
any other rule explains never reaches it; the verdict is a straggler warning of the lowest
confidence of the family (``SLOWNESS_CONFIDENCE``), naming the member the sentence names, else
the job.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import FIXED_BY_SETTING, came_back
from diagnosis.explain.happening import live
from diagnosis.explain.quantities import OTHER_QUANTITIES
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.explain.rules_said import GPU_THROTTLING
from diagnosis.explain.rules_straggler import MEMBER_KIND
from diagnosis.explain.slowness_sentences import (
    ASKED,
    CONDITIONED,
    CONDITIONED_BEFORE,
    FORETOLD,
    HYPOTHETICAL,
    MEMBER_WORDS,
    MIN_GAP_PCT,
    NEXT_CLAUSE,
    SCALED_OUT,
    denied,
    reads_as_sentence,
    ruled_out,
    said_expected,
    sentences,
    small_gap,
)
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

SLOWNESS_CONFIDENCE = 0.3
"""Below a quoted slowdown (0.35) and a named member (0.4): the words are general."""

_NOT_WORK = r"(?<!fan\s)(?<!wifi\s)(?<!internet\s)(?<!download\s)(?<!upload\s)"
"""Speeds that are no work of the job's (a fan's, a download's)."""
_RATE = (
    rf"(?:hash\s*rates?|{_NOT_WORK}speeds?"
    r"|performance|perf|throughput|bandwidth|utili[sz]ation|[GT]?FLOPS|MFU|HFU|it/s"
    r"|(?:computing|compute|hashing|hash|mining)\s+power"
    r"|(?:iterations?|its|steps?|samples?|images?|tokens?|frames?|episodes?|epochs?)/s(?:ec)?|fps|ns/day"
    r"|SPS|t/s|tok/s|tps|frame\s*rates?|(?:iterations?|steps?|samples?|images?|tokens?|frames?|episodes?|generations?)"
    r"\s+per\s+(?:second|sec|minute|hour|day))"
)
_COMPARATIVE = (
    r"slow(?:s|ed|er|ing)|slow-?downs?|slow(?:s|ed|ing)?\s+down|(?<!to\s)speed[- ]?downs?\b"
    # a time said longer than another's (`the training time is very longer than when I use a
    # single node`)
    r"|(?:time|duration)s?\s+(?:is|are|was|were|gets?|got|became|becomes)\s+(?:much\s+|very\s+"
    r"|way\s+|far\s+|a\s+lot\s+|significantly\s+)?longer(?=\s+than\s+(?:when|with|on|before|usual"
    r"|normal|expected|it\s+(?:was|used)|(?:the|a|one)\s+(?:single|previous|last|old|earlier"
    r"|first)\b))"
    # far below a published figure (`only 13.53% MFU, which is far lower than the 46.44%
    # mentioned in the table`)
    r"|(?P<published>(?:far|much|significantly|way|a\s+lot)\s+(?:lower|less|below)\s+(?:than\s+)?"
    r"(?:[^.\n]|\.(?=\d)){0,30}?"
    r"\b(?:mentioned|reported|published|claimed|advertised|listed|documented|in\s+the\s+(?:table"
    r"|README|paper|docs|benchmarks?|blog))\b)"
    # a fraction of the usual speed (`running at a fraction of their speed`)
    r"|at\s+a\s+(?:small\s+)?fraction\s+of\s+(?:its|their|the|our|my)\s+(?:usual\s+|normal\s+"
    r"|former\s+|original\s+|expected\s+)?(?:speed|throughput|performance|rate)"
    # only a fraction of what the hardware gives (`NCCL reaches only a fraction of the fabric`)
    r"|(?:reach\w*|gets?|getting|achiev\w*|gives?|deliver\w*|us(?:es|ing))\s+only\s+a\s+(?:small\s+)?"
    r"fraction\s+of\b"
    r"|longer\s+than\s+(?:its|their|the)\s+"
    r"(?:peers|others|rest)|(?:very|much|significantly|drastically|quite)\s+different\s+from\s+"
    r"(?:the\s+)?others?|straggl\w*|struggl(?:er|ing)|lag(?:s|ged|ging|gard)?"
    r"|(?P<worse>(?:gets?|got|getting|became|becomes|becoming|goes|went)\s+(?:much\s+|a\s+lot\s+)?worse)"
    r"|(?:longer|slower)\s+and\s+(?:longer|slower)|more\s+and\s+more\s+(?:long|slow)(?!ly)"
    # times longer than the other epochs' (`longer processing times compared to other epochs`)
    r"|longer\s+(?:[\w-]+\s+)?times?\s+(?:compared\s+(?:to|with)|than)\s+(?:the\s+|all\s+)?other"
    # a run that goes ever slower (not a loss that converges ever more slowly)
    r"|(?:becom\w*|became|gets?|getting|got|goes|going|went|runs?|running|ran|trains?|training"
    r"|works?|working|progress\w*|moves?|moving)\s+more\s+and\s+more\s+slowly"
    # a GPU that falls into a low-clock performance state (P2, P8) and stays there
    # a member that drags the rest down; a member's time a multiple of everyone else's
    r"|drag(?:s|ged|ging)?\s+(?:\w+\s+){0,2}?down\b"
    r"|~?\d+(?:\.\d+)?\s*x\s+(?:that\s+of\s+)?(?:everyone|everybody|all\s+the\s+others|the\s+others"
    r"|the\s+rest)(?:\s+else)?(?:['’]s)?"
    r"|(?:drops?|dropped|falls?|fell|stuck|locked|goes|went|changes?|changed)\s+(?:in|to|into)\s+"
    r"(?:a\s+|the\s+)?(?:(?:low[- ]clock|low[- ]power)\s+(?:perf(?:ormance)?\s+)?state|P[2-8])"
    r"|(?:twice|thrice|\d+(?:\.\d+)?\s*(?:x|times)|"
    r"(?:two|three|four|five|ten)\s+times)\s+as\s+(?:slow|long)"
    r"|bottleneck\w*|throttl\w*|underperform\w*|held\s+(?:up|back)|hold(?:s|ing)?\s+(?:up|back)"
    r"|down-?(?:shift|clock)\w*|half\s+(?:as\s+)?slow"
    # people's verbs of a run that slowed (`it was crawling`, `throughput tanks`, `nosedived`)
    r"|(?P<verbed>crawl(?:s|ed|ing)|to\s+a\s+crawl|grind(?:s|ing)|plumm?et\w*|nose-?div\w*"
    r"|tank(?:s|ed|ing)|(?:keeps?|kept)\s+(?:sliding|slipping)|takes?\s+forever|barely\s+moves?"
    r"|drag(?:s|ging)\s+(?:on|down|everyone|the\s+(?:whole\s+)?(?:job|run|cluster|pipeline))"
    r"|everything\s+drags)"
    # one member the others wait for, or always the last (`the other 7 ranks ... sit waiting ~2
    # min for rank 3`, `whoever is slowest, it's always gpu-node-23`)
    r"|(?P<waited>(?:wait|waits|waiting|waited)\s+(?:(?:about|around|roughly|~)\s*)?(?:[~≈]?[\d.]++\s*[A-Za-z]\w*\s+"
    r"|several\s+\w+\s+|a\s+\w+\s+)?"
    r"(?:for|on)\s+(?:rank|GPU|node|worker|host|card|device|stage|server|machine|it)\b)"
    r"|(?P<behind>(?:always|consistently)\s+behind)\b|slowest\b[^.\n]{0,30}?\balways\b"
    # times said to grow as an adjective (`the increasing preparation/render times`)
    r"|(?P<growing>(?:increasing|growing|rising|climbing|ever[- ]longer)\s+(?:[\w/-]+\s+){0,2}?"
    r"(?:times|durations|delays|latencies)\b"
    r"|(?:increasing|growing|rising|climbing)\s+(?:(?:step|iteration|epoch|batch)\s+time|time\s+per\s+"
    r"(?:step|iteration|epoch|batch|image|sample))\b)"
    # a change of a step's time said as a noun (`a jump in the total step time`)
    r"|(?P<jump>(?:jumps?|increases?|rises?|regressions?|spikes?)\s+in\s+(?:the\s+)?(?:\w+\s+)?(?:step|iteration|epoch"
    r"|batch|training)\s+times?)"
    r"|(?:different|uneven|varying)\s+(?:paces?|speeds?|rates?)"
    r"|\d+(?:\.\d+)?\s*(?:ms|s|secs?|seconds?|mins?|minutes?)\s+(?:late|behind"
    r"|after\s+(?:(?:every|each|all)\s+(?:the\s+)?others?|the\s+others|everyone|the\s+rest))"
    # a member a share behind, or the last to arrive every time (`consistently ~30% behind`,
    # `always arriving last`)
    r"|~?\d+(?:\.\d+)?\s*%\s+behind|(?:way|far|well|always)\s+behind\s+(?:the\s+|all\s+)?"
    r"(?:others?|rest|other\s+\w+)"
    # a rate that falls to a share of itself (`falls to about a third`, `a third of what it was`)
    r"|(?:falls?|fell|drops?|dropped|goes\s+down|went\s+down)\s+to\s+(?:about\s+|around\s+"
    r"|roughly\s+)?(?:a\s+third|half|a\s+quarter|one\s+third)\b"
    r"|(?:half|a\s+third|a\s+quarter|one\s+third)\s+of\s+what\s+it\s+(?:was|used\s+to)"
    r"|(?:always|consistently|invariably)\s+(?:seems?\s+to\s+)?(?:the\s+)?(?:(?:arriv|finish|complet|reach)\w*"
    r"\s+(?:(?:its|their|the|each)\s+(?:\w+\s+){1,2})?|comes?\s+|coming\s+|is\s+|being\s+)?last"
    r"|(?:takes?|took|taking|needs?|needed|spends?|spent|spending)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:longer|more\s+time)"
    rf"|(?:lower|worse|reduced|decreas\w+|degrad\w+|dropp?(?:ed|s|ing)?)\s+(?:\w+\s+)?{_RATE}"
    # a rate that became low (`GPU utilization started high, and became low/idle later on`)
    rf"|{_RATE}\s+(?:\w+,?\s+){{0,4}}?(?:became|becomes|went|goes|got|gets)\s+(?:very\s+|much\s+)?"
    r"(?:low|lower|idle)\b"
    # a fall said as a noun (`a significant decrease in the hash rate`)
    r"|(?:decrease|drop|fall|decline|reduction|dip|degradation)s?\s+(?:of|in)\s+(?:the\s+|my\s+"
    rf"|our\s+|its\s+|their\s+)?(?:\w+\s+)?{_RATE}"
    rf"|less\s+(?:\w+\s+)?{_RATE}\s+than\s+(?:the\s+|its\s+|all\s+)?(?:others?|rest|remaining|peers?)"
    # a rate stuck low, or a fraction of what it should be (`get half the hashrate`)
    rf"|(?P<stuck>{_RATE}\s+(?:\w+\s+){{0,4}}?(?:is\s+|was\s+|gets?\s+|got\s+)?stuck\s+"
    r"(?:at|on|around)\s+(?!0(?:\.0+)?\b)\d+)"
    rf"|(?:half|a\s+third|a\s+quarter|one\s+third)\s+(?:of\s+)?(?:the\s+|their\s+|its\s+)?{_RATE}"
    # a share of what a peer does (`scores half of what its identical twin scores`)
    r"|(?:half|a\s+third|a\s+quarter|one\s+third)\s+of\s+what\s+(?:its|their|the)\s+(?:\w+\s+){0,2}?"
    r"(?:twins?|peers?|others?|siblings?|neighbou?rs?)\b"
    rf"|{_RATE}\s+(?:\w+\s+){{0,2}}?(?:halv\w*|drift\w*\s+(?:down|lower))"
    rf"|(?:losing|loses|lost)\s+(?:\w+\s+)?{_RATE}"
    # a member at a share of its peers (`it only gets 50% of the other two`)
    r"|(?:gets?|got|does|did|runs?\s+at|reach(?:es)?|performs?\s+at)\s+(?:only\s+|about\s+|around\s+)?"
    r"(?P<share>\d+(?:\.\d+)?)\s*%\s+of\s+(?:the\s+)?(?:(?:throughput|speed|performance|perf|work"
    r"|rate|hash\s*rate)\s+of\s+(?:the\s+|its\s+)?)?(?:others?|rest|peers?|other\s+\w+)"
    rf"|(?:{_NOT_WORK}speed|performance|perf|throughput|(?:hash|sol/s|h/s|mh/s|sample|token|step|iteration"
    r"|training|mining)\s*rates?|it/s|(?:iterations?|its|steps?|samples?|images?|tokens?)/s(?:ec)?"
    # (not another quantity's fall between: `tokens/s and the loss keeps decreasing`)
    rf"|utili[sz]ation|{_RATE})\s+(?:(?!(?:{OTHER_QUANTITIES})\b)\w+\s+){{0,5}}?"
    r"(?:drops?|dropped|dropping|decreas\w+|degrad\w+|falls?|falling|fell|goes\s+down|went\s+down"
    r"|sliding|slipping|slid|reduc(?:es|ed|ing)\s+to"
    r"|going\s+down"
    r"|is\s+(?:much\s+|very\s+|way\s+|(?:several|many|two|three|four|five|ten|\d+(?:\.\d+)?)\s+times\s+"
    r"|\d+(?:\.\d+)?\s*x\s+)?(?:lower|worse))"
    r"|(?P<timed>(?<!over\s)(?<!every\s)(?<!each\s)(?<!some\s)(?<!same\s)"
    r"(?:time|duration|latency|runtime|days/ns|TTFT|TPOT|ITL|\w+_cost)s?\s+(?:\w+\s+){0,4}?"
    r"(?:increas\w+"
    r"|grows?|grew|growing|goes\s+up|went\s+up|doubl\w+|tripl\w+|jump\w*|spik\w*|creep\w*\s+up"
    r"|degrad\w+"
    r"|(?:gets?|goes|went|got|getting|going|becomes?|became)\s+(?:much\s+|a\s+lot\s+)?longer)"
    # a time that keeps growing as the run goes on, however it is named
    # (not `over time` or `every time`: those say when, and name no time)
    r"|(?<!over\s)(?<!every\s)(?<!each\s)(?<!some\s)(?<!same\s)(?<!first\s)(?<!last\s)"
    r"(?<!next\s)(?<!any\s)(?:time|duration|latency)s?\s+(?:\w+\s+){0,6}?"
    r"(?:keeps?|kept|keeping|continues?|continued|(?:is\s+|are\s+)?(?:gradually|steadily"
    r"|continuously|constantly))\s+(?:to\s+)?(?:increas\w*|grow\w*"
    r"|ris(?:e|es|ing)|climb\w*|creep\w*(?:\s+up)?|go(?:es|ing)?\s+up"
    r"|get(?:s|ting)?\s+longer))"
)
# a pronoun for the rate the sentence before named (``the training speed is about 400
# images/s. It decreases gradually to about 130``)
_ANAPHOR = (
    r"(?:it|this|which)\s+(?:then\s+|gradually\s+|slowly\s+|suddenly\s+|steadily\s+)?"
    r"(?:(?P<fell>decreas\w*|drops?|dropped|falls?|fell|degrad\w*|declin\w*|goes\s+down"
    r"|went\s+down)|(?P<rose>increas\w*|grows?|grew|goes\s+up|went\s+up|doubl\w*|climb\w*))"
)
_NAMED_TIME = re.compile(
    r"\b(?:time|duration|latency)\b|\d\s*(?:s|sec|secs|seconds?)\s*(?:/|per)\s*(?:it|iter\w*|step|batch)\b"
    r"|\b\d+(?:\.\d+)?\s*(?:sec|secs|seconds)\b"
    r"|\bs/it\b",
    re.I,
)
_NAMED_RATE = re.compile(
    r"\b(?:speed|throughput|hash\s*rate|rate|it/s|samples?/s\w*|images?/s\w*|FLOPS|performance)\b",
    re.I,
)
_PLAIN = (
    rf"slow|slowly|slowest|(?:low|poor|bad|terrible|horrible)\s+(?:\w+\s+)?{_RATE}"
    # the rate said low (`the bus bandwidth was very low`)
    rf"|{_RATE}\s+(?:is|was|are|were|seems?|looks?|remains?|stays?)\s+(?:very\s+|really\s+|quite"
    r"\s+|extremely\s+|too\s+|so\s+|much\s+)?(?:low|poor|bad|terrible|horrible)"
)
SLOWNESS = re.compile(
    rf"\b(?:(?P<comparative>{_COMPARATIVE})|(?P<anaphor>{_ANAPHOR})|(?P<plain>{_PLAIN}))\b", re.I
)
"""A word of slowness; a plain one needs a comparison or a change around it."""

_PROGRESS = (
    r"training|train|epoch|iteration|iter|step|batch|job|run|throughput|speed|it/s|s/it"
    r"|samples?/s\w*|hash\s*rate|mining|performance|perf|FLOPS|utili[sz]ation|collectives?"
    r"|all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|broadcast"
)
SUBJECT = re.compile(
    rf"\b(?:{MEMBER_WORDS}|{_PROGRESS}|{_RATE}|generation|frame|render\w*|encod\w*|simulation|inference|pic|picture|image"
    r"|calculation|computation|computer|conversation|chat|response|request|quer(?:y|ie))s?\b",
    re.I,
)
_MEMBER_WORD = re.compile(rf"\b({MEMBER_WORDS})s?\b", re.I)
_COMPARED = re.compile(
    r"\b(?:than|others?|rest|peers?|compared|whereas|while|but|however|only|one\s+of|single"
    r"|found|noticed|after|then|now|suddenly|over\s+time"
    # an intensity that says the speed is abnormal (`extremely low t/s`, `crippled performance`)
    r"|extremely|abysmal(?:ly)?|terribly|incredibly|ridiculously|painfully|crippl\w*"
    # one member set apart from the rest (`there is always one card that is at a low speed`)
    r"|(?:always|only)\s+one\s+(?:GPU|card|device|node|host|rank|worker|machine|server|rig)\s+"
    r"(?:that|which|is|was|runs?|seems?)"
    r"|gradually|increasingly|from\s+\S+\s+to"
    r"|(?:GPU|card|device|node|host|rank|worker)\s*[#:/]?\s*\d+"  # one member named
    # one member by its place (`the second PS instance is very slow`)
    r"|(?:first|second|third|fourth|last|\d+(?:st|nd|rd|th))\s+(?:\w+\s+)?(?:instance|pod|node"
    r"|GPU|card|rank|worker|machine|server|host|process|replica)s?)\b",
    re.I,
)
_TURNED = re.compile(r"\b(?:gets?|got|getting|became|become|becomes|becoming)\s+(?:\w+\s+)?$", re.I)
_A_RATE = re.compile(
    r"\b(?:MFU|HFU|throughput|[GT]?FLOP\w*|tokens?/s\w*|tok/s|samples?/s\w*|images?/s\w*|it/s"
    r"|bandwidth|busbw|hash\s*rate)",
    re.I,
)
"""A rate: far below its published figure is slower (a time far below it is faster)."""
_SPEEDISH = re.compile(
    r"\b(?:fast|faster|quick\w*|speed|slow\w*|throughput|it/s|s/it|time)\b", re.I
)


def slowed(sentence: str) -> Verdict:
    """The straggler warning of a slowdown told in words: the member the sentence names (a
    GPU, node or rank), else the job."""
    named = _MEMBER_WORD.search(sentence)
    kind = MEMBER_KIND.get(named[1].lower(), K.NODE) if named else K.JOB
    return verdict(C.STRAGGLER, B.UNKNOWN, kind, S.WARNING, A.MONITOR, SLOWNESS_CONFIDENCE)


_EVERY_TIME = re.compile(
    r"\b(?:every|each|always|per\s+(?:step|batch|epoch|iteration)|consistently|again)\b", re.I
)
_STALLED = re.compile(
    r"\b(?:forever|stuck|hung|hangs?|hanging|frozen|freezes?|nothing\s+(?:moves|progresses)"
    r"|no\s+progress|deadlock\w*|halt|no\s+step\s+completes|never\s+gets?\s+past"
    r"|without\s+(?:a\s+single\s+)?(?:new\s+)?step)\b",
    re.I,
)
"""A member waited for at every step is a straggler; one waited for without end is a hang."""
_OF_ANOTHER = re.compile(
    r"\b(?:loss|accuracy|acc|reward|score|perplexity|ppl|price|stock|memory|temperature|latency"
    r"\s+budget)\b[^.\n]{0,15}$",
    re.I,
)


_UNEXPECTED = re.compile(r"\bunexpected(?:ly)?\s+(?:\w+\s+)?$", re.I)
"""A slowness the speaker calls unexpected (`an unexpectedly slow-down when using FSDP`): a
report even where it follows a setting of theirs."""

_SLOW_TO_LEARN = re.compile(
    r"\b(?:converg|learn|decreas|declin|decay|improv|drop|fall|fell|go(?:es)?\s+down)\w*\s+"
    r"(?:\w+\s+){0,3}?slow(?:ly|er)\b|\bslow(?:er)?\s+(?:to\s+)?converg\w*",
    re.I,
)
"""Slow at learning, not at working: a loss that falls slowly, a model that converges more and
more slowly (`slow convergence`)."""


def _reported(m: re.Match[str]) -> Verdict | None:
    """Return a straggler warning when the sentence around `m` reports a slowdown (module doc)."""
    body = m.string
    if not reads_as_sentence(body) or came_back(body):
        return None  # (a later sentence may say the speed came back: a dip that ended)
    spans = sentences(body)
    i = next(k for k, (start, end) in enumerate(spans) if start <= m.start() <= end)
    start, end = spans[i]
    sentence, before = body[start:end], body[start : m.start()]
    around = body[spans[max(0, i - 1)][0] : spans[min(len(spans) - 1, i + 1)][1]]
    # figures may start a sentence earlier, and end with the clause of the word of slowness
    # (`goes down (from 43 to 17) and won't go back to 43`: the 43 it won't reach is no figure)
    clause_end = NEXT_CLAUSE.search(body, m.end(), end)
    with_before = body[spans[max(0, i - 1)][0] : clause_end.start() if clause_end else end]
    chosen = (
        HYPOTHETICAL.match(body, m.end())
        or CONDITIONED.search(body, m.end(), end)
        or CONDITIONED_BEFORE.search(before)
    )
    if chosen and not (SCALED_OUT.match(body, m.end()) or _UNEXPECTED.search(before)):
        return None  # the speaker's own change of the work, unless more devices or unexpected
    if denied(m, sentence, before) or ruled_out(sentence) or small_gap(with_before):
        return None
    throttle = GPU_THROTTLING.search(body, start, end) if "throttl" in m[0].lower() else None
    if throttle is not None and not live(throttle):
        return None  # a GPU's throttle planned, over or explained (said.gpu_throttling's reading)
    learned = _SLOW_TO_LEARN.search(body, start, min(end, m.end() + 12))
    if learned is not None and learned.start() <= m.start() < learned.end():
        return None  # slow to learn, not to work
    if m["worse"] and not _SPEEDISH.search(sentence):
        return None  # worse at what: a speed, not a loss
    if m["published"] and not _A_RATE.search(sentence):
        return None  # a time far below the published one is faster, not slower
    if said_expected(body, spans[max(0, i - 1) : i + 2]) or ASKED.match(sentence.lstrip()):
        return None
    if FORETOLD.match(sentence):  # a reply's `You should see a drop ...`: no report
        return None
    if not (m["timed"] or m["jump"] or m["waited"] or m["growing"] or SUBJECT.search(around)):
        return None
    if m["anaphor"]:  # `it` must be a rate that fell, or a time that rose, named just before
        quantity = _NAMED_RATE if m["fell"] else _NAMED_TIME
        if not quantity.search(body[spans[max(0, i - 1)][0] : m.start()]):
            return None
    if m["plain"] and not (_COMPARED.search(sentence) or _TURNED.search(before)):
        return None
    if m["share"] and float(m["share"]) >= 100 - MIN_GAP_PCT:
        return None  # 95 % of the others: too small a gap to name
    if m["waited"] and (not _EVERY_TIME.search(sentence) or _STALLED.search(sentence)):
        return None  # waited for once, or for ever: a repair or a hang, not a straggler
    if m["behind"] and not _MEMBER_WORD.search(before):
        return None  # behind what: a member's (`worker-2 is always behind`), not a repository's
    if m["verbed"] and (
        _STALLED.search(sentence)
        or not (_SPEEDISH.search(sentence) or SUBJECT.search(sentence))
        or _OF_ANOTHER.search(before)
    ):
        return None  # people's verb of a stop, or of a loss (`loss tanked`), not of a speed
    if m["growing"] and _OF_ANOTHER.search(before):
        return None  # the times of another quantity (`the loss shows increasing times`)
    if m["stuck"] and not _COMPARED.search(around):
        return None  # stuck at a figure: low only against another member or an earlier figure
    return slowed(sentence)


SAID_NORMAL = "slowdown.said_normal"
EXPLAINED_BY = {
    rule_id: frozenset({SAID_NORMAL, "said.lossy_fabric"})
    for rule_id in (
        *("straggler.slowness_in_words", "slowdown.time_said_to_grow", "slowdown.rate_fell"),
        *("slowdown.step_time_rose", "slowdown.against_its_past", "figures.speed_changed"),
        "straggler.named_slower_than_peers",
    )
}
"""A slowness told in one line that another line of the same input calls normal, or says the
fabric drops packets (rules_said's lossy fabric: the network is the incident), or gives the
cause of (a reply: ``it is normal that running time for each iteration is getting longer``,
``So the speed will be slower after these two checkpoints``, ``This is expected, not a bug``)."""

RULES: tuple[Rule, ...] = (
    rule(
        SAID_NORMAL,
        r"\b(?:it\s+is|it's|this\s+is|that\s+is|that's)\s+(?:(?:quite|perfectly|totally)\s+)?"
        r"(?:normal|expected)\s+that\b[^.?!\n]{0,120}?\b(?:slower|longer|increas\w*|grows?|growing)\b"
        # a detector's verdict over the members it lists (`-> no persistent straggler`)
        r"|(?:->|=>|:)\s*no\s+(?:persistent\s+)?stragglers?\s*$"
        # a reply that gives the slowness as the consequence of the schedule or the setup
        # (`So the speed will be slower after these two checkpoints`, `Iterations will always be
        # slower on multiple cards due to the need to synchronize`)
        r"|\b(?:so|therefore|thus|hence)\s+(?:the\s+)?(?:speed|training|it|iterations?|throughput)\s+"
        r"(?:\w+\s+){0,2}?will\s+(?:be|get|become)\s+slower\b"
        r"|\bwill\s+always\s+be\s+slower\b[^.\n]{0,60}?\b(?:due\s+to|because)\b"
        # a line that calls what the input reports expected and no bug (`This is expected, not a
        # bug`, `this is the expected behaviour`), not as a question
        r"|\b(?:this|that|it)\s+is\s+(?:(?:the|an?)\s+)?expected(?:\s+behaviou?r)?\s*(?:,|—|-|;)?\s*"
        r"(?:and\s+)?not\s+a\s+bug\b"
        r"|\b(?:this|that|it|reason|drop|slowdown)\s+is\s+(?:the\s+)?expected\s+behaviou?r\s*(?:[.!]|$)"
        # the reply that calls the behaviour seen expected (`the behavior you see is expected`),
        # or gives a slowdown as what a setup always brings (`Running multiple experiments on a
        # single GPU will always lead to slowdowns`)
        r"|\b(?:the\s+)?behaviou?r\s+(?:(?:you|they)\s+(?:see|saw|are\s+seeing|observe\w*)\s+)?is\s+"
        r"(?:(?:quite|perfectly|totally)\s+)?expected\s*(?:[.!]|$)"
        r"|\bwill\s+always\s+(?:lead\s+to|cause|result\s+in|mean)\s+(?:a\s+|some\s+)?slow(?:downs?|er)\b"
        # the slowdown fixed by a setting changed back (explained.FIXED_BY_SETTING), members
        # even again after a fix (`Killed it and all 8 ranks are even again`)
        rf"|{FIXED_BY_SETTING}"
        r"|\b(?:are|is|were|was|run(?:s|ning)?)\s+(?:all\s+)?(?:even|level|in\s+step|in\s+sync"
        r"|balanced)\s+again\b"
        # a reply that setups' step times are not to be compared, their throughput is (`when
        # comparing single node vs multi, don't compare the step time`)
        r"|\b(?:don'?t|do\s+not|shouldn'?t|should\s+not)\s+compare\s+(?:the\s+)?(?:step|iteration"
        r"|per-step)\s+times?\b"
        # a bottleneck the reply gives as what the work needs (`generation is the main bottleneck
        # here, as for each prompt, you need to generate several completions`), a latency that
        # rises with the throughput (`Latency increases but throughput also increases`)
        r"|\bbottleneck\b[^.\n]{0,20}?\b(?:as|because|since)\b[^.\n]{0,60}?\b(?:you|we|one|it)\s+"
        r"(?:need|needs|have|has|must)\s+to\b"
        # a bottleneck a reply gives as what caps a figure it expects (`The total effective
        # bandwidth should therefore be 240GB/s on A100, but some other bottlenecks on the GPUs
        # limits it to ~230GB/s`)
        r"|\bbottlenecks?\b[^.\n]{0,40}?\blimits?\s+(?:it|this|that|them|the\s+\w+)\s+to\s+~?\d"
        # a reply that calls what is seen normal (`Looks like that is [normal.](...)`)
        r"|\b(?:looks|seems)\s+(?:like\s+)?(?:that|this|it)\s+(?:is|'s)\s+\[?normal\b"
        r"|\blatency\s+(?:\w+\s+)?(?:increases?|rises?|grows?|goes\s+up)\b[^.\n]{0,30}?\bthroughput\s+"
        r"(?:\w+\s+)?(?:increases?|rises?|grows?|goes\s+up|improves?)\b"
        # a reply that gives a capability the setup lacks as the cause (`That's because GeForce
        # cards don't support GPU Direct P2P`)
        r"|\b(?:that's|that\s+is|this\s+is|it's)\s+because\b[^.\n]{0,80}?\b(?:don't|doesn't|do\s+not"
        r"|does\s+not|cannot|can't)\s+support\b"
        # decoding set against prefill: two phases of different work, not a slowdown
        r"|\b(?:generation|decod\w*|eval(?:uation)?)\b[^.\n]{0,30}?\bslower\s+than\s+(?:the\s+)?"
        r"(?:prompt\s+(?:processing|eval\w*)|prefill\w*)\b",
        (
            *("normal that", "expected that", "no persistent", "no straggler", "will be slower"),
            *("will get slower", "will become slower", "will always be slower", "not a bug"),
            *("expected behavio", "alleviat", "eliminat", "fix", "solv", "resolv", "remov"),
            *("cur", "again", "slower than", "behavior", "behaviour", "always", "compare"),
            *("because", "bottleneck", "latency", "normal"),
        ),
        "A sentence that calls a time growing or a run slowing normal (a reply's explanation), "
        "or a detector's verdict of no straggler: no fault, and it explains a slowness the "
        "same input tells in words.",
        verdict(C.BENIGN, B.UNKNOWN, K.JOB, S.INFO, A.NONE, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.slowness_in_words",
        SLOWNESS.pattern,
        (
            *("slow", "straggl", "struggl", "lag", "bottleneck", "throttl", "underperform"),
            *("held", "hold", "different", "uneven", "varying", "late", "behind", "longer"),
            *("more time", "lower", "worse", "reduced", "decreas", "degrad", "drop", "time"),
            *("duration", "speed", "perf", "throughput", "hash", "it/s", "utili", "low"),
            *("poor", "bad", "terrible", "horrible", "increas", "grow", "grew", "goes up"),
            *("went up", "doubl", "climb", "fell", "fall", "declin", "goes down", "went down"),
            *("more and more", "state", "p2", "p5", "p8", "stuck", "half", "% of", "last"),
            *("cost", "third", "quarter", "as long", "fps", "flops", "ns/day", "sps", "t/s"),
            *("per second", "per hour", "per minute", "per day", "losing", "loses", "lost"),
            *("latency", "runtime", "creep", "drift", "ttft", "tpot", "itl", "crawl", "grind"),
            *("plummet", "plumet", "nosediv", "nose-div", "tank", "sliding", "slipping", "drag"),
            "forever",
            *("barely", "wait", "behind", "slowest", "fraction"),
        ),
        "A sentence reporting that the job, or one of its members, became or is slower than it "
        "should be, in words no earlier rule reads: a straggler or a slowdown to look at, with "
        "the low confidence of general words.",
        judge=_reported,
        flags=re.IGNORECASE,
    ),
)
