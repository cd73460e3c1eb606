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
from diagnosis.explain.explained import explains
from diagnosis.explain.rules import Rule, host_storage, rule, verdict
from diagnosis.explain.rules_figures import figures_slowed
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

_CAUSES: tuple[tuple[re.Pattern[str], Verdict], ...] = (
    (
        re.compile(
            r"\bbusbw\s+~?\d[\d.]*\s*GB/s[^.\n]{0,40}?\b(?:vs|expected|instead|while|but)\b|"
            r"\b(?:PFC|pause\s+frames?)\b[^.\n]{0,20}?\b(?:storm|spik\w*|high|ris\w*|climb\w*)|"
            r"\b(?:rx_discards\w*|symbol_?error\w*|link_?downed\w*)\b[^.\n]{0,30}?(?:->|→|increas\w*|ris\w*|"
            r"climb\w*|[1-9][\d,.]*[kKM]?\b)|\b(?:links?|ports?|interfaces?|NICs?|HCAs?|IB|RoCE|eth\d+|"
            r"ib\d+|mlx5_\d+|bond\d*)\b[^.\n]{0,20}?\bflapp\w*|\bflapp\w+\s+(?:\w+\s+)?(?:links?|"
            r"ports?|interfaces?|NICs?)\b|\bport\s+\S+\s+(?:went\s+)?down\b|"
            r"\bRate\b[^.\n]{0,12}\d+\s*(?:->|→)\s*\d+\s*Gb|\brenegotiated\s+to\s+\d+\s*Gb|"
            r"NET/IB\s+not\s+found|Using\s+(?:network\s+)?\[?\d?\]?\s*Socket|(?:fell|falls?|falling)\s+back\s+"
            r"to\s+(?:the\s+)?(?:TCP|sockets?)|\bretransmi\w+\s+(?:rate\s+)?(?:~?[1-9]|high|spik\w*|ris\w*)|"
            r"\bpacket\s+loss\s+(?:of\s+)?~?[1-9]|\b[1-9][\d.]*\s*%\s+packet\s+loss|"
            r"\bLink\s+up,\s+speed\s+\d+\s*Gb/s\b[^.\n]{0,40}?\b(?:used\s+to|instead|was|expected)",
            re.IGNORECASE,
        ),
        verdict(C.NETWORK, B.INFRASTRUCTURE, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.45),
    ),
    (
        re.compile(
            r"\b(?:NFS|Lustre|GPFS|BeeGFS|CephFS|gcsfuse|s3fs|S3|GCS|object\s+store)\b[^.\n]{0,40}?"
            r"\b(?:latency|slow\w*|stall\w*|not\s+respond\w*|hang\w*|degraded|timeouts?|evict\w*|"
            r"instead\s+of)|\b(?:reads?|reading|moved\s+to)\s+(?:from\s+|the\s+)?(?:shared\s+)?(?:NFS|Lustre|"
            r"GPFS|BeeGFS|S3|GCS)\b|\b~?\d[\d.]*\s*m?s\s+(?:read\s+)?latency\b|"
            r"\bOST\d*\s+degraded|\b(?:read|p99|GET)\s+latency\s+(?:p\d+\s+)?~?\d|"
            r"\biostat\b[^.\n]{0,60}?(?:100\s*%|\bawait\b)|\bawait\s+\d{3,}|\biowait\s+[1-9]\d\s*%|"
            r"\b(?:disk|NVMe)\b[^.\n]{0,20}?\b100\s*%",
            re.IGNORECASE,
        ),
        host_storage(S.WARNING, A.MONITOR, 0.45),
    ),
    (
        re.compile(
            r"\benforced\s+power\s+limit\s+\d+\s*W\s*\(default\s+\d+|\bpower_?violation\w*\s+high\b|"
            r"\b(?:8\d|9\d|1[01]\d)\s*°?\s*C\b|\b(?:8\d|9\d|1[01]\d)\s*℃|"
            r"\b(?:SM\s+)?clocks?\b[^.\n]{0,15}?\b(?:stuck\s+at|down\s+to|dropped\s+to|at)\s+~?\d[\d,]*\s*MHz"
            r"[^.\n]{0,30}?\b(?:instead|vs|while|others?|fleet|baseline)|\bretired\s+pages?\s+pending\s*"
            r":?\s*Yes|\bLnkSta\b[^.\n]{0,40}?\(downgraded\)|\bECC\b[^.\n]{0,30}?\b(?:climbing|rising|"
            r"increas\w*)|温度[^。\n]{0,20}?(?:8\d|9\d)|クロック[^。\n]{0,20}?下が|降频",
            re.IGNORECASE,
        ),
        verdict(C.GPU_DEGRADED, B.INFRASTRUCTURE, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.45),
    ),
)
_SLOWNESS = re.compile(
    r"\bslow(?!down\s*(?::|temp))\w*|\bcrawl\w*|\b\d+(?:\.\d+)?\s*x\s+slower\b|"
    r"\b(?:step|iteration|epoch)\s*time\s+(?:is\s+|up\s+)?\d+(?:\.\d+)?\s*x\b|\bhalved\b|"
    r"\b(?:step|iteration|iter|epoch|allreduce|all-reduce)\s*time\b[^.\n]{0,20}?\+\d+\s*%|"
    r"\b(?:dropped|fell|down)\s+(?:by\s+)?~?\d+\s*%|\b\d+\s*%\s+(?:slower|lower|drop)|"
    r"\bGPUs?\s+(?:sit\s+)?idle\b|\bidle\s+[1-9]\d\s*%|\bGPU\s+util\w*\s+drops?\b|"
    r"\bwaiting\s+for\s+(?:batches|data)\b|langsam|\blent[oa]\b|\bplus\s+lent\b|慢|遅|느려|медлен|"
    r"замедл|on\s+passe\s+de|下が|掉到",
    re.IGNORECASE,
)
_CAUSE_WORDS = (
    "busbw|pfc|pause frame|rx_discards|symbol|link_down|flapp|port |gb|renegotiated|"
    "net/ib not found|socket|fell back|retransmi|packet loss|link up|nfs|lustre|gpfs|beegfs|"
    "cephfs|gcsfuse|s3|gcs|object store|ost0|ost1|ost2|ost3|ost4|ost5|ost6|ost7|ost8|ost9|"
    "latency|iostat|await|iowait|disk|nvme|power|°c|℃|clock|mhz|retired page|lnksta|ecc|"
    "温度|クロック|降频"
)
_CAUSE_NEEDLES = tuple(_CAUSE_WORDS.split("|"))
"""The words of the causes (`_CAUSES`) that gate the rule."""
_RULED_OUT = re.compile(
    r"\bruled\s+out\b|\b(?:is|are|was|were)n't\s+the\s+(?:problem|cause|issue)|\bnot\s+the\s+"
    r"(?:problem|cause|issue)\b|\bhealthy\b|\ball\s+green\b|\blooks?\s+(?:fine|ok|normal|clean|healthy)\b|"
    r"\b(?:are|is)\s+(?:fine|clean|normal|low)\b|\brunbook\b|^\s*if\b|\bbefore\s+blaming\b|\?\s*$|"
    r"\bnot\s+(?:from|due\s+to|caused\s+by)\b|\bno\s+(?:flapp\w*|PFC|symbol|link|packet)|\bwe\s+checked\b",
    re.IGNORECASE,
)
"""A cause ruled out or only mentioned: a postmortem's list, a runbook's advice, a question."""
_TABLE = re.compile(r"\|.*\|.*\||^\s*[\w .()/-]+?\s{2,}:\s")
"""A table row, or a tool's `Field   : value` line (nvidia-smi -q): a dump, not a report."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


# figure to figure: `180ms -> 610ms` (then, now), `1.9s vs 1.3s` (now, then)
_PAIR = re.compile(
    r"(?P<a>\d+(?:\.\d+)?)\s*(?P<ua>ms|s|sec|min|GB/s|Gb/s|[kKM]?\s*tok\w*/s|samples/s|%)?(?:/\w+)?\s*"
    r"(?P<sign>->|→|vs\.?)\s+(?:[a-z]+\s+)?~?(?P<b>\d+(?:\.\d+)?)\s*(?P<ub>ms|s|sec|min|GB/s|Gb/s|"
    r"[kKM]?\s*tok\w*/s|samples/s|%)?",
    re.IGNORECASE,
)


def _pair_worse(line: str) -> bool:
    """Whether a pair of figures says the speed got worse: a time that rose or a rate that fell
    by a fifth or more (an arrow reads then -> now; `vs` reads now vs then)."""
    for m in _PAIR.finditer(line):
        unit = (m["ua"] or m["ub"] or "").lower()
        if not unit:
            continue
        then, now = float(m["a"]), float(m["b"])
        if m["sign"].startswith("vs"):
            then, now = now, then
        timed = unit in ("ms", "s", "sec", "min")
        if then > 0 and (now >= 1.2 * then if timed else now <= 0.8 * then):
            return True
    return False


_ON_PURPOSE = re.compile(r"\bon\s+purpose\b|\bnothing\s+is\s+broken\b|\bdeliberately\b", re.I)


def _cause(m: re.Match[str]) -> Verdict | None:
    """Return the verdict of the first cause family a sentence of the line names, when the
    line names a slowness and the sentence neither rules the cause out nor only mentions it."""
    line = m.string
    if _TABLE.search(line) or not any(pattern.search(line) for pattern, _ in _CAUSES):
        return None
    if explains(line) or _ON_PURPOSE.search(line):
        return None  # the speaker's own doing, or expected (`set NCCL_IB_DISABLE=1 on purpose`)
    if not (_SLOWNESS.search(line) or figures_slowed(line) or _pair_worse(line)):
        return None
    for sentence in _SENTENCE.split(line):
        if _RULED_OUT.search(sentence):
            continue
        for pattern, given in _CAUSES:
            if pattern.search(sentence):
                return given
    return None


RULES: tuple[Rule, ...] = (
    rule(
        "slowness.cause_named",
        r"\A",
        _CAUSE_NEEDLES,
        "A slowdown reported with its cause (the fabric's, the storage's or the GPU's evidence "
        "in the same line): the synchronous job waits for that cause, so the finding names it.",
        judge=_cause,
    ),
)
