"""The sentence around a word of slowness: whether it reports a slowdown, or rules one out.

rules_slowness reads a word of slowness (``SLOWNESS``) about a subject (``SUBJECT``); the
sentence around the word is read here. A sentence of prose reports a slowdown only with no
denial in the words just before it (``not slower``, ``no slowdown``, ``without lagging``;
``don't know why`` is not a denial; ``no rank is behind``; ``slightly slower``), nothing slow in
the sentence that is not training (a disk, NFS, a download, a build, the boot, inference,
requests, a queue), no GPU model compared (``the T4 GPU is slower``), and no gap the sentence
itself puts below ``MIN_GAP_PCT`` (``5 %``, ``1.05x``, or times and rates quoted before and
after that differ by less). A slowness that follows the speaker's own choice or a change of the
work (``HYPOTHETICAL``, ``CONDITIONED``), a question whether it is one (``ASKED``) and one said
to be expected (``said_expected``) report none either.

Guarantees: only sentences are read (``reads_as_sentence``: records.is_prose, with figures and
names such as ``GPU``, ``3x`` or ``PyTorch`` counted as neither; a log line or a table is left
to the rules of its format).
"""

from __future__ import annotations

import re
from functools import lru_cache

from diagnosis.explain.explained import OWN_CHANGE, explains, setups_differ
from diagnosis.explain.quantities import figures, quoted_rates
from diagnosis.explain.records import PROSE_SHARE, is_prose
from diagnosis.explain.rules_slowdown import CHANGE
from diagnosis.explain.time_marks import AFTER_WORK

