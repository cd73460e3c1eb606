"""A line that tells time passed between two readings of one figure: ``after ~1 hour``.

People paste a progress line, write ``after 10 renders`` or ``and after 58 hours, this is what
I am seeing:``, and paste the same line again; the speed reader (diagnosis/explain/speeds.py)
compares the readings on either side of such a line (``slowdown.slower_later``).

A mark is a line that starts with the passing of an amount of time or of the job's own work
(``after 3 mins``, ``after 300-400 calls``, ``2 hours later``, ``the next day``, ``overnight``,
``after a while``) or is a heading of the later readings alone (``**Last time**``, ``Now:``),
and is short: a heading between pasted lines, not a story. The speaker's
own change (``after I doubled the batch``: explained.OWN_CHANGE) or an event (``after the
upgrade``) is no mark: the readings then measure two setups.
"""

from __future__ import annotations

import re

from diagnosis.explain.explained import OWN_CHANGE

MAX_MARK_CHARS = 120
"""A longer line is a story of its own, not a heading between readings."""

_AMOUNT = (
    r"(?:(?:about|around|approx\w*|roughly|another|only|just|nearly|almost|over|~)\s*)?"
    r"(?:\d+(?:[.,]\d+)?[kK]?(?:\s*[-–~]\s*\d+(?:[.,]\d+)?[kK]?)?\+?|a\s+few|a\s+couple(?:\s+of)?|several"
    r"|an?|one|two|three|four|five|six|ten|twenty|dozens?\s+of|hundreds?\s+of|many)"
)
_UNIT = (
    r"(?:s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|epochs?"
    r"|iter(?:ation)?s?|steps?|batch(?:es)?|renders?|images?|pictures?|runs?|generations?"
    r"|requests?|calls?|conversations?|prompts?|jobs?|rounds?|episodes?)"
)
_WORK_DONE = (
    r"(?:calls?|requests?|conversations?|chats?|prompts?|quer(?:y|ies)|generations?|renders?"
    r"|images?|pictures?|jobs?|runs?|inferences?)"
)
AFTER_WORK = (
    rf"\bafter\s+(?:(?:using|running|serving|doing)\s+(?:[\w.-]+\s+){{0,3}}?for\s+"
    r"|(?:generating|rendering|processing|answering|serving|sending|making|running)\s+)?"
    rf"{_AMOUNT}\s*(?:[\w-]+\s+)?{_WORK_DONE}\b"
)
"""After an amount of a service's work (``after approximately 300-400 LLM calls``, ``after using
Ollama for dozens of conversations``), for a sentence that tells a slowdown over the run
(slowness_sentences); not after minutes or epochs, a warm-up's words (``after 25 min the rest of
the epochs run at full speed``)."""
_MARK = re.compile(
    r"^[\W_]*(?:(?:and|then|but|so|now)\s*,?\s+)?(?:"
    rf"after\s+{_AMOUNT}\s*{_UNIT}\b(?!\s+of\s+(?:load|warm|compil|download|start|boot))"
    rf"|{_AMOUNT}\s*{_UNIT}\s+later\b"
    r"|(?:the\s+)?next\s+(?:day|morning|week)\b|overnight\b"
    r"|after\s+(?:a\s+(?:while|bit)|some\s+time)\b|(?:some\s+time\s+)?later\s*[:,]"
    # a heading of the later readings alone on its line (`**Last time**`, `Now:`, `Today:`)
    r"|(?:the\s+)?(?:last|latest|current)\s+(?:time|run)\W*$|(?:now|today|currently)\W*$"
    # into the run (`45 minutes in:`, `3h in,`)
    rf"|{_AMOUNT}\s*(?:m|mins?|minutes?|h|hrs?|hours?|days?)\s+in\s*[:,]"
    r")",
    re.IGNORECASE,
)


MARK_WORDS = (
    *("after", "later", "next", "overnight", " in:", " in,"),
    *("last", "latest", "current", "now", "today"),
)
"""Words every mark holds (lower case): a cheap gate before the search."""


def tells_time_passed(body: str) -> bool:
    """Return whether `body` is a short line that tells time or work passed since the lines
    before it (a mark between two readings), and not the speaker's own change."""
    text = body.strip()
    return (
        len(text) <= MAX_MARK_CHARS
        and _MARK.match(text) is not None
        and OWN_CHANGE.search(text) is None
    )
