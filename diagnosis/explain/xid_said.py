"""A Xid named in a person's words, a monitor's or a ticket's, as something that happened.

``monitor.xid_said`` matches ``XID_SAID``; ``xid_said`` judges the match: the Xid catalogue's
verdict (``rules_gpu.xid_policy``) at a warning's severity and lower confidence than the
driver's own line, when the words around it say it happened (`im dmesg steht Xid 79`, `we hit
Xid 48`, `xid 119 detected by dmesg`, `Xid 79が発生し`), and none in a question, a runbook or a
doc, a resolved incident, a clause that rules it out (``RULED_OUT``, which the monitors'
readers share), or one that tells what usually happens with no speaker in it. Several Xids
said together give the one that says most.
"""

from __future__ import annotations

import re
from dataclasses import replace

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import SPEAKER_WORDS, sentence_bounds
from diagnosis.explain.rules_gpu import xid_policy
from diagnosis.model import Category as C
from diagnosis.model import Severity as S

XID_SAID = re.compile(
    # (bounded by a CJK character as by a space: `ノードgpu-21でXid 79が発生し`)
    r"(?<![A-Za-z0-9_])Xid\s*[:=#]?\s*(?P<xid>\d{1,3})(?!\d|\.\d)",
    re.IGNORECASE,
)
"""A Xid and its number, as people write it."""
_HELP_WORDS = ("ideas", "idea", "thoughts", "suggestions", "suggestion", "advice", "clues", "clue")
_HELP_TAIL = "".join(
    f"(?<!{w})(?<!{w} )" for w in (*_HELP_WORDS, "hints", "hint", "pointers", "tips", "help")
)
"""Lookbehinds of a request for help just before a `?` (`..., any ideas ?`): no question."""
RULED_OUT = re.compile(
    r"\bruled\s+out\b|\bfalse\s+positive\b|\bno\s+Xid\b|\bnot\s+(?:an?\s+)?Xid\b|\bwithout\s+(?:an?\s+)?Xid\b"
    # a question, not a request for help after the words (`..., any ideas?`)
    # (a sentence that opens as a question stays one: `Could the GPUs be idle ..., any ideas?`)
    r"|^\W*(?:could|would|is|are|does|do|can|should|why|how|what)\b[^\n]*\?"
    rf"|{_HELP_TAIL}\?"
    r"|\brunbook\b|\bdocs?\b|\bdifference\b|\bRESOLVED\b|\breplaced\b|\bmeans\b",
    re.IGNORECASE,
)
_HAPPENED = re.compile(
    r"\b(?:dmesg|NVRM|kernel|journal\w*|logs?|steht|zeigt|shows?|showed|reports?|reported|threw|"
    r"hit|got|saw|see|seeing|logged|raised|fired|printed|with|after|from)\b|\b(?:on|auf)\s+(?:gpu|GPU|node)",
    re.IGNORECASE,
)
_DETECTED = re.compile(
    r"\s+(?:was\s+|has\s+been\s+)?(?:detected|occurred|seen|reported|logged)\b"
    # in Japanese and Chinese (`Xid 79が発生し`, `出现Xid 79`... after it: `Xid 79错误`)
    r"|\s*(?:が|を)(?:発生|検出)|\s*(?:错误)?(?:出现|发生)"
)
"""A Xid said to have happened after its number (gpud: `xid 119 detected by dmesg`)."""
_IN_GENERAL = re.compile(r"\b(?:often|usually|typically|generally|commonly|normally)\b", re.I)
"""A clause that tells what usually happens (`A rapidly increasing replay count often precedes a
full link failure reported as Xid 74`): with no speaker and no machine in it (`node gpu-12 often
reports Xid 79`), a page's statement, no event."""
_CONCRETE = re.compile(SPEAKER_WORDS + r"|\b(?:nodes?|hosts?|servers?|machines?|rigs?)\b", re.I)
_NOT_THIS_XID = re.compile(r"\b(?:not|no|than|instead\s+of|rather\s+than|nor)\s+(?:an?\s+)?$", re.I)
_XID_RANK = {C.GPU_HARDWARE: 3, C.GPU_DEGRADED: 2, C.GPU_APPLICATION: 1}


def xid_said(m: re.Match[str]) -> Verdict | None:
    """A Xid named in words as something that happened (`im dmesg steht Xid 79`, `we hit Xid
    48`): the catalogue's verdict, at lower confidence than the driver's; none in a question, a
    runbook or doc, a resolved incident, or a sentence that rules it out."""
    before = m.string[max(0, m.start() - 40) : m.start()]
    clause = (
        re.split(r"[,;]|\bbut\b", m.string[: m.start()])[-1] + m.string[m.start() :].split(",")[0]
    )
    happened = _HAPPENED.search(before) or _DETECTED.match(m.string, m.end())
    if RULED_OUT.search(clause) or "?" in m.string or not happened:
        return None
    start, end = sentence_bounds(m)
    own = m.string[start:end]  # (the Xid's own clause of its sentence, cut at `;`)
    own = own[: own.find(";", m.end() - start)] if ";" in own[m.end() - start :] else own
    own = own[own.rfind(";", 0, m.start() - start) + 1 :]
    if _IN_GENERAL.search(own) and not _CONCRETE.search(own):
        return None
    # several Xids said together (`XID 137 ... followed by XID 94`): the one that says most
    said = [
        x
        for x in XID_SAID.finditer(m.string)
        if not _NOT_THIS_XID.search(m.string, max(0, x.start() - 15), x.start())
    ]
    given = max(
        (xid_policy(x) for x in said),
        key=lambda v: _XID_RANK.get(v.category, 0),
        default=xid_policy(m),
    )
    severity = S.WARNING if given.severity in (S.ERROR, S.CRITICAL) else given.severity
    return replace(given, severity=severity, confidence=min(given.confidence, 0.4))