MEMBER_WORDS = (
    r"GPU|card|device|node|host|rank|worker|machine|server|process|replica|instance|VM|rig"
)
"""The words for a member of the job (an alternation): rules_slowness's subjects, and what a
denial that any member is slow names."""
_NEGATION = r"(?:\b(?:no|not|never|without|nor|none|hardly|zero)\b|n't\b)"
_DENIED = re.compile(rf"{_NEGATION}\s+(?:\w+\s+){{0,4}}(?:\w+-)?$", re.I)
_RESOLVED = re.compile(
    r"\b(?:fix\w*|replac\w*|remov\w*|resolv\w*|drain\w*|exclud\w*|cordon\w*)\s+(?:the\s+|a\s+|that\s+)?$",
    re.I,
)
"""The slow member already dealt with (``after we fixed the slow node``)."""
_NONE_SLOW = re.compile(
    rf"{_NEGATION}(?:\s+\w+){{0,3}}?\s+(?:straggl\w*|slow\w*|lag\w*|behind|bottleneck\w*"
    rf"|(?:{MEMBER_WORDS})s?)\b",
    re.I,
)
"""A sentence that denies any member is slow (``no rank is behind``, ``never found gpus``)."""
_AT_ZERO = re.compile(
    r"\s+(?:\w+\s+){0,2}?(?:counters?|events?|reasons?|time|duration)\s+(?:reads?|at|is|are|was"
    r"|were|shows?|stays?|stayed)?\s*[:=]?\s*(?:0|zero|none|Not\s+Active)\b",
    re.I,
)
"""A slowdown's counter or reason that reads zero or `Not Active` (`all thermal slowdown counters
read 0 µs`): a tool's field that denies the slowdown."""
_SOFTENED = re.compile(
    r"\b(?:slightly|a\s+(?:bit|little|tad)|marginally|barely|somewhat)\s+$", re.I
)
_RATIO = re.compile(r"(?P<ratio>\d+(?:\.\d+)?)\s*(?:x|×|times)\b|(?P<pct>\d+(?:\.\d+)?)\s*%", re.I)
_MODEL_COMPARED = re.compile(
    r"\b(?:[A-Z]{1,2}\d{1,4}\w*|(?:RTX|GTX|Tesla|Quadro|Radeon|RX|MI)\s*\d+\w*)\s+(?:GPU|card)s?"
    r"\s+(?:is|are|was|were|runs?|ran)\b"
)
"""A GPU model compared (``the T4 GPU is slower than the other GPUs we benchmarked``): a
benchmark of hardware, not a member of a job that became slow."""
_SETUPS = re.compile(
    # a run on several cards against one card (`the training was slower than a card`)
    r"\b(?:slower|longer)\s+than\s+(?:on\s+|with\s+)?(?:a|one|1|a\s+single|single)\s+(?:card|GPU|device)\b"
    # (not against one node: a job slower on more nodes than on one is read, as `than a single
    # node` is)
    r"|\b(?:slower|longer|lower)\s+than\s+(?:with|using|when(?!\s+(?:I|we|you)\s+(?:use|run|train)\w*"
    r"\s+(?:on\s+|with\s+)?(?:one|1|a\s+single|single)\s+(?:node|machine|server|host)\b)|without"
    r"|(?:on\s+|in\s+)?(?:fp\d+|bf16"
    r"|tf32|int\d|mixed\s+precision|AMP|[AHVBL]\d{2,3}|RTX\s?\d{4}|GTX\s?\d{3,4}))\b",
    re.I,
)
"""Two settings of one job compared (``slower with LoRA rank 64 than with rank 8``, ``fp32 is ~3x
slower than bf16``, ``slower than on A100``)."""
MIN_GAP_PCT = 10.0
"""A slowdown the sentence puts at less than this (``5 %``, ``1.05x``) is too small to name."""
HYPOTHETICAL = re.compile(r"\s+(?:if|when(?:ever)?|once)\s+(?:we|you|I|one|they)\b", re.I)
"""A slowness that follows the speaker's own choice (``throughput drops if we cut the
batch``): how the job behaves, not a fault."""
_CHANGE_VERB = (
    r"(?:turn\w*|switch\w*|enabl\w*|add\w*|increas\w*|doubl\w*|tripl\w*|rais\w*|us(?:e|es|ed|ing)"
    r"|set|chang\w*|ramp\w*|bump\w*|mov\w*|scal\w*|go\s+from|went\s+from|grow\w*|lengthen\w*)"
)
CONDITIONED = re.compile(
    r"\b(?:when(?:ever)?|as|if|once)\s+(?:(?:I|we|you|they|one)\s+(?:just\s+)?"
    + _CHANGE_VERB
    + r"|(?:switching|turning|enabling|using|adding|increasing|doubling|raising|ramping)\b"
    r"|the\s+[\w-]+(?:\s+[\w-]+){0,2}\s+(?:gets?|got|grows?|grew|ramps?|ramped|rises?|rose|raises?"
    r"|raised|increases?|increased|doubles?|doubled|goes|went)\b(?!\s+on\b))"
    # a setting named with its value (`much slower on my side with G=8`)
    r"|\bwith\s+[A-Za-z_][\w.-]*\s*=\s*\w",
    re.I,
)
"""A slowness said to follow a change of the work (``FPS dropped when I turned on ray
tracing``, ``ns/day drops when I double the system size``, ``latency increases when the input
gets longer``, ``samples/s drift lower as the curriculum raises the length``, ``slower with
G=8``): how the work scales, not a fault (``as the training goes on`` is the run's time,
read)."""
CONDITIONED_BEFORE = re.compile(
    r"\b(?:as|when(?:ever)?|if)\s+(?:the\s+)?"
    # (not the run's own time: `as epochs increase` is read)
    r"(?!(?:epochs?|steps?|iter\w*|time|training|run|days?|hours?)\b)"
    r"[\w-]+\s+(?:increases?|grows?|rises?|goes\s+up|doubles?)\b[^.!?\n]*$",
    re.I,
)
"""The same change said before the slowness in its sentence (``as batch_size increases,
inference time also increases``)."""
SCALED_OUT = re.compile(
    r"\s+when(?:ever)?\s+(?:I|we|you)\s+(?:move|go|switch|scale|increase|add|use|run)\w*\s+"
    r"(?:(?:it\s+)?from\s+(?:one|1|a\s+single|single)\s+(?:\w+\s+)?(?:GPU|node|machine|card)s?\s+)?"
    r"(?:to|on|up\s+to|more|\d+|two|multiple|several)\b[^.\n]{0,20}?\b(?:GPU|node|machine|card)s?\b"
    # slower than the run on one device (`the training time is very longer than when I use a
    # single node`)
    r"|\s+than\s+(?:when\s+(?:I|we|you)\s+(?:use|run|train)\w*\s+(?:on\s+|with\s+)?)?(?:on\s+|with\s+)?"
    r"(?:one|1|a\s+single|single)\s+(?:GPU|node|machine|card)\b",
    re.I,
)
"""A slowness said to follow more devices (`It become slower when i move from one GPU node to 2
GPU nodes`, `longer than when I use a single node`): adding them should not slow the job, so this
change of the work is no excuse."""
_UNSURE = re.compile(r"^(?:n't|not)\s+(?:know|sure|understand)\b", re.I)
NOT_TRAINING = re.compile(
    # (the start-up of a kernel, an engine, a context: `limitation of GPU kernel initialization`,
    # and dummy inputs run to get past it)
    r"\b(?:(?:kernel|CUDA|cuDNN|engine|GPU|context|lazy)\s+initiali[sz]ation"
    r"|dummy\s+(?:inputs?|runs?|data|batch(?:es)?|requests?|passes)"
    r"|nfs|disk|storage|ssd|hdd|nvme|download\w*|upload\w*|internet|website|page|browser"
    r"|compil\w+|build|boot\w*|startup|install\w*|inference|requests?|serving|queue\w*"
    r"|response|conversations?|chats?|preempt\w*|warm-?up|autotun\w*|to\s+(?:start|launch|load|initiali[sz]e)"
    # an evaluation slower than a training epoch: other work
    r"|eval(?:uation)?(?:\s+\w+){0,2}?\s+(?:takes?|took|is|are|was|were|runs?)\s+(?:much\s+|a\s+lot\s+"
    r"|way\s+)?(?:longer|slower)"
    r"|(?:first|initial)\s+(?:few\s+|\d+\s+)?(?:steps?|iterations?|epochs?|batch(?:es)?|images?"
    r"|frames?|requests?|samples?|calls?|runs?|predictions?"
    r"|intervals?)(?:\s+\w+){0,2}?\s+(?:is|are|was|were|runs?|takes?|took)\b"
    r"(?!\s+(?:fine|fast|ok|normal))"
    # the first epoch or step, a warm-up (`why is epoch 1 slower than the rest?`)
    r"|(?:epoch|step|iter\w*)\s*#?\s*[01]\s+(?:is\s+|was\s+)?(?:much\s+|a\s+lot\s+)?slow\w*"
    # one step of a checkpoint (`3.2x slower ... for that one step`)
    r"|for\s+(?:that|this|the)\s+one\s+step|checkpoint\s+step)\b",
    re.I,
)
_OVER_TIME = re.compile(
    r"\b(?:over\s+time|with\s+time|after\s+(?:a\s+)?while|gradually|(?:slower|longer)\s+and\s+"
    r"(?:slower|longer)|as\s+(?:time\s+goes\s+on|training\s+goes\s+on))\b",
    re.I,
)
"""A change told over the run: with it a title of three or four plain words is a report."""
_SOFT_NOT_TRAINING = re.compile(
    r"^(?:inference|requests?|serving|response|conversation|chat|first|initial|epoch|step|iter)",
    re.I,
)
_OVER_RUN = re.compile(
    _OVER_TIME.pattern
    + r"|\bover\s+(?:the\s+)?(?:a\s+few\s+|several\s+|\d+\s+)?(?:hours|days|weeks|week|afternoon"
    r"|run|course)\b|\bafter\s+(?:running|~?\d+\s*h\w*\s+(?:of\s+)?uptime)|\bkeeps?\s+\w+ing\b"
    r"|\buntil\s+(?:we|I|a)\s+(?:restart|redeploy|reboot)\w*|\brestart\w*\s+(?:brings|fixes|helps)"
    r"|\bafter\s+a\s+restart\b"
    # after a stretch of the run (`usually happens after half an hour`, `after 40 minutes`)
    r"|\bafter\s+(?:about\s+|around\s+|roughly\s+|~)?(?:half\s+an\s+hour|an\s+hour|some\s+time"
    r"|a\s+(?:few|couple\s+of)\s+hours|\d+(?:\.\d+)?\s*(?:h|hrs?|hours?|days?))\b"
    r"(?!\s+of\s+(?:load|warm|compil|download|start|boot))"
    # after an amount of the job's own work (`after approximately 300-400 LLM calls`)
    rf"|{AFTER_WORK}",
    re.I,
)
"""A slowdown told over the run (`keeps dropping after running for a while`, `creeps up over a
few days until we restart the pod`): neither a warm-up nor a service's load."""


