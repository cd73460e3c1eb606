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
- an operator's or tool's sentence that names one member (``GPU 2``, ``rank 7``, ``node 3``,
  ``card 1``) as much, far or N times slower than the other members, the rest or its peers
  (``GPU 2 much slower, then the other 5 GPUs``): the comparison is against peers, so a member
  slower than before, or slower without a degree, is not one.

Guarantees: every rule needs the figures of its own format; too few members (fewer than
three nodes, fewer than ``peers.MIN_PEERS`` GPUs) or figures within the ratios are benign. The
detector warning and the verdict are the tools' own judgement: a warning with an empty rank list
is not one.
"""

from __future__ import annotations

import re
from statistics import median

from diagnosis.catalog import Verdict
from diagnosis.explain.peers import slow_peer
from diagnosis.explain.rules import Rule, rule, verdict
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

_MEMBER_KIND = {
    "gpu": K.GPU,
    "card": K.GPU,
    "device": K.GPU,
    "node": K.NODE,
    "host": K.NODE,
    "rank": K.JOB,
    "worker": K.JOB,
}
_DEGREE = r"(?:much|far|significantly|considerably|way|\d+(?:\.\d+)?\s*(?:x|times))"
_PEERS = r"(?:the\s+|all\s+(?:the\s+)?)?(?:other|others|rest|remaining|peers|its\s+peers)\b"
_NODE_TIME = re.compile(r"(\d+)\s*:\s*(\d+(?:\.\d+)?)")
_GPU_RATE = re.compile(r"\((\d+(?:\.\d+)?) Gflop/s\)")


def _elapsed(m: re.Match[str]) -> Verdict | None:
    """Return straggler when one node's elapsed time is far above the nodes' median."""
    times = [float(t) for _, t in _NODE_TIME.findall(m["nodes"])]
    if len(times) < MIN_NODES:
        return None
    middle = median(times)
    return SLOW_NODE if middle > 0 and max(times) >= SLOW_ELAPSED_RATIO * middle else HEALTHY


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


def _named_slower(m: re.Match[str]) -> Verdict:
    """Return straggler on the component the sentence names (GPU, node or rank)."""
    kind = _MEMBER_KIND[m["kind"].lower()]
    return verdict(C.STRAGGLER, B.UNKNOWN, kind, S.WARNING, A.HARDWARE_INSPECTION, 0.4)


RULES: tuple[Rule, ...] = (
    rule(
        "straggler.node_elapsed",
        r"The elapsed time of nodes are \{(?P<nodes>[^}]*)\}",
        ("elapsed time of nodes",),
        "dlrover's node check prints every node's time for the same task: a node taking "
        f"{SLOW_ELAPSED_RATIO:g}x the median is a slow node (NIC, NVLink, GPU or host).",
        judge=_elapsed,
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
        r"dropped)\. Affected ranks: [\[{(]\s*\d",
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
    rule(
        "straggler.named_slower_than_peers",
        r"\b(?P<kind>GPU|card|device|node|host|rank|worker)\s*#?\s*\d+\b[^.;\n]{0,40}?\b"
        + _DEGREE
        + r"\s+slower,?\s+th[ae]n\s+"
        + _PEERS,
        ("slower",),
        "A report naming one GPU, node or rank as much (or N times) slower than its peers: in a "
        "synchronous job every other member waits for it, so it is a straggler to inspect.",
        judge=_named_slower,
        flags=re.IGNORECASE,
    ),
)
