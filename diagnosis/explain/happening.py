"""Whether an incident a line tells of is happening now: the one test every rule that reads a
person's words (a monitor's alert, `the NFS server is not responding`, `we lost a GPU`) applies
before it speaks.

A line tells of no event now when it is an alert's resolved form or a rule's template, when a word
makes it planned, expected, tested, a spec, a condition or over in its sentence or the next
(`_NOT_NOW`: `scheduled`, `drill`, `after replacing`, `stable since`, `went away`, `已解决`),
when its sentence rules the cause out (xid_said.RULED_OUT), when it sets two GPU models side by
side (explained.setups_differ), or when a denial stands just before the words (`no`, `never`,
`wasn't`).

Guarantees: pure functions of the match and its line; `said(v)` and `less_than_said(v)` give `v`
or None and nothing else.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import SENTENCE, sentence_at, setups_differ
from diagnosis.explain.rules import Judge
from diagnosis.explain.xid_said import RULED_OUT

RESOLVED = re.compile(
    # (not a resolution denied: `cannot be resolved`, `not resolved`, `hasn't been resolved`)
    r"(?<!not )(?<!never )(?<!cannot be )(?<!can't be )(?<!not be )(?<!n't be )(?<!not been )"
    r"(?<!n't been )\bRESOLVED\b|\bstatus=resolved\b|ALARM\s*->\s*OK\b|\bauto-?resolved\b"
    r"|\bresolved\s+at\b|"
    r"\{\{|\bresumed\b|(?<!\bnone )\bcompleted\b|\bexit\s+0\b|\bduring\s+(?:the\s+)?checkpoint|"
    r"\bADMIN_DOWN\b|\bAdministratively\s+down\b|\bfor\s+\d{1,3}\s*s(?:ec\w*)?\b",
    re.IGNORECASE,
)
"""An alert in its resolved form, a rule's template, a stop that resumed or a job that
completed, a port taken down by an administrator, a pause of seconds: no fault."""


_DENIED_BEFORE = re.compile(
    r"\b(?:not|no|zero|none|never|isn't|aren't|wasn't|weren't|hasn't|haven't)\b[^.\n]{0,12}$", re.I
)
_NOT_NOW = re.compile(
    r"\b(?:planned|on\s+purpose"
    # work scheduled, not a pod scheduled on a node (`The node where the pod is scheduled`)
    r"|scheduled\s+(?:maintenance|downtime|reboot|outage|work|window|restart|drain|upgrade"
    r"|test|failover|shutdown)|(?:maintenance|downtime|reboot|outage|drain)\s+(?:is\s+|was\s+)?"
    r"scheduled|by\s+design|(?<!is this )(?<!is that )(?<!is it )(?<!not )(?<!n't )expected"
    # (not a thing's expected name or place: `not available as the expected filename`)
    r"(?!\s+(?:file\s*name|filename|name|path|location|directory|folder|format|version))"
    r"|intended|drill|chaos|simulat\w*"
    r"|emulat\w*|inject\w*|netem|lab|exercise|test\s+fire|SLO|allows?|at\s+most|alert\s+rule"
    r"|is\s+defined|silenced?|maintenance|cleared|fixed|solved|after\s+replacing|stable\s+(?:for"
    r"|since)|decommission\w*|powered\s+off|rate-?limits?|cheaper|SKU|is\s+how|whether"
    # (`Is this normal?` asks, `this is not normal` denies: the speaker does not say it is)
    r"|(?<!is this )(?<!is that )(?<!is it )(?<!not )(?<!n't )normal"
    r"|if\s+(?:a|the|you|it|an)|when\s+you|finished|completed|clean\s+again|tolerat\w*"
    r"|keeps\s+the\s+data\s+safe|no\s+NVLink|without\s+NVLink"
    # a ticket closed, a fault over since a fix, one that resolved by itself, work announced
    # ahead (`will flap`, `will go down`), an idle device saving power, a state that went away
    r"|clos(?:e|ing)\s+(?:this|the\s+ticket)|(?:fine|ok|okay|healthy|clean|stable)\s+since"
    r"|(?:read|reads|been|at|stayed)\s+(?:0|zero)\s+since|until\s+(?:we|I|they)\s+(?:swapped"
    r"|replaced|reseated|fixed|changed|moved)|resolv\w*\s+(?:itself|by\s+itself|on\s+its\s+own)"
    r"|se\s+resolvió|will\s+(?:flap|go\s+down|hang|be\s+(?:down|unavailable|slow|offline))"
    r"|heads-?up|nothing\s+is\s+broken|(?:sits?|sitting|while|when)\s+idle(?!\s+between)"
    r"|power[\s-]saving"
    r"|ASPM|went\s+away|price[ds]?)\b|已经解决|已解决|已修复|恢复正常",
    re.IGNORECASE,
)
"""Not an event now: planned or expected, a test, a lab, a rule's definition, a silence, a
cleared or fixed alert, a condition, a product's spec, a rebuild finished."""


