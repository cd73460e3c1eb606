"""Straggler reports in words: a person's or a tool's sentence naming the slow member.

Each rule reads one way people say it, and a sentence that denies it is silent:

- an operator's or tool's sentence that names one member (``GPU 2``, ``rank 7``, ``node 3``,
  ``card 1``) as much, far or N times slower than the other members, the rest or its peers
  (``GPU 2 much slower, then the other 5 GPUs``): the comparison is against peers, so a member
  slower than before, or slower without a degree, is not one;
- a report that calls one member a straggler (``a straggling node``, ``one rank ... (a
  struggler)``) unless the sentence denies it (``no straggler``, ``without stragglers``);
- one (or a few) members said to be slow, throttled, late or holding back the job (``a single
  thermally throttled GPU ... every other GPU waits``, ``few GPUs can be slow``) in a sentence
  about the job or the other members;
- someone who found members slow (``found 2 gpus to be slow``), and a member said to take
  ``PEER_GAP_PCT`` or more percent longer than its peers (``a single bar that is 25 % longer
  than its peers``);
- a member slower than the other members by a clear degree or with the others waiting for it
  (``a GPU which is slower than other GPUs and ... all the other GPUs have to wait``); the rest
  of the members given one figure and one member a worse one by ``PEER_GAP_PCT`` (``GPUs 1 - 5
  average 31.6 MHs. However, GPU/0 hashes at 25 Mhs``), or one member's figure against the
  median of its peers (``Rank r2 input wait was 199.7ms vs median rank r0 at 10.4ms``); a
  particular member performing badly (``on the second node I get really bad performance``); a
  job held to its slowest member;
- a named member arriving a measured time late (``Rank 5 enters the barrier 290ms late``,
  ``GPU 3 began about a minute later``);

Guarantees: a sentence needs a member (GPU, card, device, node, host, rank, worker) or the
job's own words, and a degree, a figure or the others waiting where the rule says so; the
verdict is a warning of lower confidence than a tool's own figures (`slow_member`).
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import explained_at, explains
from diagnosis.explain.rules import Rule, rule
from diagnosis.explain.rules_straggler import MEMBER_KIND, TIME_WORDS, member_kind, slow_member
from diagnosis.model import Action as A
from diagnosis.model import ComponentKind as K

_DEGREE = r"(?:much|far|significantly|considerably|way|\d+(?:\.\d+)?\s*(?:x|times))"
_PEERS = (
    r"(?:(?:the\s+|all\s+(?:the\s+)?)?(?:other|others|rest|remaining|peers|its\s+peers)\b"
    # the job's or the group's median (a monitor's alert: `1.48x slower than job median`)
    r"|(?:the\s+)?(?:job(?:'s)?\s+|group(?:'s)?\s+|fleet(?:'s)?\s+)?median\b)"
)
_DENIED = re.compile(r"\b(?:no|not|without|never|zero|0)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)
_SLOW_WORDS = re.compile(
    r"\b(?:slow\w*|throttl\w*|lag\w*|late|straggl\w*|struggl\w*|held\s+up|hold\w*\s+"
    r"(?:up|back)|not\s+fast\s+enough|overheat\w*|(?:very\s+|much\s+)?(?:low|lower|poor|bad)\s+"
    r"(?:hash\s*rates?|speeds?|performance|throughput|bandwidth|FLOPS))\b",
    re.IGNORECASE,
)
_JOB_WORDS = re.compile(
    r"\b(?:other|others|rest|every|whole|entire|all|job|training|throughput|wait\w*|"
    r"distributed|DDP|FSDP|all-?reduce|collective\w*|barrier|sync\w*)\b",
    re.IGNORECASE,
)
PEER_GAP_PCT = 10.0
"""A member said to take this many percent longer than its peers is a straggler."""


_SHARE_OF_STEPS = re.compile(
    r"\b(?:in|for)\s+(?P<n>\d+)\s*/\s*(?P<of>\d+)\s+(?:of\s+)?(?:the\s+)?(?:last\s+)?steps?\b"
)


def _slowest_by_ratio(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the slowest member's ratio to the median is a clear gap (more
    than ``PEER_GAP_PCT``), it is the slowest in most of the steps counted (a slowest rank
    that rotates is noise), and the text gives it no cause of its own (a pipeline's last
    stage that also computes the loss)."""
    ratio = float(m["ratio"] or m["ratio2"])
    if ratio <= 1 + PEER_GAP_PCT / 100 or explained_at(m):
        return None
    share = _SHARE_OF_STEPS.search(m[0])
    if share is not None and 2 * int(share["n"]) < int(share["of"]):
        return None
    return slow_member(member_kind(m))


