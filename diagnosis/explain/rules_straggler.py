"""Straggler reports: tools that print every device's or node's figure on one line or table.

Each rule follows one tool's own message format and judges the figures it prints, so a healthy
report of the same tool is benign and a report with one far slower member is a straggler:

- dlrover's network/straggler check, ``The elapsed time of nodes are {node: seconds, ...}``:
  a node taking ``SLOW_ELAPSED_RATIO`` times the median of the nodes is a straggler;
- gpu_burn's progress line, ``proc'd: N (X Gflop/s) - M (Y Gflop/s) - ...`` (one group per
  GPU, in device order): a GPU below the slow-peer ratio of its peers (peers.slow_peer);
- xtuner's log analyser, ``[step N] step_time=Ts  dt_med=Ms  dt_max=Xs``: the slowest rank
  spent a large share of the step loading data while the median rank waited for it;
- NVIDIA Resiliency Extension's straggler detector (NeMo, Megatron-Bridge callbacks), whose
  warning ``STRAGGLER DETECTION WARNING: Some GPUs have worse relative performance. Affected
  ranks: [...]`` (or ``Some GPUs performance dropped``) is printed only when a score fell below
  its threshold; the periodic score report alone is not a finding;
- TraceML's end-of-run verdict, ``TraceML Verdict: INPUT STRAGGLER / CRITICAL`` (its rank-skew
  diagnoses: ``STRAGGLER`` alone or after INPUT, COMPUTE, H2D, RESIDUAL or WAIT);
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
  average 31.6 MHs. However, GPU/0 hashes at 25 Mhs``); a particular member performing badly
  (``on the second node I get really bad performance``); a job held to its slowest member;
- a named member arriving a measured time late (``Rank 5 enters the barrier 290ms late``,
  ``GPU 3 began about a minute later``);
- a per-member result row a check flags ``OUTLIER``, and ClusterKit's ``Nodes exhibited poor
  performance with all other nodes``;
- one GPU's utilisation several times the others' (or a third of it) in the same sentence: the
  busy one computes while the rest wait on it, or the idle one starves the rest;
- a per-member score map (NVRx's relative performance scores, ``{rank: score, ...}`` with
  scores from 0 to 1, 1.0 the best member): one member below the slow-peer ratio of the median;
- figures listed for named members ``... were A, B, C and D respectively``: a rate (bandwidth,
  throughput, FLOPS) below the slow-peer ratio of the others', or a time ``SLOW_ELAPSED_RATIO``
  times theirs;
- the slowest member said to take N times the fastest's time (N at least ``SLOW_ELAPSED_RATIO``).

Guarantees: every rule needs the figures of its own format; too few members (fewer than
three nodes, fewer than ``peers.MIN_PEERS`` GPUs) or figures within the ratios are benign. The
detector warning and the verdict are the tools' own judgement: a warning with an empty rank list
is not one.
"""

from __future__ import annotations

import re
from statistics import median

from diagnosis.catalog import Verdict
from diagnosis.explain.peers import MIN_PEERS, slow_peer
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.explain.training import HEALTHY
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

SLOW_ELAPSED_RATIO = 2.0
"""A node whose check takes this many times the median of all nodes' is a straggler."""
MIN_NODES = 3
DATA_SHARE = 0.25
"""The slowest rank's data-loading time, as a share of the step, that makes it a straggler."""
DATA_SKEW = 10.0
"""... provided it is also this many times the median rank's data-loading time."""

SLOW_NODE = verdict(C.STRAGGLER, B.INFRASTRUCTURE, K.NODE, S.WARNING, A.HARDWARE_INSPECTION, 0.5)
SLOW_GPU = verdict(C.STRAGGLER, B.INFRASTRUCTURE, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.5)
SLOW_INPUT = verdict(C.STRAGGLER, B.UNKNOWN, K.NODE, S.WARNING, A.MONITOR, 0.5)
SLOW_RANK = verdict(C.STRAGGLER, B.UNKNOWN, K.JOB, S.WARNING, A.MONITOR, 0.5)

