"""A line that describes a message instead of reporting it: no event on any node.

Runbooks, FAQs, knowledge-base articles, READMEs, changelogs, release notes, pull requests and
code reviews name the messages they are about, often word for word (`Runbook EFA-3: if NCCL
prints "couldn't get EFA as provider", ...`, `UCX 1.15.0 changelog: Fixed spurious "UCX ERROR
... port error"`). A rule that reads the message would report the fault the document describes.
``describes_a_message`` tells such a line apart by how it speaks of the message, not by where
it comes from: as a condition (`if dmesg shows ...`, not `if I run ...`), as something that may
happen (`may print`, `could fail with`), as a question of its meaning (`What does ... mean`), as
a symptom or an example (`Symptom -`, `a line like`, `is raised when`), as a fix (`Fixed an issue
where`, `Fix ...`, `fixed "..."`, `This PR fixes ...`, `spurious`, `stop printing`, `no
longer`), as a reviewer's approval, in a troubleshooting table's row (the message quoted as
code in its first cell) or in a line of source code that prints it (`perror("...")`), a
header's constant with its doc comment, or a catalogue's list of Xids and their meanings.

Guarantees: a line that says the message is live (`now`, `still`, `since 14:35`, `keeps`,
`again`, `returned`, a time of day) is a report, whatever document it names (`FAQ #4 did not
help, rank 5 still dies with "..."`, `- Fixed: drained gpu-b07; but gpu-b09 is now logging
...`); so is one that names no such framing (`Runbook step 3 on gpu-a17 returned: "..."`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from diagnosis.explain.rules import SPEAKER_WORDS

_DESCRIBED = re.compile(
    # a condition on what a tool prints (not the speaker's own run: `if I run ...`)
    r"\bif\b(?!\s+(?:I|we|you)\b)[^\n]{0,80}?\b(?:prints?|shows?|logs?|says|reports?|returns?"
    r"|raises?|emits?)\b"
    r"|\b(?:may|might|can|could)\s+(?:print|show|log|report|say|return|fail\s+with)\b"
    r"|\bwhat\s+does\b|\bsymptoms?\s*[:-]|\ba\s+line\s+like\b|\breference\s+only\b"
    # a catalogue's gloss of an event's code (`MEM0001 This is an indication that the system
    # has consumed an uncorrectable memory error`)
    r"|\b(?:this|it)\s+is\s+an\s+indication\s+that\b"
    # a runbook's condition on what a machine logs (`Runbook step 3 - when a node logs ...`)
    r"|\bwhen\s+(?:a|any|some)\s+(?:node|host|server|client|GPU|machine)\s+(?:logs|prints|shows"
    r"|reports|says|emits)\b"
    r"|\bis\s+(?:raised|printed|logged|shown|emitted)\s+when\b"
    # a fix: a changelog's or a pull request's
    r"|^\W*fix(?:ed|es)?\b|\bfixed\s+(?:an?\s+)?(?:issue|bug|crash|spurious|[\"'`“])"
    r"|\b(?:this|the|a|my)\s+(?:PR|pull\s+request|patch|commit|change)\s+(?:that\s+)?"
    r"(?:fix(?:es|ed)?|resolves|addresses)\b"
    r"|\bspurious\b|\bstop(?:s|ped)?\s+printing\b|\bno\s+longer\s+(?:aborts?|fails?|crash\w*|hangs?"
    r"|prints?)\b"
    # a reviewer's approval
    r"|\blooks\s+(?:fine|good)\s+to\s+me\b|\bLGTM\b",
    re.IGNORECASE | re.MULTILINE,
)
_LIVE = re.compile(
    r"\b(?:now|still|keeps?|kept|again|returned|is\s+logging|started\s+logging)\b"
    r"|\bsince\s+\d|(?<![\d:])\d{1,2}:\d\d(?![\d:]*\s*(?:of|in)\b)",
    re.IGNORECASE,
)
_OWN_EVENT = re.compile(
    r"\b(?:I|we)\s+(?:got|get|see|saw|hit|am\s+getting|are\s+getting)\b", re.IGNORECASE
)
"""The speaker's own event (`I got an error report like "CUDA error ..."`): live, unless a
condition comes before it in the line (`if dmesg shows '...' and we see it twice`)."""
_CONDITION = re.compile(r"\b(?:if|when|whenever|once|unless)\b", re.IGNORECASE)
_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]{4,}'|`[^`\n]*`|“[^”\n]*”")
"""A quoted message (a single quote needs four characters: not `can't`'s)."""
_WORDS = (
    *("if", "may", "might", "can", "could", "what", "symptom", "like", "reference", "raised"),
    *("printed", "logged", "shown", "fix", "spurious", "stop", "no longer", "looks", "lgtm"),
    *("emitted", "when", "resolves", "addresses", "indication"),
)
"""The words one of which a described message's line holds (a cheap gate before the search)."""


_TABLE_ROW = re.compile(r"^\s*\|\s*`[^`\n]+`\s*\|[^|\n]*[A-Za-z]{3}[^|\n]*\|")
"""A troubleshooting table's row: a message quoted as code in its first cell, words after it
(`| `nvml error: driver not loaded` | kernel module missing | modprobe nvidia |`)."""
_SOURCE_CODE = re.compile(
    r"\b(?:perror|printf|fprintf|puts|fputs|snprintf|die|panic|log\w*\.\w+|logger\.\w+|LOG\(\w+\))"
    r"\s*\((?:[^()\"\n]*,\s*)?\""
)
"""A line of source code that prints the message (`perror("rdma_bind_addr failed");`): code
under review, not its output."""


_DEFINITION = re.compile(r"^\s*[A-Z][A-Z0-9_]{2,}\s*=\s*-?\w+\s*,?\s*(?://|/\*|#)")
"""A constant defined with its doc comment (nvml.h: `NVML_ERROR_GPU_IS_LOST = 15, //!< The GPU
has fallen off the bus ...`): a header read, not an event."""
_RELEASE_NOTE = re.compile(
    r"^\W*(?:\w[\w.+-]*\s+){0,3}?(?:v?\d+(?:\.\d+)+\s+)?(?:release\s+notes?|changelog|change\s*log"
    r"|what's\s+new)\s*[:-]",
    re.IGNORECASE,
)
"""A release note's or a changelog's line (`h5py 3.5 release notes: ... now accepts ...`): its
`now` is a new feature, not a live event."""
_RELEASE_WORDS = ("release", "change", "what's")
"""What every match of _RELEASE_NOTE holds (lower case): a cheap gate on every line."""
_CATALOGUE = re.compile(r"\bXid\s+\d+\s*[–—:-]\s*[^;\n]{3,80};\s*Xid\s+\d+\s*[–—:-]", re.IGNORECASE)
"""A catalogue's list of Xids and their meanings (`Xid 79 – GPU has fallen off the bus; Xid 48 –
double bit ECC error`)."""


@lru_cache(maxsize=1024)
def describes_a_message(body: str) -> bool:
    """Whether the line speaks of a message as a document does, not as a live event (module
    doc), or is a troubleshooting table's row or a line of code that prints it; once a line (a
    flood repeats its lines)."""
    if '("' in body and _SOURCE_CODE.search(body):
        return True
    if "`" in body and body.lstrip().startswith("|") and _TABLE_ROW.match(body):
        return True
    low = body.lower()
    if any(word in low for word in _RELEASE_WORDS) and _RELEASE_NOTE.match(body):
        return True
    if "=" in body and _DEFINITION.match(body):
        return True
    if ";" in body and _CATALOGUE.search(body):
        return True
    if not any(word in low for word in _WORDS):
        return False
    # (the quoted message's own words say nothing of whether the line's event is live)
    if _DESCRIBED.search(body) is None:
        return False
    unquoted = _QUOTED.sub(" ", body)
    own = _OWN_EVENT.search(unquoted)
    live = own is not None and _CONDITION.search(unquoted, 0, own.start()) is None
    return not live and _LIVE.search(unquoted) is None


_INTRODUCES_EXAMPLE = re.compile(
    # what a component would print (`it will print a message similar to the following:`), or
    # prints when a condition holds (`When the kernel detects a process in the "D" state for too
    # long, it generates a hung task warning:`)
    r"\b(?:will|would|may|might|can|could)\s+(?:print|log|emit|generate|produce|display|show)\s+"
    r"(?:a|an)\s+(?:\w+\s+){0,3}?(?:message|warning|error|line|report|splat|trace)s?\b[^:\n]*:\s*$"
    r"|^\W*(?:When|Whenever|If|Once)\s+(?:the|a|an)\s+(?:kernel|CPU|process|task|driver|system"
    r"|watchdog|detector)\b[^\n]*\b(?:prints?|logs?|generates?|emits?|produces?|issues?|raises?)\s+"
    r"(?:a|an)\s+(?:\w+\s+){0,3}?(?:message|warning|error|line|report|splat)s?\b[^:\n]*:\s*$",
    re.IGNORECASE,
)
_CONCRETE = re.compile(SPEAKER_WORDS + r"|\d", re.IGNORECASE)
"""A speaker's words or a figure: an introduction to the speaker's own run, not a document's."""


@dataclass
class Examples:
    """Which lines of an input are a document's example of a message: the lines after one that
    introduces what a component would print or prints when a condition holds (`When a CPU
    detects that it is stalling, it will print a message similar to the following:`), from the
    first line after it that is not blank up to the next blank line. The introduction may wrap
    onto a second line (read joined with the line before); one with a speaker's words (I, we) or
    a figure (`After about 2 hours the job will produce an error like this:`, `on 8 GPUs`)
    introduces the speaker's own run, events; so does a plain introduction followed by a line a
    log shipper prefixed (a machine's own line), which ends the example."""

    introduced: bool = False  # an introduction read, its example not begun (blank lines)
    inside: bool = False
    shipped: bool = False  # the introduction itself came with a shipper's prefix
    before: str = ""  # the line before (an introduction may wrap onto this one)

    def example(self, body: str, prefixed: bool = False) -> bool:
        """Whether `body`, the input's next line (blank ones too), is an example; `prefixed`:
        the line came with a log shipper's or the kernel's prefix."""
        line = body.strip()
        if (self.introduced or self.inside) and line and prefixed and not self.shipped:
            self.introduced = self.inside = False  # (a machine's own line: no example)
        if self.introduced:  # (blank lines may stand between an introduction and its example)
            self.introduced, self.inside = not line, bool(line)
            return self.inside
        if self.inside:
            self.inside = bool(line)
            return self.inside
        if line.endswith(":"):
            said = next(
                (t for t in (line, f"{self.before} {line}") if _INTRODUCES_EXAMPLE.search(t)), None
            )
            self.introduced = said is not None and not _CONCRETE.search(said)
            self.shipped = prefixed
        self.before = line
        return False


_ANNOUNCES = re.compile(
    # a heading's kind (`## PR #2281: ...`, `### 🚀 Feature request: ...`, `## Docs: ...`)
    r"^\s*#{1,4}\s*(?:PR\b[^\n:]{0,12}:|Pull\s+request\b|(?:🚀\s*)?Feature(?:\s+request)?\s*:"
    r"|Docs?:\s|Highlights\s*$|Resolved\s+issues\s*$)"
    # a troubleshooting guide's step (`Confirm the Symptoms`, `Begin by verifying the symptoms`)
    r"|^\W*(?:#{1,4}\s*)?(?:Begin\s+by\s+|Start\s+by\s+|First,?\s+)?(?:Confirm|Verify|Check"
    r"|Identify|Recogni[sz]e)(?:ing)?\s+(?:the\s+)?symptoms?\s*:?\s*$"
    # release notes and changelogs, headed or not; a comment closing an issue as fixed
    r"|^\W*(?:#{1,4}\s*)?(?:Release\s+notes\b|Changelog\b|What['’]s\s+Changed\b"
    r"|Closing\s+(?:this|as)\b[^\n]{0,60}?\b(?:fixed|resolved|done)\b)",
    re.IGNORECASE,
)
_HEAD_LINES = 3
"""The lines a document's own kind is read from (its title and the heading or two after); a
document has at least that many (a one-line `PR: fix gradual training slowdown ...` reports
the slowdown it fixed)."""


def is_a_document(text: str) -> bool:
    """Whether the whole input is a pull request's, a release note's, a changelog's, a feature
    request's or a docs change's description, a comment closing an issue as fixed, or a
    troubleshooting guide's step through the symptoms, by its first lines (`## PR #2281: ...`,
    `# Release notes - ...`, `### 🚀 Feature request: ...`, `Closing this: verified fixed on
    main.`, `Confirm the Symptoms`): the messages it quotes further down are history or
    examples, not events (a bug report's template is none of these)."""
    head = [line for line in text.splitlines() if line.strip()][:_HEAD_LINES]
    return len(head) == _HEAD_LINES and any(_ANNOUNCES.match(line) for line in head)


_GENERAL_EFFECT = re.compile(
    r"\b(?:can|could|may|might|will|would)\s+(?:\w+\s+)?(?:bottleneck|affect|hold|drag|delay|impact"
    r"|hurt|dominate|determine|limit)\w*\b",
    re.IGNORECASE,
)
_SPEAKER = re.compile(
    # a speaker, or an event of now: a member said slower, a detection, a question
    SPEAKER_WORDS + r"|\b(?:now|today|suddenly|detected)\b|\?"
    r"|\b(?:is|are|was|were)\s+(?:much\s+|far\s+|significantly\s+|a\s+lot\s+)?slower\b",
    re.IGNORECASE,
)


def speaks_in_general(text: str) -> bool:
    """Whether the whole input states what a slow member may do to a job in general (`a single
    slow node can bottleneck the entire job`, `the straggler will significantly affect the
    performance of training`), as a design note or a feature request does: no speaker's own
    job (no I, we, my, our), no figure read from one, no member said slower now, detected or
    asked about, so its stragglers are no event."""
    return (
        not any(ch.isdigit() for ch in text)
        and _GENERAL_EFFECT.search(text) is not None
        and _SPEAKER.search(text) is None
    )