def _not_training(sentence: str) -> bool:
    """Return whether the sentence is slow at something other than the job's work (a disk, a
    download, a warm-up), where a warm-up, inference or requests count only when the sentence
    tells no slowdown over the run, nor one member against its identical peers."""
    found = NOT_TRAINING.search(sentence)
    if found is None:
        return False
    if _SOFT_NOT_TRAINING.match(found[0]) is None:
        return True
    return _OVER_RUN.search(sentence) is None and _AMONG_PEERS.search(sentence) is None


_AMONG_PEERS = re.compile(r"\bidentical\b|\bone\s+of\s+(?:the|our|my|two|\d+)\b", re.I)
"""One of identical members slower than the others: a straggler whatever the work (inference
on one of two identical machines at half the speed)."""


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|;\s+")
ASKED = re.compile(
    r"^(?:[^!?,]*,\s*)?(?:is|was|could|can|would|should)\s+(?:this|that|it)\s+(?:be\s+)?(?:just\s+)?"
    r"(?:a\s+|an\s+)?(?:slowdown|regression|straggler|problem|issue|bug|normal|expected|ok)\b[^.!?]*\?$",
    re.IGNORECASE,
)
"""A yes-or-no question whether something is a slowdown (``is that a slowdown?``): the speaker
asks, and does not report one."""