_MEMBER_KIND = {
    "gpu": K.GPU,
    "card": K.GPU,
    "device": K.GPU,
    "node": K.NODE,
    "host": K.NODE,
    "rank": K.JOB,
    "worker": K.JOB,
}
_DEGREE = r"(?:much|far|significantly|considerably|way|\d+(?:\.\d+)?\s*(?:x|times))"
_PEERS = r"(?:the\s+|all\s+(?:the\s+)?)?(?:other|others|rest|remaining|peers|its\s+peers)\b"
_NODE_TIME = re.compile(r"(\d+)\s*:\s*(\d+(?:\.\d+)?)")
_GPU_RATE = re.compile(r"\((\d+(?:\.\d+)?) Gflop/s\)")


def _slowest_far_behind(times: list[float]) -> bool:
    """Return whether the longest of the members' times is SLOW_ELAPSED_RATIO x their median."""
    middle = median(times)
    return middle > 0 and max(times) >= SLOW_ELAPSED_RATIO * middle


def _elapsed(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one node's elapsed time is far above the nodes' median."""
    times = [float(t) for _, t in _NODE_TIME.findall(m["nodes"])]
    if len(times) < MIN_NODES:
        return None
    return SLOW_NODE if _slowest_far_behind(times) else HEALTHY


def _burn(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one GPU's Gflop/s is far below its peers' on a gpu_burn line."""
    rates = [float(r) for r in _GPU_RATE.findall(m.string)]
    if len(rates) < 2:
        return None
    slow = slow_peer([(str(i), rate) for i, rate in enumerate(rates)])
    return SLOW_GPU if slow is not None else HEALTHY


def _data_bound(m: re.Match[str]) -> Verdict:
    """Return straggler when the slowest rank's data time dominates the step."""
    step, median, worst = float(m["step"]), float(m["med"]), float(m["max"])
    if worst >= DATA_SHARE * step and worst >= DATA_SKEW * median:
        return SLOW_INPUT
    return HEALTHY


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
UTIL_SKEW = 3.0
"""One GPU's utilisation this many times the others' (or a third of it) is a straggler."""


_MEMBER_WORD = re.compile(r"\b(GPU|card|device|node|host|rank|worker)s?\b", re.IGNORECASE)


def _slow_member(kind: K, action: A = A.HARDWARE_INSPECTION) -> Verdict:
    """A straggler a report names in words (lower confidence than a tool's own figures)."""
    return verdict(C.STRAGGLER, B.UNKNOWN, kind, S.WARNING, action, 0.4)


def _member_kind(m: re.Match[str]) -> K:
    """The member the match names, else the last one named just before it, else a node."""
    named = m.groupdict().get("kind") or m.groupdict().get("kind2")
    if named is None:
        before = _MEMBER_WORD.findall(m.string[max(0, m.start() - 80) : m.start()])
        named = before[-1] if before else "node"
    return _MEMBER_KIND[named.lower()]


def _called_straggler(m: re.Match[str]) -> Verdict | None:
    """Return straggler unless the words just before deny it (``no straggler``)."""
    before = m.string[max(0, m.start() - 30) : m.start()]
    if _DENIED.search(before) or re.search(r"\b(?:no|not|without)\b", m[0], re.IGNORECASE):
        return None
    return _slow_member(_member_kind(m))


def _few_slow(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the few members are slow and the text around is about the job
    (the sentence, or what comes just before it)."""
    around = m.string[max(0, m.start() - 200) : m.end()]
    among = re.match(r"one\s+of\b", m[0], re.IGNORECASE) is not None  # one of several: peers
    if not (_SLOW_WORDS.search(m[0]) and (among or _JOB_WORDS.search(around))):
        return None
    return _slow_member(_member_kind(m))


def _found_slow(m: re.Match[str]) -> Verdict | None:
    """Return straggler on the members someone found slow, unless the words before deny it
    (``never found a node to be slow``)."""
    before = m.string[max(0, m.start() - 30) : m.start() + len(m[0].split()[0])]
    if re.search(r"\b(?:no|not|never|didn't|don't|couldn't|haven't|hasn't)\b", before, re.I):
        return None
    return _slow_member(_member_kind(m))


def _percent_behind(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the gap to the peers is at least PEER_GAP_PCT."""
    if float(m["pct"] or m["pct2"]) < PEER_GAP_PCT:
        return None
    return _slow_member(_member_kind(m), A.MONITOR)


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
    return _slow_member(_member_kind(m))


def _one_below(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the one member's figure is PEER_GAP_PCT worse than the rest's (a
    rate below, a time above)."""
    rest, one = float(m["rest"]), float(m["one"])
    if rest <= 0:
        return None
    timed = _TIME_WORDS.search(m["unit"]) is not None or m["unit"].lower() in ("s", "ms")
    gap = (one - rest) / rest if timed else (rest - one) / rest
    return _slow_member(_member_kind(m)) if gap * 100 >= PEER_GAP_PCT else None


def _late(m: re.Match[str]) -> Verdict:
    return _slow_member(_member_kind(m), A.MONITOR)


def _util_skew(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one GPU's utilisation and the others' differ UTIL_SKEW-fold."""
    one, others = float(m["one"]), float(m["others"])
    low, high = min(one, others), max(one, others)
    if high < UTIL_SKEW * max(low, 1.0):
        return HEALTHY
    return SLOW_GPU


_FRACTION = r"\s*'?\d+'?\s*:\s*(?:0(?:\.\d+)?|1(?:\.0+)?)\s*"
_SCORE_MAP = re.compile(rf"\{{{_FRACTION}(?:,{_FRACTION}){{{MIN_PEERS - 1},}}\}}")
_ENTRY = re.compile(r"'?(\d+)'?\s*:\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_RATE_WORDS = re.compile(
    r"bandwidth|throughput|[GT]FLOP|[GM]B/s|Gb/s|Gbps|busbw|algbw|samples/s|tokens/s|score",
    re.IGNORECASE,
)
_TIME_WORDS = re.compile(r"\btime|latenc|duration|elapsed|took\b|\b(?:ms|sec|seconds)\b", re.I)


def _score_map(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one member of a score map (higher is better) is far below the
    median member; healthy when every map is even."""
    maps = [
        [(member, float(score)) for member, score in _ENTRY.findall(found[0])]
        for found in _SCORE_MAP.finditer(m.string)
    ]
    slow = any(slow_peer(group) is not None for group in maps)
    return _slow_member(K.GPU) if slow else HEALTHY


def _respectively(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one of the figures listed per member is far off the others' in
    the slow direction of what they measure (a rate low, a time high)."""
    values = [float(v) for v in _NUMBER.findall(m["values"])]
    if len(values) < MIN_PEERS:
        return None
    what = m.string[max(0, m.start() - 120) : m.end()]
    if _RATE_WORDS.search(what):
        slow = slow_peer([(str(i), v) for i, v in enumerate(values)]) is not None
    elif _TIME_WORDS.search(what):
        slow = _slowest_far_behind(values)
    else:
        return None
    return _slow_member(_MEMBER_KIND[m["kind"].lower()]) if slow else HEALTHY


def _slowest_times(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the slowest member takes N times the fastest's time."""
    if float(m["ratio"]) < SLOW_ELAPSED_RATIO:
        return None
    return _slow_member(_MEMBER_KIND[m["kind"].lower()])


def _uneven(m: re.Match[str]) -> Verdict | None:
    """Return straggler on the members said to move at different paces, unless denied."""
    if re.search(r"\b(?:no|not|never)\b", m[0], re.IGNORECASE):
        return None
    return _slow_member(_member_kind(m))


def _named_slower(m: re.Match[str]) -> Verdict:
    """Return straggler on the component the sentence names (GPU, node or rank)."""
    kind = _MEMBER_KIND[m["kind"].lower()]
    return _slow_member(kind)


RULES: tuple[Rule, ...] = (
    rule(
        "straggler.node_elapsed",
        r"The elapsed time of nodes are \{(?P<nodes>[^}]*)\}",
        ("elapsed time of nodes",),
        "dlrover's node check prints every node's time for the same task: a node taking "
        f"{SLOW_ELAPSED_RATIO:g}x the median is a slow node (NIC, NVLink, GPU or host).",
        judge=_elapsed,
    ),
    rule(
        "straggler.gpu_burn",
        r"proc'd: \d+ \(\d+(?:\.\d+)? Gflop/s\)(?: - \d+ \(\d+(?:\.\d+)? Gflop/s\))+",
        ("proc'd:",),
        "gpu_burn's progress line gives each GPU's Gflop/s in device order: a GPU far below "
        "the median of at least four peers is a fail-slow GPU.",
        judge=_burn,
    ),
    rule(
        "straggler.data_bound_step",
        r"\[step \d+\] step_time=(?P<step>[\d.]+)s\s+dt_med=(?P<med>[\d.]+)s\s+"
        r"dt_max=(?P<max>[\d.]+)s",
        ("dt_max=",),
        "xtuner's train-log analyser: the slowest rank's data time (dt_max) against the step "
        "and the median rank's (dt_med); when it dominates, every other rank waited for it.",
        judge=_data_bound,
    ),
    rule(
        "straggler.nvrx_warning",
        r"STRAGGLER DETECTION WARNING: Some GPUs (?:have worse relative performance|performance "
        r"dropped)\. Affected ranks: [\[{(]\s*\d",
        ("straggler detection warning",),
        "NVRx's straggler detector warns only when a GPU's relative score (against its peers) "
        "or individual score (against its own history) fell below the configured threshold; "
        "the listed ranks are the slow GPUs.",
        SLOW_GPU,
    ),
    rule(
        "straggler.traceml_verdict",
        r"TraceML Verdict:\s*(?:(?:INPUT|COMPUTE|H2D|RESIDUAL|WAIT)[ _])?STRAGGLER\b",
        ("traceml verdict",),
        "TraceML's end-of-run verdict names a rank-skew diagnosis: one rank is slow enough "
        "(input, compute, transfer or unattributed) to hold back the synchronous step.",
        SLOW_RANK,
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
    rule(
        "straggler.outlier_row",
        r"(?im)^[^\n]*(?:node|host|gpu|rank)[\w.-]*\b[^\n]*\bOUTLIER\b"
        r"|poor\s+perfor\w+\s+with\s+all\s+other\s+nodes",
        ("outlier", "poor perfor"),
        "A check that compares members flagged this one's figure as an outlier (or, "
        "ClusterKit, as poor against every other node): a slow node or link.",
        SLOW_NODE,
    ),
    rule(
        "straggler.score_map",
        _SCORE_MAP.pattern,
        ("{",),
        "A straggler detector's per-member scores (NVRx: 1.0 is the best member, 0.5 twice as "
        "slow): a member far below the median member is the straggler that holds back the "
        "synchronous step.",
        judge=_score_map,
    ),
    rule(
        "straggler.listed_figures",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)s?\s*(?:#\s*)?\d+(?:\s*,\s*\d+)*"
        r",?\s+and\s+\d+\b[^.\n]{0,40}?\b(?:were|are|was|is|of)\s+"
        r"(?P<values>\d+(?:\.\d+)?(?:\s*,\s*\d+(?:\.\d+)?)*,?\s+and\s+\d+(?:\.\d+)?)"
        r"[^.\n]{0,20}?\brespectively\b",
        ("respectively",),
        "Figures listed one per member (`device 0, 1, 2 and 3 were ... respectively`): one "
        "member's rate far below the others' (or its time far above) is a fail-slow member.",
        judge=_respectively,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.slowest_times_fastest",
        r"\bslowest\s+(?P<kind>GPU|card|device|node|host|rank|worker)s?\b[^.\n]{0,80}?"
        r"~?\s*(?P<ratio>\d+(?:\.\d+)?)\s*(?:x\b|×|times\b)[^.\n]{0,40}?\bfastest\b",
        ("slowest",),
        "The slowest member takes several times the fastest's time for the same work: a slow "
        "member that holds back (or should be taken out of) the group.",
        judge=_slowest_times,
        flags=re.IGNORECASE,
    ),
    rule(
        "straggler.utilisation_skew",
        r"\b(?:GPU\s*#?\s*\d+|one\s+GPU(?:'s)?)\b[^.\n]{0,40}?utili[sz]\w*[^.\n%]{0,40}?"
        r"(?P<one>\d+(?:\.\d+)?)\s*%[^.\n]{0,60}?\bother(?:s|\s+(?:GPUs?|cards?))?\b"
        r"[^.\n%]{0,40}?(?P<others>\d+(?:\.\d+)?)\s*%",
        ("utiliz", "utilis"),
        "One GPU busy while the others idle (or the reverse) during a synchronous job: the "
        "others wait on it, or it starves them.",
        judge=_util_skew,
        flags=re.IGNORECASE,
    ),
)