def _called_straggler(m: re.Match[str]) -> Verdict | None:
    """Return straggler unless the words just before deny it (``no straggler``)."""
    before = m.string[max(0, m.start() - 30) : m.start()]
    if _DENIED.search(before) or re.search(r"\b(?:no|not|without)\b", m[0], re.IGNORECASE):
        return None
    return slow_member(member_kind(m))


def _few_slow(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the few members are slow and the text around is about the job
    (the sentence, or what comes just before it)."""
    around = m.string[max(0, m.start() - 200) : m.end()]
    among = re.match(r"one\s+of\b", m[0], re.IGNORECASE) is not None  # one of several: peers
    if not (_SLOW_WORDS.search(m[0]) and (among or _JOB_WORDS.search(around))):
        return None
    return slow_member(member_kind(m))


def _found_slow(m: re.Match[str]) -> Verdict | None:
    """Return straggler on the members someone found slow, unless the words before deny it
    (``never found a node to be slow``)."""
    before = m.string[max(0, m.start() - 30) : m.start() + len(m[0].split()[0])]
    if re.search(r"\b(?:no|not|never|didn't|don't|couldn't|haven't|hasn't)\b", before, re.I):
        return None
    return slow_member(member_kind(m))


def _percent_behind(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the gap to the peers is at least PEER_GAP_PCT."""
    if float(m["pct"] or m["pct2"]) < PEER_GAP_PCT:
        return None
    return slow_member(member_kind(m), A.MONITOR)


_SOFTENED = re.compile(r"\b(?:slightly|a\s+(?:bit|little)|marginally|barely)\s+$", re.I)
_WAITED_FOR = re.compile(r"\bwait\w*|\bheld\s+back|\bhold\w*\s+back|\bbottleneck\w*", re.I)


def _slower_than_others(m: re.Match[str]) -> Verdict | None:
    """Return straggler when a member is said to be slower than the others and either by a
    degree or with the others waiting for it; a slight difference is not one."""
    if _SOFTENED.search(m.string[max(0, m.start("slower") - 20) : m.start("slower")]):
        return None
    sentence = m.string[m.start() : m.end() + 160].split(". ")[0]
    if m["degree"] is None and not _WAITED_FOR.search(sentence):
        return None
    return slow_member(member_kind(m))


def _one_below(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the one member's figure is PEER_GAP_PCT worse than the rest's (a
    rate below, a time above)."""
    rest, one = float(m["rest"]), float(m["one"])
    if rest <= 0:
        return None
    timed = TIME_WORDS.search(m["unit"]) is not None or m["unit"].lower() in ("s", "ms")
    gap = (one - rest) / rest if timed else (rest - one) / rest
    return slow_member(member_kind(m)) if gap * 100 >= PEER_GAP_PCT else None


PEER_PAIR_RATIO = 1.5
"""One member's time set against one named peer's must be this many times it."""
_MEMBER = r"\b(?P<kind>GPU|card|device|node|host|rank|worker)\s*[#:]?\s*[a-z]?\d+"
_PEER = r"(?:GPU|card|device|node|host|rank|worker)\s*[#:]?\s*[a-z]?\d+"


_FIGURE_UNIT = r"m?s/(?:step|it|iter|batch)|ms|s|secs?|seconds|[A-Za-z]*/s(?:ec)?"
"""A member's time (seconds or milliseconds, a step's) or rate (per second)."""
_ONE_OFF = re.compile(
    r"\b(?:checkpoint\w*|ckpt|sav(?:e|es|ed|ing)|writ\w*|load\w*|eval\w*|compil\w*|first\s+step"
    r"|warm-?up|startup|init\w*|builds?|building)\b",
    re.IGNORECASE,
)
"""Work a member does once or alone (a checkpoint's write, a compile, the first step)."""
_FINE = re.compile(
    r"\b(?:is|are|looks?|seems?|was)\s+(?:fine|ok|okay|normal|expected)\b|\bas\s+expected\b",
    re.IGNORECASE,
)
_BAD_COUNT = re.compile(r"^(?:err|drop|retr|fail|discard|loss|nak|timeout)", re.IGNORECASE)
"""Rates of which more is worse (errors, drops, retries a second): no speed."""


def _sentence(m: re.Match[str]) -> str:
    """The sentence a match stands in, from its start."""
    return re.split(r"(?<=[.!?])\s|\n", m.string[m.start() :], maxsplit=1)[0]


def _no_speed(m: re.Match[str]) -> bool:
    """Whether the compared figures are no member's speed: a one-off's time, a rate of errors,
    or a gap the sentence calls fine."""
    sentence = _sentence(m)
    return bool(_ONE_OFF.search(sentence) or _FINE.search(m.string) or _BAD_COUNT.match(m["unit"]))


def _against_the_median(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the member's figure is PEER_GAP_PCT worse than its peers' median,
    unless the figures are no speed (_no_speed)."""
    rest = float(m["rest"] or m["rest2"])
    if rest <= 0 or _no_speed(m):
        return None
    one = float(m["one"])
    timed = TIME_WORDS.search(m["unit"]) is not None or m["unit"].lower() in ("s", "ms")
    timed = timed or "/" in m["unit"] and not m["unit"].lower().endswith(("/s", "/sec"))
    gap = (one - rest) / rest if timed else (rest - one) / rest
    return slow_member(member_kind(m)) if gap * 100 >= PEER_GAP_PCT else None


def _against_a_peer(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the member's time is PEER_PAIR_RATIO times the peer's (a rate:
    the peer's is that many times the member's); `r0` names a rank; not when the figures are
    no speed (_no_speed)."""
    one, peer = float(m["one"]), float(m["rest"])
    if min(one, peer) <= 0 or _no_speed(m):
        return None
    timed = TIME_WORDS.search(m["unit"]) is not None or m["unit"].lower() in ("s", "ms")
    ratio = one / peer if timed else peer / one
    if ratio < PEER_PAIR_RATIO:
        return None
    return slow_member(member_kind(m) if m["kind"] else K.JOB)


_RETRACTED = re.compile(
    r"\b(?:not|n't|never|no\s+longer)\b[^.\n]{0,25}$"
    r"|\b(?:thought|assumed|suspected|guessed|believed|figured)\b[^.\n]{0,30}$",
    re.IGNORECASE,
)
_OWN_CAUSE = re.compile(
    r"\b(?:NFS|nfsd|iowait|storage|Lustre|GPFS|file\s+server|HW\s+Slowdown|throttl\w*|clocks?"
    r"|MHz|ibstat|Rate:|link|PCIe|ECC|Xid|thermal|temperature)\b",
    re.IGNORECASE,
)


def _named_bottleneck(m: re.Match[str]) -> Verdict | None:
    """Return straggler on the member named as the bottleneck, unless the words before deny or
    retract it (`it's not like rank 3 is`, `I first thought GPU 3 was`) or its line names the
    member's own cause (a storage server, a throttled clock, a slow link)."""
    if _RETRACTED.search(m.string[max(0, m.start() - 60) : m.start()]):
        return None
    if _OWN_CAUSE.search(m.string):
        return None
    return _uneven(m)


def _late(m: re.Match[str]) -> Verdict:
    return slow_member(member_kind(m), A.MONITOR)


def _uneven(m: re.Match[str]) -> Verdict | None:
    """Return straggler on the members said to move at different paces, unless denied."""
    if re.search(r"\b(?:no|not|never)\b", m[0], re.IGNORECASE):
        return None
    return slow_member(member_kind(m))


_TIMES = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?:x|times)\b", re.IGNORECASE)


def _named_slower(m: re.Match[str]) -> Verdict | None:
    """Return straggler on the component the sentence names (GPU, node or rank), unless the
    factor is within the noise (``PEER_GAP_PCT`` or less) or the sentence names a one-off
    (``_ONE_OFF``: a checkpoint's write, a compile, the first step), or the line explains it
    away (explained.explains: a fix after which the members are even again)."""
    times = _TIMES.search(m[0])
    if times is not None and float(times["n"]) <= 1 + PEER_GAP_PCT / 100:
        return None
    if _ONE_OFF.search(_sentence(m)) or explains(m.string):
        return None
    return slow_member(MEMBER_KIND[m["kind"].lower()])


RULES: tuple[Rule, ...] = (
    rule(
        "straggler.named_slowest_by_ratio",
        # a step timer's verdict: a named member the slowest, by a ratio to the median
        # (`Rank 12 slowest in 600/600 of the last steps (1.67x median compute)`)
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker|stage)\s*#?\s*\d+\b[^.;\n]{0,12}?\bslowest\b"
        r"[^.;\n]{0,60}?\b(?P<ratio>\d+(?:\.\d+)?)\s*(?:x|×|times)\s+(?:the\s+)?(?:job\s+)?median\b"
        # a detector's fields (`slowest rank: 12 (...) ratio_to_median=1.67`)
        r"|\bslowest\s+(?P<kind2>GPU|node|host|rank|worker)\s*[:=]?\s*\d+\b[^\n]{0,80}?"
        r"\bratio_to_median\s*[=:]\s*(?P<ratio2>\d+(?:\.\d+)?)",
        ("slowest",),
        "A tool names one member the slowest by a ratio to the median of its peers: in a "
        "synchronous job the others wait for it, so it is a straggler to inspect.",
        judge=_slowest_by_ratio,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.named_slower_than_peers",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)\s*#?\s*\d+\b[^.;\n]{0,40}?\b"
        + _DEGREE
        + r"\s+slower,?\s+th[ae]n\s+"
        + _PEERS,
        ("slower",),
        "A report naming one GPU, node or rank as much (or N times) slower than its peers: in a "
        "synchronous job every other member waits for it, so it is a straggler to inspect.",
        judge=_named_slower,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.called_straggler",
        r"\b(?:a|an|one|the|single)\s+(?:single\s+)?(?:straggl(?:er|ing)|struggl(?:er|ing))"
        r"(?:\s+(?P<kind>GPU|card|device|node|host|rank|worker)s?\b)?"
        r"|\b(?:straggl|struggl)(?:er|ing)\s+(?P<kind2>GPU|card|device|node|host|rank|worker)s?\b",
        ("straggl", "struggl"),
        "The report calls one member a straggler: in a synchronous job every other member "
        "waits for it at each collective, so the job runs at its pace.",
        judge=_called_straggler,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.found_slow",
        r"\b(?:found|find|finds|notic\w+|saw|see|sees|observed?|identified|detected|spotted)\s+"
        r"(?:that\s+)?(?:[\w()-]+\s+){0,3}?(?P<kind>GPU|card|device|node|host|rank|worker)s?\s+"
        r"(?:to\s+be|are|is|were|was|being|as)\s+(?:\w+\s+)?(?:slow|slower|stragglers?)\b",
        ("slow", "straggler"),
        "Someone found one or more members slow (by hand, or with a check): in a synchronous "
        "job every other member waits for them, so they are stragglers to inspect.",
        judge=_found_slow,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.percent_behind_peers",
        r"\b(?P<pct>\d+(?:\.\d+)?)\s*%\s+(?:longer|slower)\s+than\s+(?:its|their)\s+peers\b"
        r"|\b(?P<pct2>\d+(?:\.\d+)?)\s*%\s+(?:longer|slower)\s+than\s+(?:all\s+)?the\s+"
        r"(?:other\s+(?:GPU|card|device|node|host|rank|worker)s|rest)\b",
        ("longer than", "slower than"),
        f"One member said to take at least {PEER_GAP_PCT:g} % longer than its peers: in a "
        "synchronous job every other member waits that long for it at each step.",
        judge=_percent_behind,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.slower_than_the_others",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)\b[^.\n]{0,40}?"
        r"(?:\b(?P<degree>much|far|significantly|considerably|way|always|consistently)\s+)?"
        r"\b(?P<slower>slower)\s+than\s+(?:the\s+|all\s+(?:the\s+)?)?(?:other\s+"
        r"(?:GPU|card|device|node|host|rank|worker)s|others|rest)\b",
        ("slower than",),
        "A member said to be slower than the other members, by a clear degree or with the "
        "others waiting for it at each collective: the straggler that paces the job.",
        judge=_slower_than_others,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.one_below_the_rest",
        r"\b(?:GPU|card|device|node|host|rank|worker)s\s*#?\d+\s*(?:-|–|to|through|and)\s*#?\d+"
        r"\s+(?:\w+\s+){0,2}?(?P<rest>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z/]+)[^\n]{0,40}?"
        r"\b(?:however|but|while|whereas)\b,?\s+(?:the\s+)?"
        r"(?P<kind>GPU|card|device|node|host|rank|worker)\s*[/#]?\s*\d+\b[^.\n\d]{0,30}"
        r"(?P<one>\d+(?:\.\d+)?)",
        ("however", "but", "while", "whereas"),
        "A report giving the rest of the members one figure and one member a worse one (`GPUs "
        f"1 - 5 average 31.6 MHs. However, GPU/0 hashes at 25`): a gap of {PEER_GAP_PCT:g} % "
        "or more is a fail-slow member the others wait for.",
        judge=_one_below,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.member_against_the_median",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)\s*[#:]?\s*[a-z]?\d+\b[^.\n\d]{0,40}?"
        rf"(?P<one>\d+(?:\.\d+)?)\s*(?P<unit>{_FIGURE_UNIT})(?![\w/])[^.\n\d]{{0,12}}?"
        r"\b(?:vs\.?|versus|compared\s+(?:to|with)|against)\s+"
        r"(?:(?:the\s+)?(?:median|mean|average|typical)\b[^\n]{0,40}?(?P<rest>\d+(?:\.\d+)?)\s*"
        r"(?P=unit)(?![\w/])|(?P<rest2>\d+(?:\.\d+)?)\s*(?P=unit)\s+(?:for|on|of|across)\s+"
        r"(?:the\s+)?(?:median|mean|average|typical|other|rest)\b)",
        ("vs", "versus", "compared", "against"),
        "A member's figure set against the median (mean, typical) of its peers (`Rank r2 input "
        "wait was 199.7ms vs median rank r0 at 10.4ms`, `1.9 s/step versus 1.2 s/step for the "
        f"median GPU`): a gap of {PEER_GAP_PCT:g} % or more is a fail-slow member the others "
        "wait for, unless the sentence names a one-off (a checkpoint, a compile, the first "
        "step), calls it fine, or the figure is a count of errors.",
        judge=_against_the_median,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.member_against_a_peer",
        rf"(?:{_MEMBER}|\br\d+)\b[^.\n\d]{{0,40}}?(?P<one>\d+(?:\.\d+)?)\s*"
        rf"(?P<unit>{_FIGURE_UNIT})(?![\w/])[^.\n\d]{{0,12}}?"
        rf"\b(?:vs\.?|versus|compared\s+(?:to|with)|against)\s+(?:{_PEER}|r\d+)\b[^.\n\d]{{0,20}}?"
        r"(?P<rest>\d+(?:\.\d+)?)\s*(?P=unit)\b",
        ("vs", "versus", "compared", "against"),
        "One member's figure set against one named peer's (`r0 input wait 201.6ms vs r1 "
        f"1.4ms`): {PEER_PAIR_RATIO:g} times the peer's time (or a {PEER_PAIR_RATIO:g}th of its "
        "rate) is a fail-slow member; a single peer may jitter, so the gap must be wide.",
        judge=_against_a_peer,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.others_idle",
        r"\b(?:most|all|the\s+other|every\s+other)\s+(?:\w+\s+)?(?:workers?|ranks?|GPUs?|nodes?)\b"
        r"[^.\n]{0,80}?\b(?:a|one)\s+single\s+(?P<kind>worker|rank|GPU|node)\b[^.\n]{0,40}?\bidle\b"
        r"|\b(?:a|one)\s+(?:single\s+)?(?:slow\s+)?(?P<kind2>worker|rank|GPU|node)\b[^.\n]{0,80}?"
        r"\b(?:the\s+)?(?:others?|rest)\b[^.\n]{0,30}?\b(?:sit|sits|sitting|stay|stays|are|left)\s+"
        r"idle\b",
        ("idle",),
        "A report that the other members finish and sit idle while one member is still working "
        "(`most workers complete before a single worker and sit idle`): the straggler they wait "
        "for.",
        judge=_uneven,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.member_is_the_bottleneck",
        rf"{_MEMBER}\b(?:\s*\([^)\n]{{0,40}}\))?\s+(?:is|was|seems\s+to\s+be|appears\s+to\s+be|"
        r"looks\s+like|(?:is|was)\s+(?:clearly|always|consistently))\s+(?:the|our)\s+bottleneck\b",
        ("bottleneck",),
        "A report that names one member as the job's bottleneck (`rank 3 is the bottleneck`): "
        "the member the others wait for; a sentence that denies or retracts it is silent, and "
        "so is one that gives the member's own cause (a storage server, a throttled clock, a "
        "slow link: the rules of that cause read it).",
        judge=_named_bottleneck,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.member_performs_badly",
        r"\b(?:the\s+)?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|last|\d+(?:st|nd|rd|th))"
        r"(?:\s+(?:and|&)\s+(?:the\s+)?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|last|"
        r"\d+(?:st|nd|rd|th)))?\s+(?P<kind>GPU|card|device|node|host|rank|worker)s?\b[^.\n]{0,60}?"
        r"\b(?:really\s+|very\s+|much\s+|consistently\s+|reporting\s+)*(?:bad|poor|low|lower|terrible|"
        r"horrible|worse)\s+(?:hash\s*rates?|speeds?|performance|throughput|bandwidth|FLOPS)\b",
        ("bad", "poor", "low", "terrible", "horrible", "worse"),
        "A report that one particular member (the second node, the 2nd and 3rd cards) performs "
        "badly while the others do not: a fail-slow member to inspect.",
        judge=_found_slow,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.paced_by_the_slowest",
        r"\b(?:bottleneck\w*|held\s+back|limited|gated|paced|throttled)\s+(?:on|by|to)\s+"
        r"(?:the\s+(?:speed\s+of\s+the\s+)?)?slowest\s+(?P<kind>GPU|card|device|node|host|rank|worker)\b",
        ("slowest",),
        "The job said to be held to the pace of its slowest member: a synchronous job runs at "
        "its straggler's speed.",
        judge=_found_slow,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.few_members_slow",
        r"\b(?:one|a\s+single|single|a\s+few|few)\s+(?:[\w-]+\s+){0,3}?"
        r"(?P<kind>GPU|card|device|node|host|rank|worker)s?\b[^.\n]{0,120}",
        (
            "slow",
            "throttl",
            "lag",
            "late",
            "held up",
            "hold",
            "not fast enough",
            "overheat",
            "low",
            "poor",
            "bad",
        ),
        "One (or a few) members said to be slow, throttled or late while the others or the job "
        "wait: a fail-slow member holds back every synchronous step.",
        judge=_few_slow,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.uneven_pace",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)s\b[^.\n]{0,40}?\b(?:progress|run|"
        r"train|mov|go|work|step|advanc)\w*\s+(?:\w+\s+){0,2}?at\s+(?:\w+\s+){0,2}?"
        r"(?:different|uneven|varying)\s+(?:paces?|speeds?|rates?)\b",
        ("different", "uneven", "varying"),
        "Members of one job said to move at different paces: in a synchronous job the fast ones "
        "wait for the slowest at every collective, so one of them is a straggler to find.",
        judge=_uneven,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.member_late",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)\s*#?\s*\d+\b[^.\n]{0,60}?"
        r"(?:\b\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds?|min|minutes?)|\b(?:about\s+|almost\s+|"
        r"nearly\s+|over\s+)?(?:a|one|several|a\s+few)\s+(?:seconds?|minutes?))\s+"
        r"(?:later?\b|behind\s+(?:the|all|its|every)\b)",
        ("late", "behind"),
        "A named member arrives a measured time after (or behind) the others (at the "
        "barrier, at the batch): every other member waited that long for it.",
        judge=_late,
        flags=re.IGNORECASE,
    ),
)