_FIGURE_OR_NAME = re.compile(
    r"^[(\[]?(?:~?[\d.,]+(?:x|×|%|s|ms)?|#\d+|[A-Z][A-Z0-9]{1,4}s?\d*|[A-Z][a-z]+[A-Z]\w*)"
    r"[)\]]?[.,;:!?]?$"
)
_PLAIN_WORD = re.compile(r"^[A-Za-z][a-z'’-]*[.,;:!?]?$")


def reads_as_sentence(body: str) -> bool:
    """Return whether `body` is a person's sentence (records.is_prose), counting figures and
    names (``GPU``, ``3``, ``40%``, ``3x``, ``PyTorch``) and dashes as neither words nor noise,
    and reading words inside markdown's emphasis: ``GPU 3 is about 40 percent slower than the
    other GPUs`` is one."""
    if is_prose(body):
        return True
    # markdown's emphasis and code marks around a word are no part of it (`**is 1.5x slower**`)
    bare = (t.strip("*_`") for t in body.split())
    tokens = [t for t in bare if t and t not in "—–-" and not _FIGURE_OR_NAME.match(t)]
    words = sum(_PLAIN_WORD.match(t) is not None for t in tokens)
    if words >= 5 and words >= PROSE_SHARE * len(tokens):
        return True
    # a short title of plain words that says how speed changed over the run (`Hashrate
    # decreasing over time`, `Performance degrades over time`)
    return 3 <= words == len(tokens) and _OVER_TIME.search(body) is not None


NEXT_CLAUSE = re.compile(r"\s+(?:and|but|while|whereas|so)\s+(?:it|they|this|that|I|we)\b|;")
"""Where the clause of a word of slowness ends: the next clause with its own subject."""


