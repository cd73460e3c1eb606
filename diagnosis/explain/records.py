"""Turn raw log text into logical records: prefixes stripped, wrapped messages joined.

Prefixes come from the real samples (``../shared/data``) and the twin's real-format generators
(``sim/formats``): dmesg ``[ 1843.308145]`` and ``[Fri Apr  5 21:29:39 2024]``, ``dmesg
--time-format iso``, journalctl short-iso (``... host kernel:``), rsyslog (``Mar 29 15:38:59
[host] kernel:``), PyTorch's ``[rankN]:``, torchrun's ``[defaultN]:``, Lightning's ``[rank:
N]``, Open MPI's ``mpirun --tag-output`` (``[1,2]<stderr>:``), Ray's ``(RayWorkerWrapper
pid=4009)``, c10 glog (``E0813 08:21:22.980000 1245483 file.py:984]``), DeepSpeed's logger
prefix and NCCL's ``host:pid:tid [dev]``. Two kinds of message span lines: dmesg continuations
(indented ``NVRM:`` lines after a multi-line printk, real_logs gpu-fallen-off-bus-no-xid and
xid-79) and Megatron iteration lines wrapped by a terminal (real_logs
perf-degradation-slow-gpu). A line cut exactly at a usual terminal width (80, 100, 120, 132,
160, 200 columns) and followed by a line with no prefix of its own is joined back without a
separator (a terminal copy breaks mid-word). A person's sentence broken by an editor (a line of
prose that stops mid-sentence, the next going on in lower case) is joined back with a space.
ANSI colour codes are removed first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from ingest.readers.train_log import MEGATRON

MAX_LINE = 4096
"""Characters of a line that are matched and kept; the rest of a giant line is dropped."""

_KERNEL_TIME = re.compile(
    r"^(?:\[\s*\d+\.\d+\]"  # raw dmesg
    r"|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]"  # -T
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"  # iso
    r"(?: (?:<[\w.-]+>|(?P<ihost>[\w.-]+)) kernel:)?"  # a host redacted as <host> is none
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: (?:<[\w.-]+>|(?P<shost>[\w.-]+)))? kernel:"  # syslog
    r"|kernel:"
    # dmesg --decode --time-format iso
    r"|(?:kern|user|daemon|syslog)\s*:\s*\w+\s*: \d{4}-\d\d-\d\dT[\d:,.]+(?:[+-]\d\d:\d\d)?"
    r"|<\d>(?=\[)"  # printk level before a dmesg stamp
    r"|\d+,\d+,\d+,[-c];"  # raw /dev/kmsg record
    r"|\[\s*\+\d+\.\d+\]"  # dmesg -H relative stamp
    r"|\[[A-Z][a-z]{2}\d{1,2} \d\d:\d\d\]"  # dmesg -H minute stamp
    r")\s?"
)
_RANK = re.compile(r"^\[rank(?P<rank>\d+)\]: ?|^\[rank: (?P<lrank>\d+)\] ")
_LOCAL = re.compile(r"^\[default(?P<local>\d+)\]:(?: )?")
# Open MPI's `mpirun --tag-output`: `[1,2]<stderr>:` (job, rank, stream)
_MPI_TAG = re.compile(r"^\[\d+,(?P<mpirank>\d+)\]<std(?:out|err|diag)>: ?")
_RAY = re.compile(r"^\([\w.:-]+ pid=\d+(?:, ip=[\d.]+)?\) ")
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]\s]+:\d+\] ")
_DEEPSPEED = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)?\] \[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] "
    r"\[[^\]]+\] "
)
_PREFIX = re.compile(
    "|".join(
        f"(?:{p.pattern})" for p in (_KERNEL_TIME, _RAY, _RANK, _LOCAL, _MPI_TAG, _GLOG, _DEEPSPEED)
    )
)
_NCCL = re.compile(r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
_CONTINUATION = re.compile(r"^\s+NVRM: ")
_WRAPPED_TAIL = re.compile(r"^\s*[a-z(]")
_FIELD = re.compile(r"^\s*[a-z][\w ]*:\s*\S")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_TB_LINE = re.compile(r"Traceback \(most recent call last\)|File \"|frame #\d+")
TERMINAL_WIDTHS = frozenset({80, 100, 120, 132, 160, 200})
"""Window widths at which a terminal copy cuts a message; such a cut is joined back."""


class Record(NamedTuple):
    """One logical log message and what its prefixes said about where it came from."""

    body: str
    raw: str
    line_no: int
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    device: int | None = None


def _strip(line: str) -> tuple[str, dict[str, str]]:
    """Return `line` without its known prefixes, and the fields they carried."""
    found: dict[str, str] = {}
    body = line
    for _ in range(8):
        m = _PREFIX.match(body)
        if m is None or m.end() == 0:
            break
        found.update({k: v for k, v in m.groupdict().items() if v is not None})
        if m["mpirank"] is not None:  # the inner prefix names the line's own rank
            found["rank"] = found.pop("mpirank")
        body = body[m.end() :]
    m = _NCCL.match(body)
    if m is not None:
        found["host"] = m["host"]
        found["dev"] = m["dev"]
        body = body[m.end() :]
    return body, found


def _record(body: str, raw: str, index: int, found: dict[str, str]) -> Record:
    """Return a record with the prefix fields converted."""
    rank = found.get("rank") or found.get("lrank")
    host = found.get("host") or found.get("ihost") or found.get("shost")
    return Record(
        body=body,
        raw=raw,
        line_no=index,
        rank=int(rank) if rank is not None else None,
        local_rank=int(found["local"]) if "local" in found else None,
        host=host,
        device=int(found["dev"]) if "dev" in found else None,
    )


def _wraps(body: str) -> bool:
    """Return whether `body` is a Megatron iteration line (possibly cut short by a terminal)."""
    return "iteration" in body and MEGATRON.search(body) is not None


def _continues(line: str, body: str) -> bool:
    """Return whether `line` is the wrapped rest of the iteration line `body` (field fragment).

    After a complete field (`body` ends with ``|``) only a new ``name: value`` field continues.
    """
    if body.endswith("|") and _FIELD.match(line) is None:
        return False
    return (
        _WRAPPED_TAIL.match(line) is not None
        and MEGATRON.search(line) is None
        and _strip(line)[0] == line
    )


_MESSAGE_START = re.compile(
    r"\[|\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}:\d{2}\b"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} "
    r"|(?:INFO|WARN|WARNING|ERROR|DEBUG|CRITICAL|FATAL|TRACE|NOTICE)\b|[IWEF]\d{4} \d"
    # an elapsed clock and a one-letter level (llama.cpp's `0.24.244.174 I slot ...`)
    r"|\d+(?:[.:]\d+){2,3} [IWEDF] "
)
"""How a log message starts: a bracket, a date or a clock, a level (``INFO``, glog's ``I0813``,
llama.cpp's elapsed clock and level)."""


_NCCL_LEVEL = re.compile(r"(?:WARN|INFO|TRACE|ABORT) ")
"""The level NCCL prints after its name: a line that starts with it right after a segment cut at
`NCCL` goes on with that message."""


def _hard_wrapped(segment: str, following: str) -> bool:
    """Return whether `following` is the rest of `segment` cut by a terminal at its width.

    A terminal copy breaks a message at the window width, mid-word and without indentation:
    the segment is exactly one of the usual widths and the next line has no prefix of its own,
    and does not start as a message does: with the segment's own first word (``INFO:root:`` again
    is the next message of the same logger, one that happens to be as long as the window), a
    time, a log level or a bracket (a log whose lines are all about one width), unless that
    level is NCCL's own, cut from the `NCCL` that ends the segment.
    """
    if len(segment) not in TERMINAL_WIDTHS:
        return False
    first = segment.split(maxsplit=1)[:1]
    # (NCCL's own level cut from its name: `... NCCL` / `WARN socketStartConnect: ...`)
    nccl_level = segment.rstrip().endswith(" NCCL") and _NCCL_LEVEL.match(following) is not None
    return (
        bool(following.strip())
        and not (first and following.startswith(first[0]))
        and (nccl_level or _MESSAGE_START.match(following) is None)
        and _strip(following)[0] in (following, following.lstrip())
        and _TB_LINE.match(following.lstrip()) is None
        and _CONTINUATION.match(following) is None
    )


_WORD = re.compile(r"^[A-Za-z][a-z'’-]*[.,;:!?]?$")
PROSE_SHARE = 0.7
"""Share of a line's tokens that must be plain words for the line to read as a sentence."""


_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
CJK_PROSE_CHARS = 6
"""Chinese, Japanese or Korean characters a line must hold, a third of what it writes, to read
as a sentence (those languages put no spaces between words)."""


def is_prose(body: str) -> bool:
    """Return whether `body` reads as a person's sentence: six tokens or more, mostly words, or
    a sentence in Chinese, Japanese or Korean (CJK_PROSE_CHARS)."""
    tokens = body.split()
    words = sum(_WORD.match(t) is not None for t in tokens)
    if len(tokens) >= 6 and words >= PROSE_SHARE * len(tokens):
        return True
    if body.isascii():
        return False  # (most log lines: no CJK character to count)
    cjk = len(_CJK_CHAR.findall(body))
    return cjk >= CJK_PROSE_CHARS and 3 * cjk >= len(body) - body.count(" ")


def _soft_wrapped(body: str, following: str) -> bool:
    """Return whether `following` (a line's body, its prefixes stripped) goes on with the
    sentence `body`, broken by an editor or a mail client: `body` stops mid-sentence (a word or
    a comma last), the next line goes on in lower case, and both read as prose, not as log
    messages."""
    body = body.rstrip()
    return (
        (body[-1:].isalpha() or body.endswith(","))
        and following[:1].islower()
        and is_prose(body)
        and is_prose(following)
    )


def records(text: str) -> Iterator[Record]:
    """Yield the logical records of `text`, in order."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        full = segment = lines[i]
        i += 1
        while i < len(lines) and len(full) < MAX_LINE and _hard_wrapped(segment, lines[i]):
            segment = lines[i]
            full += segment
            i += 1
        raw = full[:MAX_LINE].rstrip()
        body, found = _strip(raw)
        if body.startswith("NVRM:"):
            while i < len(lines) and _CONTINUATION.match(lines[i]):
                body += " " + lines[i][:MAX_LINE].strip()[len("NVRM: ") :]
                raw += " " + lines[i][:MAX_LINE].strip()
                i += 1
        elif _wraps(body):
            for _ in range(4):
                if i >= len(lines) or not _continues(lines[i][:MAX_LINE], body):
                    break
                body += " " + lines[i][:MAX_LINE].strip()
                raw += " " + lines[i][:MAX_LINE].strip()
                i += 1
        else:
            while i < len(lines) and len(body) < MAX_LINE:
                if _hard_wrapped(lines[i - 1], lines[i]):  # a joined sentence cut at the width
                    body += lines[i][:MAX_LINE]
                    raw += lines[i][:MAX_LINE]
                    i += 1
                    continue
                rest = _strip(lines[i][:MAX_LINE])[0].strip()
                if not _soft_wrapped(body, rest):
                    break
                body += " " + rest
                raw += " " + lines[i][:MAX_LINE].strip()
                i += 1
        yield _record(body[:MAX_LINE], raw[:MAX_LINE], start, found)
