"""A line of a document that quotes a message: no event on any node.

Runbooks, FAQs, knowledge-base articles, READMEs, changelogs, release notes, kernel commits and
code reviews name the messages they are about, often word for word (`Runbook EFA-3: if NCCL
prints "couldn't get EFA as provider", ...`, `UCX 1.15.0 changelog: Fixed spurious "UCX ERROR
... port error"`). A rule that reads the message would report the fault the document describes.
``quotes_in_document`` tells such a line apart: it names its kind of document at its start (or
as `<project> README:`), or is a changelog's `Fixed` entry or a commit's subject, and it either
quotes a message or is a reviewer's comment on a source line.

Guarantees: a person's report that quotes the error they got (`I get "NCCL error: unhandled
system error"`) is no document; nor is a log line whose program happens to say `readme` or
`changelog` later in it: the marker must open the line.
"""

from __future__ import annotations

import re

_DOCUMENT = re.compile(
    r"^\W*(?:runbook|troubleshooting(?:\s+guide)?|faq|kb[-\s]?\d+|knowledge[-\s]?base(?:\s+article)?"
    r"|release\s+notes|changelog|readme|review\s+comment|documentation|docs)\b"
    # `<project> README:`, `UCX 1.15.0 changelog:`, `NCCL 2.18.3-1 release notes:`
    r"|^\s*[\w.+-]+(?:\s+v?\d[\w.+-]*)?\s+(?:readme|changelog|release\s+notes|runbook|faq)\s*:"
    # a changelog's entry, a kernel commit's subject
    r"|^\s*[-*]\s+(?:fixed|fix|changed|added|removed)\b:?|^\s*commit\s+[0-9a-f]{7,40}\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\"[^\"\n]{12,}\"|'[^'\n]{12,}'|`[^`\n]{12,}`|“[^”\n]{12,}”")
_REVIEW = re.compile(r"^\W*review\s+comment\b", re.IGNORECASE)


def quotes_in_document(body: str) -> bool:
    """Whether the line is a document's (module doc) that quotes a message or reviews code."""
    # (a quote's mark or a review's word first: every line of a flood asks)
    marked = '"' in body or "'" in body or "`" in body or "“" in body or "eview" in body
    if not marked or _DOCUMENT.search(body) is None:
        return False
    return _QUOTED.search(body) is not None or _REVIEW.search(body) is not None