def sentences(body: str) -> list[tuple[int, int]]:
    """Return the (start, end) of each sentence of `body`."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(body):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(body)))
    return spans


def denied(m: re.Match[str], sentence: str, before: str) -> bool:
    """Return whether the sentence denies the slowness: a negation in the words just before it
    or in them (``does not increase``; ``don't know why`` is no denial), a denial that any
    member is slow, a softener (``slightly slower``), or its counter read at zero."""
    near = _DENIED.search(before)
    if near is not None and _UNSURE.match(before[near.start() :].lstrip()) is None:
        return True
    return bool(
        re.search(_NEGATION, m[0], re.I)
        or _NONE_SLOW.search(sentence)
        or _SOFTENED.search(before)
        or _RESOLVED.search(before)
        or _AT_ZERO.match(m.string, m.end())
    )


def said_expected(body: str, spans: list[tuple[int, int]]) -> bool:
    """Return whether one of the sentences says the slowness is expected or normal, as a
    statement (``Is this expected?`` asks, it does not explain), or names the speaker's own
    heavier setting even in a question."""
    return any(_expected(body[start:end]) for start, end in spans)


FORETOLD = re.compile(
    r"^\W*(?:you|one|we)\s+(?:should|will|would|may|might|can|could)\s+(?:\w+ly\s+)?(?:see|expect"
    r"|notice|observe|get|experience)\b",
    re.IGNORECASE,
)
"""A reply that tells what the asker should see (`You should definitely see a drop in performance
for the duration of the controller reset`): an expectation, not a report."""


@lru_cache(maxsize=64)
def _expected(sentence: str) -> bool:
    """One sentence's part of said_expected (once a sentence)."""
    asked = sentence.rstrip().endswith("?")
    return bool(explains(sentence) and (not asked or OWN_CHANGE.search(sentence)))


_VERSUS = re.compile(r"\bvs\.?(?!\w)|\bversus\b|\bcompared\s+(?:to|with)\b", re.I)


@lru_cache(maxsize=64)
def small_gap(sentence: str) -> bool:
    """Return whether the sentence (with the one before it) puts the gap below MIN_GAP_PCT: a
    ratio or a percentage, or times (rates) quoted before and after that differ by less."""
    for g in _RATIO.finditer(sentence):
        pct = float(g["pct"]) if g["pct"] else (float(g["ratio"]) - 1.0) * 100
        if 0 < pct < MIN_GAP_PCT:
            return True
    if not CHANGE.search(sentence):
        return False  # figures not quoted as they changed (``80 ms behind ... that 80 ms``)
    times, rates = figures(sentence), quoted_rates(sentence)
    if _VERSUS.search(sentence):  # `0.82s vs 0.41s`, `compared to`: no order; the spread
        quoted = times if len(set(times)) >= 2 else rates
        return (
            len(set(quoted)) >= 2
            and min(quoted) > 0
            and max(quoted) / min(quoted) - 1 < (MIN_GAP_PCT / 100)
        )
    if len(set(times)) >= 2 and min(times[:-1]) > 0:  # one figure said twice is no change
        return times[-1] / min(times[:-1]) - 1 < MIN_GAP_PCT / 100
    if len(set(rates)) >= 2 and max(rates[:-1]) > 0:
        return 1 - rates[-1] / max(rates[:-1]) < MIN_GAP_PCT / 100
    return False


_NOT_A_REPORT = re.compile(
    r"['\"‘“]?\b(?:HW|SW)\s+(?:Thermal\s+|Power\s+Brake\s+)?Slowdown\s*:?\s*(?:Not\s+)?Active\b"
    r"|\b(?:while|when|whenever|every\s+time)\s+(?:it|rank\s*\d+|GPU\s*\d+|node\s*\d+)\s+(?:also\s+)?"
    r"(?:runs|does|saves|writes|evaluat\w*|logs|checkpoints?|downloads?)\b"
    r"|\bbecause\s+(?:it|this\s+\w+)\s+(?:also\s+)?(?:runs|does|handles|hosts|logs|saves|writes|"
    r"evaluat\w*|holds)\b",
    re.IGNORECASE,
)
"""Not a report of slowness: nvidia-smi's clock-reason field quoted (the GPU rules read it) and
a member slower for its own extra work (`because it also runs evaluation`)."""


_WITHOUT_DISTRIBUTION = re.compile(
    r"\b(?:slower|longer)\s+than\s+(?:the\s+|in\s+)?(?:non-?distributed|local|serial|sequential)\s+"
    r"(?:mode|run|version|training|setup|baseline|execution)\b",
    re.IGNORECASE,
)
"""A distributed run against the same work run without it (`roughly 10 seconds slower than
non-distributed mode`): two setups, unless the sentence tells a change over time (`became 3x
slower than the non-distributed baseline after we upgraded NCCL`)."""
_OVER_TIME = re.compile(
    r"\b(?:became|becomes|after|since|now|yesterday|used\s+to|upgrad\w*|regress\w*)\b", re.I
)


@lru_cache(maxsize=64)
def ruled_out(sentence: str) -> bool:
    """Whether the sentence, whatever its word of slowness, reports none: slow at something
    other than training, GPU models or two settings compared, a tool's field name, a member's
    own extra work (once a sentence: a line that repeats its word reads it once)."""
    return bool(
        _not_training(sentence)
        or setups_differ(sentence)
        or _MODEL_COMPARED.search(sentence)
        or _NOT_A_REPORT.search(sentence)
        or _SETUPS.search(sentence)
        or (_WITHOUT_DISTRIBUTION.search(sentence) and not _OVER_TIME.search(sentence))
    )
