"""A slowdown told together with its cause: the cause is the finding.

People who report a slow job often paste the evidence they found with it: the fabric's
(`nccl-tests busbw 38 GB/s vs ~190 expected`, a port that flapped, PFC pause frames, symbol
errors, a link that trained down, NCCL on sockets), the storage's (NFS, Lustre, object-store or
disk latency, iostat; a data loader that waits without a storage system named is a straggler,
as the corpus labels an input straggler) or
the GPU's (a power limit enforced below its default, a temperature with the clocks down, pages
pending retirement, a PCIe link downgraded: measured evidence, not the words `thermal` or
`throttled`, which reports of a straggler use in general). A synchronous job that slowed
waits for that cause, so the finding names it, at the confidence of a report rather than of the
tool's own line:

- a line names a cause of one of these three families and a slowness (slow, a step time that
  rose, a rate that fell, `+35%`, `->`, in the languages the readers know);
- the families are tried in this order: the network, the storage, the GPU.

Guarantees: a cause named without a slowness is left to the rules of its own lines; a cause
denied (`no NCCL errors`, `NFS is fine`) names nothing; a benchmark table of configurations
is no slowdown, nor is a tool's dump (nvidia-smi -q's `GPU Slowdown Temp : 90 C`).
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

_CAUSES: tuple[tuple[re.Pattern[str], Verdict], ...] = (
    (
        re.compile(
            r"\bbusbw\b|\bnccl-tests\b|\ball_reduce_perf\b|\bPFC\b|\bpause\s+frames?\b|"
            r"\brx_discards\w*|\bsymbol_?error\w*|\blink_?downed\w*|\bflapp\w*|\bport\s+\S+\s+"
            r"(?:down|flapped)\b|\bRate\b[^.\n]{0,12}\d+\s*(?:->|→)\s*\d+\s*Gb|NET/IB\s+not\s+found|"
            r"Using\s+(?:network\s+)?\[?\d?\]?\s*Socket|fell\s+back\s+to\s+(?:TCP|sockets?)|"
            r"\bretransmi\w+|\bpacket\s+loss\b|\bECN\s+marks?\b|\bcongest\w+|\bLink\s+up,\s+speed\b",
            re.IGNORECASE,
        ),
        verdict(C.NETWORK, B.INFRASTRUCTURE, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    (
        re.compile(
            r"\biostat\b|\bnfsiostat\b|\bawait\s+\d|\bNFS\b|\bLustre\b|"
            r"\bOST\d+|\bgcsfuse\b|\bs3fs\b|\bS3\s+(?:GET|read)|\bGCS\b|\bobject\s+store\b|"
            r"\bread\s+latency\b|\bI/?O\s*wait\b|\biowait\b|"
            r"\bdisk\s+(?:util\w*|latency|busy)",
            re.IGNORECASE,
        ),
        verdict(C.HOST_STORAGE, B.INFRASTRUCTURE, K.NODE, S.WARNING, A.MONITOR, 0.45),
    ),
    (
        re.compile(
            r"\bpower[_\s](?:limit|violation|brake)\w*|\benforced\s+power\s+limit\b|"
            r"\b\d{2,3}\s*°?\s*C\b|\d{2,3}\s*℃|\bretired\s+pages?\b|"
            r"\brow\s+remap\w*|\bECC\s+(?:error|correctable|uncorrectable)\w*|\bLnkSta\b|\bdowngraded\b|"
            r"温度|クロック|频率|降频",
            re.IGNORECASE,
        ),
        verdict(C.GPU_DEGRADED, B.INFRASTRUCTURE, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.45),
    ),
)
_SLOWNESS = re.compile(
    r"\bslow(?!down\s*(?::|temp))\w*|\bcrawl\w*|\blag\w*|"
    r"\+\d+\s*%|"
    r"\b\d+(?:\.\d+)?\s*x\s+slower\b|\b(?:step|iteration|epoch)\s*time\s+(?:is\s+)?\d+(?:\.\d+)?\s*x\b|->|→|\bdropped\b|\bhalved\b|\bGPUs?\s+(?:sit\s+)?idle\b|"
    r"\bidle\s+\d+\s*%|\bGPU\s+util\w*\s+drops?\b|langsam|lento|lent\b|慢|遅|느려|медлен|замедл|"
    r"passe\s+de|on\s+passe|下が|掉到|\bvs\b",
    re.IGNORECASE,
)
_DENIED = re.compile(
    r"\b(?:no|not|without|zero|nothing\s+in)\s+(?:\w+\s+){0,2}$|\bis\s+fine\b|\blooks?\s+(?:fine|ok|"
    r"healthy)\b|\bruled\s+out\b",
    re.IGNORECASE,
)
_TABLE = re.compile(r"\|.*\|.*\||^\s*[\w .()/-]+?\s{2,}:\s")
"""A table row, or a tool's `Field   : value` line (nvidia-smi -q): a dump, not a report."""


def _cause(m: re.Match[str]) -> Verdict | None:
    """Return the verdict of the first cause family the line names, when it also names a
    slowness and does not deny the cause."""
    line = m.string
    if _TABLE.search(line) or not _SLOWNESS.search(line):
        return None
    for pattern, given in _CAUSES:
        found = pattern.search(line)
        if found is None:
            continue
        before = line[max(0, found.start() - 25) : found.start()]
        after = line[found.end() : found.end() + 25]
        if _DENIED.search(before) or re.match(r"\s*(?:is|are|looks?)\s+(?:fine|ok|healthy)", after):
            continue
        return given
    return None


RULES: tuple[Rule, ...] = (
    rule(
        "slowness.cause_named",
        r"\A",
        (
            *("busbw", "nccl-tests", "all_reduce_perf", "pfc", "pause frame", "rx_discards"),
            *("symbol", "link_down", "flapp", "rate", "net/ib not found", "socket", "fell back"),
            *("retransmi", "packet loss", "ecn", "congest", "link up", "ibstat", "gb/s"),
            *("iostat", "await", "nfs"),
            *("lustre", "gcsfuse", "s3", "gcs", "object store", "read latency", "i/o"),
            *("iowait", "disk"),
            *("power", "thermal", "throttl", "°c", "temp", "℃", "retired page", "row remap"),
            *("ecc", "lnksta", "downgraded", "温度", "クロック", "频率", "降频"),
        ),
        "A slowdown reported with its cause (the fabric's, the storage's or the GPU's evidence "
        "in the same line): the synchronous job waits for that cause, so the finding names it.",
        judge=_cause,
    ),
)