_OTHERS_NORMAL = re.compile(
    r"\b(?:the\s+)?(?:other|remaining|rest\s+of\s+the)\s+[^.,;:\n]{0,50}?\b(?:are|is|look|looks"
    r"|seem|seems|remain|remains|stay|stays|were|was)\s+(?:\w+\s+)?normal\b",
    re.IGNORECASE,
)
"""The others said normal (`NaN appears in grad_norm, but other loss-related indicators are
normal`, `the other GPUs are normal`): the one named is not, so the word judges nothing."""


def _without_others_normal(text: str) -> str:
    """`text` with the others said normal left out (_OTHERS_NORMAL; most text has no `normal`)."""
    return _OTHERS_NORMAL.sub(" ", text) if "normal" in text.lower() else text


_CONDITION_WORD = re.compile(r"(?:if|when|whether)\b", re.IGNORECASE)
_ANOTHER_TIME = re.compile(
    r"\s*(?:yesterday|last\s+(?:night|week|month|year|time)|before\s+(?:that|then)|previously"
    r"|earlier|in\s+the\s+past|\w+\s+(?:days?|weeks?|months?)\s+ago)\b",
    re.IGNORECASE,
)
"""A sentence that opens on another time speaks of then, not of the incident before it
(`GPU 2 keeps throttling again today. Yesterday the clocks were normal.`)."""


def _next_sentence(m: re.Match[str]) -> str:
    """The sentence after the match's, where a judgement of it may stand (`...; that is
    expected`, `... flapping; after replacing the cable it has been stable`)."""
    stops = SENTENCE.finditer(m.string, m.end())
    first = next(stops, None)
    if first is None:
        return ""
    second = next(stops, None)
    return m.string[first.end() : second.start() if second else len(m.string)]


def _not_now(m: re.Match[str], sentence: str) -> bool:
    """Whether a word of `_NOT_NOW` stands in the match's sentence, or one that is no condition
    in the sentence after it (`If the problem persists, ...` after it says nothing of it), unless
    that sentence opens on another time (`_ANOTHER_TIME`)."""
    if _NOT_NOW.search(_without_others_normal(sentence)):
        return True
    after = _without_others_normal(_next_sentence(m))
    if _ANOTHER_TIME.match(after):
        return False
    return any(not _CONDITION_WORD.match(w[0]) for w in _NOT_NOW.finditer(after))


def live(m: re.Match[str]) -> bool:
    """Whether the incident said at `m` is one happening now: no resolved alert, question or
    runbook, no denial just before it, no word that makes it planned, tested or over in its
    sentence or the one after it (a record is often a paragraph, and `If the program exited with
    a problem, ...` says nothing of the next sentence's `the program is killed by the system`)."""
    line = m.string
    sentence = sentence_at(m)
    if RESOLVED.search(line) or _not_now(m, sentence) or RULED_OUT.search(sentence):
        return False
    if setups_differ(line):
        return False  # two GPU models side by side: a spec compared, no event
    return _DENIED_BEFORE.search(line, max(0, m.start() - 30), m.start()) is None


_DENIED_WITHIN = re.compile(r"\b(?:not|never|no)\b|n't\b|\bfrom\s+sitting\b", re.IGNORECASE)


def denied_within(m: re.Match[str]) -> bool:
    """Whether the words of the match deny or prevent themselves (`is not throttling`, `are never
    idle between steps`, `keep the GPUs from sitting idle`): for rules whose match spans the
    verb, where `live` reads only the words before it (a `not` inside `NFS server not
    responding` is the incident's own)."""
    return _DENIED_WITHIN.search(m[0]) is not None


def less_than_said(given: Verdict) -> Judge:
    """A judge that gives `given` when the match's `have` (or `have2`) is below its `want` (or
    `want2`): a link at 100G instead of 400G, 28 of 32 devices, Gen1 instead of Gen5, said of an
    incident happening now (`live`)."""

    def judge(m: re.Match[str]) -> Verdict | None:
        groups = m.groupdict()
        have = groups["have"] or groups.get("have2") or "0"
        want = groups["want"] or groups.get("want2") or "0"
        return given if live(m) and int(have) < int(want) else None

    return judge


def said(given: Verdict) -> Judge:
    """A judge that gives `given` unless the line is a resolved alert, a question, a runbook or
    a cause ruled out."""

    def judge(m: re.Match[str]) -> Verdict | None:
        return given if live(m) else None

    return judge
