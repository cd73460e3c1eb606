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

Reports in words (a person's sentence naming the slow member) are in
diagnosis/explain/rules_straggler_words.py; rules.all_rules puts them between the tools'
own verdicts (`TOOL_RULES`) and the judged figures (`FIGURE_RULES`), as they always ran.

Guarantees: every rule needs the figures of its own format; too few members (fewer than
three nodes, fewer than ``peers.MIN_PEERS`` GPUs) or figures within the ratios are benign. The
detector warning and the verdict are the tools' own judgement: a warning with an empty rank list
is not one.
"""

import re
from statistics import median

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import explained
from diagnosis.explain.peers import MIN_PEERS, SLOW_PEER_RATIO, slow_peer
from diagnosis.explain.rules import Rule, rule, unless_named_only, verdict
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

MEMBER_KIND = {
    "gpu": K.GPU,
    "card": K.GPU,
    "device": K.GPU,
    "node": K.NODE,
    "host": K.NODE,
    "rank": K.JOB,
    "worker": K.JOB,
}
_NODE_TIME = re.compile(r"(\d+)\s*:\s*(\d+(?:\.\d+)?)")
_GPU_RATE = re.compile(r"\((\d+(?:\.\d+)?) Gflop/s\)")
TIME_WORDS = re.compile(r"\btime|latenc|duration|elapsed|took\b|\b(?:ms|sec|seconds)\b", re.I)
"""Words that say a figure is a duration (bigger is slower)."""
UTIL_SKEW = 3.0
"""One GPU's utilisation this many times the others' (or a third of it) is a straggler."""


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


_MEMBER_WORD = re.compile(r"\b(GPU|card|device|node|host|rank|worker)s?\b", re.IGNORECASE)


def slow_member(kind: K, action: A = A.HARDWARE_INSPECTION) -> Verdict:
    """A straggler a report names in words (lower confidence than a tool's own figures)."""
    return verdict(C.STRAGGLER, B.UNKNOWN, kind, S.WARNING, action, 0.4)


def member_kind(m: re.Match[str]) -> K:
    """The member the match names, else the last one named just before it, else a node."""
    groups = m.groupdict()
    named = next((v for k, v in groups.items() if k.startswith("kind") and v), None)
    if named is None:
        before = _MEMBER_WORD.findall(m.string[max(0, m.start() - 80) : m.start()])
        named = before[-1] if before else "node"
    return MEMBER_KIND[named.lower()]


def _util_skew(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one GPU's utilisation and the others' differ UTIL_SKEW-fold."""
    one, others = float(m["one"]), float(m["others"])
    low, high = min(one, others), max(one, others)
    if high < UTIL_SKEW * max(low, 1.0):
        return HEALTHY
    return SLOW_GPU


_CARDS = r"(?:GPUs|cards|graphics\s+cards|devices)"
_BY_DESIGN = re.compile(
    r"\b(?:only|just)\s+(?:use|using|used|run|running|ran|train\w*\s+on)\s+(?:one|1|a\s+single"
    r"|\d+\s+(?:of|out\s+of)\s+\d+|\d+\s+(?:GPUs|cards|devices))\b"
    r"|\bCUDA_VISIBLE_DEVICES\b|\bdata\s*load\w*|\bwarm-?up\b"
    # runs pinned to cards one by one, a model split layer by layer across the cards
    r"|--device\s+cuda:\d|\bseparate\s+(?:experiments|runs|jobs|processes)\b|\bpinned\s+to\b"
    r"|\bdevice_map\b|\bnaive\s+(?:model|pipeline)\s+(?:split|parallel\w*)\b"
    # the idle one kept for something else: the display, a spare, a notebook, nothing queued
    r"|\b(?:display|monitors?|desktop|hot\s+spare|spare|reserved|failover|notebook)\b"
    r"|\b(?:on\s+purpose|intentional\w*|deliberately|by\s+design)\b"
    r"|\bkeep\s+(?:it\s+|one\s+)?(?:free|empty|idle)\b|\b(?:no|nothing)\s+(?:job\s+)?(?:is\s+)?"
    r"scheduled\b|\bqueue\b"
    # work that one rank does alone (`we only evaluate on rank 0`), said to be fine
    r"|\bonly\s+(?:evaluat\w*|eval|log\w*|sav\w*|checkpoint\w*)\s+on\s+rank\s*0\b"
    r"|\b(?:that'?s|which\s+is|is)\s+(?:fine|ok|okay|expected)\b",
    re.IGNORECASE,
)


_NPROC = re.compile(r"--nproc[_-]per[_-]node(?:\s*=\s*|\s+)(?P<n>\d+)", re.IGNORECASE)
_GPU_COUNT = re.compile(
    r"\b(?P<n>\d+)\s*(?:x\s*|×\s*|-)?(?:(?:A|H|B|L|V)\d{2,3}\w*\s+)?(?:GPUs?|cards)\b"
    r"|\b(?P<n2>\d+)\s*[x×]\s*(?:A|H|B|L|V)\d{2,3}\b",
    re.IGNORECASE,
)


def _fewer_processes(text: str) -> bool:
    """Whether the launcher started fewer processes than the GPUs the text counts
    (`--nproc_per_node=3 on the 4-GPU box`): the cards left over idle by design. One process a
    GPU (`8x H100 (--nproc_per_node=8)`) leaves none idle."""
    launched = _NPROC.search(text)
    if launched is None:
        return False
    counts = [int(c["n"] or c["n2"]) for c in _GPU_COUNT.finditer(text)]
    return any(count > int(launched["n"]) for count in counts)


def _member_idle(m: re.Match[str]) -> Verdict | None:
    """Return straggler unless the text says the idle one is so by design: only one GPU used or
    launched, fewer processes launched than the GPUs counted, the idle one hidden, kept for the
    display, a spare or a notebook, nothing scheduled on it, one rank's own evaluation said to
    be fine, a data-loading phase or a warm-up (or rules_slowdown explains it)."""
    if _BY_DESIGN.search(m.string) or _fewer_processes(m.string) or explained(m.string):
        return None
    return SLOW_GPU


_FRACTION = r"\s*'?\d+'?\s*:\s*(?:0(?:\.\d+)?|1(?:\.0+)?)\s*"
_SCORE_MAP = re.compile(rf"\{{{_FRACTION}(?:,{_FRACTION}){{{MIN_PEERS - 1},}}\}}")
_ENTRY = re.compile(r"'?(\d+)'?\s*:\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_RATE_WORDS = re.compile(
    r"bandwidth|throughput|[GT]FLOP|[GM]B/s|Gb/s|Gbps|busbw|algbw|samples/s|tokens/s|score",
    re.IGNORECASE,
)


def _score_map(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one member of a score map (higher is better) is far below the
    median member; healthy when every map is even."""
    maps = [
        [(member, float(score)) for member, score in _ENTRY.findall(found[0])]
        for found in _SCORE_MAP.finditer(m.string)
    ]
    slow = any(slow_peer(group) is not None for group in maps)
    return slow_member(K.GPU) if slow else HEALTHY


def _respectively(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one of the figures listed per member is far off the others' in
    the slow direction of what they measure (a rate low, a time high)."""
    values = [float(v) for v in _NUMBER.findall(m["values"])]
    if len(values) < MIN_PEERS:
        return None
    what = m.string[max(0, m.start() - 120) : m.end()]
    if _RATE_WORDS.search(what):
        slow = slow_peer([(str(i), v) for i, v in enumerate(values)]) is not None
    elif TIME_WORDS.search(what):
        slow = _slowest_far_behind(values)
    else:
        return None
    return slow_member(MEMBER_KIND[m["kind"].lower()]) if slow else HEALTHY


def _slowest_times(m: re.Match[str]) -> Verdict | None:
    """Return straggler when the slowest member takes N times the fastest's time."""
    if float(m["ratio"]) < SLOW_ELAPSED_RATIO:
        return None
    return slow_member(MEMBER_KIND[m["kind"].lower()])


MINMAX_RULE = "straggler.megatron_minmax"
MINMAX_MARK = "MnRtt/Rnk:"
"""The detector's report line: the engine notes the last that named no straggler, and a spread
said once that calm intervals follow (a warm-up, a checkpoint) is dropped."""


def _minmax(m: re.Match[str]) -> Verdict | None:
    """Return a slow GPU when the slowest rank's round trip is 1/SLOW_PEER_RATIO times the
    fastest's (Megatron's StragglerDetector: healthy ranks are within a few percent)."""
    fastest, slowest = float(m["mn"]), float(m["mx"])
    return SLOW_GPU if fastest > 0 and slowest * SLOW_PEER_RATIO >= fastest else None


TOOL_RULES: tuple[Rule, ...] = (
    rule(
        MINMAX_RULE,
        r"MnRtt/Rnk: (?P<mn>\d+(?:\.\d+)?)ms/\d+ \| "
        r"MxRtt/Rnk: (?P<mx>\d+(?:\.\d+)?)ms/(?P<rank>\d+)",
        ("mnrtt/rnk",),
        "Megatron's straggler detector prints the fastest and slowest rank's round trip each "
        "interval; the slowest far above the fastest (healthy ranks are within a few percent) "
        "is a slow GPU the others wait for.",
        judge=_minmax,
    ),
    rule(
        "straggler.node_elapsed",
        r"The elapsed time of nodes are \{(?P<nodes>[^}]*)\}",
        ("elapsed time of nodes",),
        "dlrover's node check prints every node's time for the same task: a node taking "
        f"{SLOW_ELAPSED_RATIO:g}x the median is a slow node (NIC, NVLink, GPU or host).",
        judge=_elapsed,
    ),
    rule(
        "straggler.fail_slow_said",
        # a fail-slow detector's own verdict (Greyhound's `Mitigating fail-slow problem...`,
        # `Reason of fail-slow is comp`), or its slow iteration against its fastest
        r"\b(?:Mitigating|Reason\s+of)\s+(?:a\s+|the\s+)?fail-?slow\b"
        r"|\b(?:Detected|Found)\s+(?:a\s+)?fail-?slow\s+(?:on|in|at|rank|node|GPU|member|worker)\b"
        # a detector's own log flagging a member (`[FailSlowDetector] rank 37 (gpu-c09) flagged:`),
        # and in Chinese (`已将该节点标记为fail-slow`)
        r"|\bFail-?Slow\w*\]?\s[^\n]{0,40}?\bflagged\b|标记为\s*fail-?slow"
        r"|(?<!\bno\s)(?<!\bany\s)(?<!\bnot\sa\s)\bfail-?slow\s+(?:detected|found|event|rank|node|GPU)\b",
        ("fail-slow", "failslow"),
        "A fail-slow detector reports a member that works but slowly (a fail-slow GPU, NIC or "
        "host) and what it does about it: the job runs at the slow member's pace.",
        judge=unless_named_only(SLOW_RANK),
        flags=re.IGNORECASE,
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
        r"dropped)\. Affected ranks: [\[{(]\s*(?:\d|StragglerId\()",
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
)
"""The tools' own verdicts and formats: they run before the reports in words."""

_NO_OUTLIER = re.compile(r"\b(?:no|not|none|never|without)\b[^.\n]{0,30}?\boutlier", re.IGNORECASE)


def _flagged(m: re.Match[str]) -> Verdict | None:
    """A slow node, unless the line says there was none (`No node was an outlier`)."""
    return None if _NO_OUTLIER.search(m.string) else SLOW_NODE


FIGURE_RULES: tuple[Rule, ...] = (
    rule(
        "straggler.outlier_row",
        r"(?im)^[^\n]*(?:node|host|gpu|rank)[\w.-]*\b[^\n]*\bOUTLIER\b"
        r"|poor\s+perfor\w+\s+with\s+all\s+other\s+nodes",
        ("outlier", "poor perfor"),
        "A check that compares members flagged this one's figure as an outlier (or, "
        "ClusterKit, as poor against every other node): a slow node or link.",
        judge=_flagged,
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
    rule(
        "straggler.one_member_idle",
        # `the utilization of one of the graphics cards is always 0`
        r"\butili[sz]\w*\s+(?:rate\s+)?of\s+one\s+of\s+(?:the|my|our)\s+(?:[\w-]+\s+){0,2}?"
        rf"{_CARDS}\s+(?:is|stays|remains|was|keeps)\s+(?:always\s+|constantly\s+|still\s+)?"
        r"(?:at\s+)?0\s*%?(?!\d|[.,]\d)"
        # `one of the GPUs is always at 0% utilization`
        r"|\bone\s+of\s+(?:the|my|our)\s+(?:[\w-]+\s+){0,2}?"
        rf"{_CARDS}(?:\s+(?:on|in)\s+[\w-]+)?\s+(?:is|stays|remains|shows|has|sits)\s+"
        r"(?:always\s+|constantly\s+)?(?:at\s+)?0\s*%\s+(?:utili[sz]\w*|usage|util|load)\b"
        # `sometimes one or two GPUs' util will be 0 (for a long time)`
        r"|\b(?:one|1)(?:\s+or\s+(?:two|2))?\s+(?:of\s+the\s+)?(?:GPUs?|cards?)(?:'s?|’s?)?\s+"
        r"(?:util\w*|usage|load)\s+(?:will\s+be|is|stays|drops\s+to|goes\s+to|(?:is\s+)?set\s+to)\s+(?:at\s+)?0\b"
        r"(?!\.\d)"
        # `1 gpu sometime use 100% its ult while others is waiting with 0%`
        r"|\b(?:one|1)\s+(?:GPU|card|device)\b[^.\n%]{0,40}?\b(?:100|9\d)\s*%[^.\n]{0,30}?"
        r"\bwhile\s+(?:the\s+)?(?:others?|rest)\b[^.\n%]{0,30}?\b(?:wait\w*|idle)\b"
        r"[^.\n%]{0,20}?(?<![\d.])0\s*%"
        # `one gpu utilization is very high (>90%) and one is very low (<10%)`
        r"|\bone\s+(?:GPU\s+|card\s+)?(?:util\w*\s+)?(?:is|was|stays)\s+(?:very\s+|extremely\s+)?high\b"
        r"[^.\n]{0,30}?\b(?:and|but|while)\s+(?:the\s+other(?:\s+one)?|one|another)\s+(?:is|was|stays)\s+"
        r"(?:very\s+|extremely\s+)?low\b"
        # `3 GPUs at 100% while the fourth sits at 0%`, `GPU 0 at 100%, GPUs 1-3 at 0%`
        r"|\b(?:\d|one|two|three|four|seven)\s+(?:GPUs?|cards?)\s+(?:are\s+|is\s+)?(?:at|on)\s+(?:100|9\d)\s*%,?\s+"
        r"(?:and|while|but)\s+the\s+(?:second|third|fourth|fifth|sixth|seventh|eighth|last|other)\s+"
        r"(?:one\s+|GPU\s+|card\s+)?(?:is|sits|stays|remains)\s+(?:at\s+)?0\s*%"
        # `4 GPUs at 100% and the other 4 at 0%`
        r"|\b\d+\s+(?:GPUs|cards)\s+(?:are\s+)?(?:at|on)\s+(?:100|9\d)\s*%,?\s+(?:and|while|but)\s+the\s+"
        r"other\s+\d+\s+(?:GPUs\s+|cards\s+)?(?:are\s+)?(?:at|on)\s+0\s*%"
        r"|\bGPU\s*\d\s+(?:is\s+)?at\s+(?:100|9\d)\s*%,?\s+(?:and\s+|while\s+|but\s+)?GPUs\s+\d\s*[-–]\s*\d\s+"
        r"(?:are\s+)?at\s+0\s*%"
        # `one or two GPUs have 0 utilization, and the others have 100%`, `only 1 of 8 GPU is
        # working`
        r"|\b(?:one|1)(?:\s+or\s+(?:two|2))?\s+(?:of\s+the\s+)?(?:GPUs?|cards?)\s+(?:have|has|shows?"
        r"|(?:are|is)\s+at)\s+0\s*%?\s+(?:utili[sz]\w*|usage|util|load)\b[^.\n]{0,30}?\b(?:others?|rest)"
        r"\b[^.\n]{0,15}?(?:100|9\d)\s*%"
        r"|\bonly\s+(?:1|one)\s+(?:of|out\s+of)\s+(?:\d+|two|four|eight)\s+GPUs?\s+(?:is|are)\s+"
        r"(?:working|busy|used|utili[sz]ed|active)\b"
        # `only one gpu card work(GPU-Util>0)`, `there is alway one GPU with zero usage`
        r"|\bonly\s+(?:1|one)\s+(?:GPU\s+|graphics\s+)?(?:card|GPU|device)s?\s+(?:is\s+|are\s+)?"
        r"(?:work|works|working|busy|utili[sz]ed|active)\b(?=[^.\n]{0,40}?(?:util|usage|load"
        r"|\bidle\b|%))"
        r"|\b(?:always|alway|there\s+is|there's)\s+(?:(?:always|alway)\s+)?(?:one|1)\s+(?:GPU|card)"
        r"\s+with\s+(?:zero|0\s*%?)\s+(?:usage|util\w*|load)\b"
        # `1 gpu is at 100% the other would be at only 30 %`, `1 gpu on 80 - 100% and the other
        # at 0% - 30 %`
        r"|\b(?:one|1)\s+(?:GPU|card)\s+(?:is\s+|was\s+|would\s+be\s+)?(?:at|on)\s+"
        r"(?:[5-9]\d\s*%?\s*[-–]\s*)?(?:100|9\d)\s*%,?\s+(?:and\s+|while\s+|but\s+)?the\s+other"
        r"(?:\s+one)?\s+(?:is\s+|was\s+|would\s+be\s+|stays\s+)?(?:at|on)\s+(?:only\s+)?"
        r"(?:\d\s*%?\s*[-–]\s*)?[0-3]?\d\s*%"
        # `GPU 0 stays at 100% utilization the whole time while GPU 1 sits at 0%`
        r"|\bGPU\s*\d+\s+(?:stays|is|sits|runs|remains)\s+at\s+(?:100|9\d)\s*%[^.\n]{0,40}?\b(?:while|but|and)"
        r"\s+GPU\s*\d+\s+(?:stays|is|sits|remains)\s+at\s+0\s*%"
        # `drop to 3 GPUs at ~100% and one at 0%`
        r"|\b(?:\d|two|three|seven)\s+(?:GPUs?|cards?)\s+(?:are\s+)?at\s+~?(?:100|9\d)\s*%,?\s+and\s+"
        r"(?:only\s+)?one\s+(?:is\s+)?at\s+~?0\s*%"
        # `with 2 units at 100%, and the rest at 0%`
        r"|\b(?:\d|one|two|three|four)\s+(?:of\s+the\s+)?(?:units?|GPUs?|cards?|devices?)\s+"
        r"(?:are\s+|is\s+|stays?\s+|sits?\s+)?(?:at|on)\s+(?:100|9\d)\s*%,?\s+(?:and|while|but)\s+"
        r"(?:all\s+)?(?:the\s+)?(?:rest|others?|remaining(?:\s+\w+)?)\s+(?:are\s+|stay\s+|sit\s+)?"
        r"(?:at|on)\s+0\s*%",
        (
            *("one of", "1 gpu", "one gpu", "1 card", "one card", "1 device", "one device"),
            *(
                "or two",
                "rest",
                "other",
                "remaining",
                "one is",
                "the fourth",
                "the third",
                "one at",
            ),
            *("the second", "the last", "gpus 1", "gpus 0", "others", "only 1", "only one"),
            *("one gpu with", "1 gpu with", "while gpu", "but gpu", "and gpu"),
        ),
        "One GPU of a multi-GPU job idle while the others work, or busy while the others wait "
        "at 0 %: in a synchronous job the others wait on the busy one, or the idle one holds "
        "back its share; a sentence that explains it (a warm-up, the speaker's own setting) is "
        "silent.",
        judge=_member_idle,
        flags=re.IGNORECASE,
    ),
)
"""Figures judged against each other (rows, score maps, listed figures, ratios, utilisation):
they run after the reports in words."""
