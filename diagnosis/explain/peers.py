"""Per-device rate reports: one device far slower than its peers (a fail-slow GPU).

Burn-in and benchmark tools print the same line once per device (``GEMM [I] (ADAPTER#3)
Ending with 19256.4 GFlops``, ``GPU 5: 412.3 TFLOPS``, ``rank 2 busbw 180.1 GB/s``, a miner's
``| #0 GeForce GTX 1080 Ti | 1min: 2889.51 kH/s``, hashcat's ``Speed.Dev.#1.....: 1891 H/s``),
or a table of them (xmr-stak's ``HASHRATE REPORT``, read by the engine only under its header).
Lines of one shape (the text with its numbers blanked) that name at least ``MIN_PEERS`` different
devices form a peer group; a device whose rate is below ``SLOW_PEER_RATIO`` times the group's
median is a fail-slow device. Only rates count (higher is better), never durations.

Workers of one job that print their progress without naming themselves (MXNet's
``Epoch[0] Batch [100]	Speed: 889.48 samples/sec``, one line per worker) print the same step
together: consecutive lines that name a step and are identical but for their rate and their
decimals (loss, accuracy) are the workers of that step (``step_rate_of``); ``MIN_STEP_PEERS`` of
them suffice. A line that differs in an integer (another step, micro-batch, fold, precision or
model size, a clock) or comes back later (a replay after a restart, a counter that restarts
each epoch) is not a peer.

Several devices' rates on one line (Claymore's ``ETH: GPU0 13.875 Mh/s, GPU1 26.397 Mh/s, GPU2
26.743 Mh/s``) are a group of their own: ``MIN_LINE_PEERS`` of them suffice (``line_rates``).

The same line printed again (a miner's report every 10 s) shows whether one device stays
behind: the slowest of every report, below ``STEADY_SLOW_RATIO`` of the others while they agree
with each other (``steady_slow_peer``), is slow though within 30 % of them.

Guarantees: a group needs ``MIN_PEERS`` distinct devices (``MIN_STEP_PEERS`` workers of one
step, ``MIN_LINE_PEERS`` devices of one line), so one or two lines never alarm; equal or
jittering healthy rates (within 30 % of the median in one report, within 10 % or changing
places over reports) never alarm.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

MIN_PEERS = 4
MIN_STEP_PEERS = 3
"""Three workers at one step: the slow one is an outlier of a majority of two."""
SLOW_PEER_RATIO = 0.7

_RATE = re.compile(
    r"(?<![\d.])(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[GT]FLOPS|[GT]Flops|[GT]FLOP/s|TFLOPs|GB/s|Gbps"
    r"|samples/s|tokens/s|[kKMGT]?H/s|[kKMGT]?h/s|Sol/s|images/sec|img/s)(?![\w/])"
)
# `GPU 3`, `ADAPTER#3`, `rank=2`, `cuda:1`, hashcat's `Dev.#3`, a miner's `| #0 GeForce ...`
_DEVICE = re.compile(
    r"\b(?:ADAPTER|GPU|[Dd]evice|Dev\.|[Rr]ank|RANK|cuda:)\s*[#=:]?\s*(?P<dev>\d+)\b"
    r"|(?:^|[\s|])#(?P<dev2>\d+)\s+[A-Za-z]"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# a GPU model (`GTX 1070`, `RTX 3090`, `RX 580`, `A100`, `H100 80GB`)
GPU_MODEL = re.compile(
    r"\b(?:GTX|RTX|RX|GT|Radeon|Tesla|Quadro)\s*[A-Z]?\d{2,4}\w*|\b[A-Z]\d{2,4}\b"
)
# a board partner's name before the GPU model (ccminer's `GPU #2: ASUS GTX 1070, 3067 kH/s`):
# cards of one model from two vendors are peers
_VENDOR = re.compile(
    r"\b(?:ASUS|Asus|MSI|Gigabyte|GIGABYTE|EVGA|Zotac|ZOTAC|PNY|Palit|Gainward|Inno3D|Colorful"
    r"|Galax|KFA2|Sapphire|XFX|PowerColor|ASRock|Biostar|Manli|Leadtek|Dell|HP|Lenovo|NVIDIA"
    r"|Nvidia)\s+(?=(?:GeForce\s+)?(?:GTX|RTX|RX|Radeon|Tesla|Quadro|GT|[A-Z]\d{2,4}\b))"
)
_HINTS = ("lop", "/s", "gbps")


# a progress rate with no device: `Speed: 889.48 samples/sec`, `1,234 tokens/sec`, `3.2 it/s`
# (a figure starts a number: no match inside a run of digits)
_FIGURE = r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?"
_STEP_RATE = re.compile(
    rf"(?P<value>{_FIGURE})\s*(?:(?:samples|tokens|images|img|sequences|seqs)/s(?:ec)?|it/s)"
    r"(?![\w/])",
    re.IGNORECASE,
)
# the unit first, then its figure (Horovod's `iter 200 samples/sec: 412.1`: the 200 is the step)
_STEP_RATE_NAMED = re.compile(
    rf"(?:samples|tokens|images|img|sequences|seqs)/s(?:ec)?\s*[:=]\s*(?P<value>{_FIGURE})(?![\d.])",
    re.IGNORECASE,
)
# the step a line reports: `Epoch[0] Batch [100]`, `epoch 3 step 1200`, `iter 50` (an epoch
# names the step only with a batch, step or iteration inside it)
_STEP = re.compile(
    r"\b(?:epoch|batch|step|iter(?:ation)?)\s*[\[#:=]?\s*\d+\s*\]?(?:\s*/\s*\d+)?", re.IGNORECASE
)
# a time the logger put first (`10:00:01 INFO ...`, `2017-01-26 20:50:44,995 Epoch[0] ...`):
# workers print one step a moment apart
_LEADING_TIME = re.compile(
    r"\s*\[?\d{1,4}[-:/.]\d{1,2}[-:/.]\d{1,2}(?:[T ][\d:.,]+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+"
)
_BLANKS = re.compile(r"\s+")
_LEFT = re.compile(
    r"\b(?:eta|required|remaining|left|time\s+left)\W{1,3}\d+(?:\.\d+)?\s*(?:hours?|hrs?|h"
    r"|minutes?|mins?|m|days?|d|s)?\b",
    re.IGNORECASE,
)
_STAMP = re.compile(r"(?:\d{4}[-/]\d\d[-/]\d\d[T ])?\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b")
_DECIMAL = re.compile(r"\d+\.\d+(?:e[+-]?\d+)?", re.IGNORECASE)
STEP_GROUP = "step "
"""The prefix of a same-step group's key (`slow_peer` needs only MIN_STEP_PEERS of them)."""
LINE_GROUP = "line "
"""The prefix of a one-line group of devices' rates (``line_rates``: MIN_LINE_PEERS suffice)."""


def least_peers(group: str) -> int:
    """Return how many devices the peer group keyed `group` needs (its prefix says its kind)."""
    if group.startswith(STEP_GROUP):
        return MIN_STEP_PEERS
    return MIN_LINE_PEERS if group.startswith(LINE_GROUP) else MIN_PEERS


class StepRate(NamedTuple):
    """A progress line's rate: its group of same-step peers, the rate, and its shape without
    the step (the stream of one process's steps: a rate of another unit or another sequence
    length is another stream)."""

    group: str
    rate: float
    shape: str


def step_rate_of(body: str) -> StepRate | None:
    """Return (group, rate) of a progress line that names its step but no device.

    The group is the line with its rate and its decimals (loss, accuracy) blanked: the lines of
    several workers at one step are identical but for those, while one process's lines differ
    in an integer (another step, another micro-batch, fold, precision or model size, a clock).
    The engine groups only consecutive lines (the workers print a step together; a replay after
    a restart or a counter that restarts each epoch comes back later)."""
    if "/s" not in body:
        return None
    rate = _STEP_RATE_NAMED.search(body) or _STEP_RATE.search(body)
    steps = _STEP.findall(body)
    # an epoch alone is no step: a progress bar prints it on every update
    if rate is None or all(s.lower().startswith("epoch") for s in steps) or _DEVICE.search(body):
        return None
    stamp = _LEADING_TIME.match(body)
    start = stamp.end() if stamp else len(body) - len(body.lstrip())
    blanked = body[start : rate.start("value")] + "#" + body[rate.end("value") :].rstrip()
    # a time inside the line (`Training: 2021-07-03 00:12:24`), the time left (`Required: 73
    # hours`): they change from line to line of one stream
    blanked = _LEFT.sub("#", _STAMP.sub("#", blanked))
    return StepRate(
        STEP_GROUP + _DECIMAL.sub("#", blanked),
        float(rate["value"].replace(",", "")),
        # (blanks collapsed: a column padded for a wider step count is the same stream)
        _BLANKS.sub(" ", _DECIMAL.sub("#", _STEP.sub("", blanked))),
    )


# several devices' rates on one line (Claymore's `ETH: GPU0 13.875 Mh/s, GPU1 26.397 Mh/s, ...`)
_LINE_RATE = re.compile(
    r"\b(?i:GPU)\s*#?(?P<dev>\d+)\]?\s*[:=]?\s*(?P<value>\d+(?:\.\d+)?)\s*"
    r"(?:[kKMGT]?[Hh]/s|Sol/s|it/s|(?:samples|images|img|tokens)/s(?:ec)?|[GT]B/s|[GT]FLOPS)(?![\w/])"
)
MIN_LINE_PEERS = 3
"""Devices one line must list to be a group of peers: the line names them all together."""


def line_rates(body: str) -> list[tuple[str, float]]:
    """Return the (device, rate) pairs of a line that lists MIN_LINE_PEERS devices or more."""
    if "/s" not in body:
        return []
    found = [(m["dev"], float(m["value"])) for m in _LINE_RATE.finditer(body)]
    return found if len({device for device, _ in found}) >= MIN_LINE_PEERS else []


STEADY_SLOW_RATIO = 0.9
"""A device below this share of its peers' median in every report of a line's shape is slow
though it is above SLOW_PEER_RATIO, where the peers agree within ``STEADY_SPREAD``."""
STEADY_SPREAD = 0.05


APART_BY_DESIGN = re.compile(
    r"\b(?:drives?|driving|runs?|running|connected\s+to|plugged\s+into|hooked\s+up\s+to)\s+"
    r"(?:my\s+|the\s+|our\s+|two\s+|three\s+|\d\s+|all\s+)*(?:monitors?|displays?|screens?)\b",
    re.IGNORECASE,
)
"""A member said to drive the displays (`gpu 0 drives my two monitors`): slower by design."""


def steady_slow_peer(reports: Sequence[Sequence[tuple[str, float]]]) -> bool:
    """Return whether one device is the slowest of every report (two or more lines of one shape
    that each list MIN_LINE_PEERS devices: line_rates), each time below STEADY_SLOW_RATIO times
    the median of the others, and the others within STEADY_SPREAD of their median: identical
    peers, and one that stays behind them (a card 14 % behind five others at 22.7 MH/s)."""
    slowest: set[str] = set()
    for group in reports:
        device, rate = min(group, key=lambda pair: pair[1])
        others = sorted(r for d, r in group if d != device)
        if len(others) + 1 < MIN_LINE_PEERS:
            return False
        median = others[len(others) // 2]
        low, high = (1 - STEADY_SPREAD) * median, (1 + STEADY_SPREAD) * median
        tight = low <= others[0] and others[-1] <= high
        if not (tight and 0 < rate < STEADY_SLOW_RATIO * median):
            return False
        slowest.add(device)
    return len(reports) >= 2 and len(slowest) == 1


def rate_of(body: str) -> tuple[str, str, float] | None:
    """Return (shape, device, rate) of a per-device rate line, or None."""
    if not any(h in body for h in _HINTS) and "LOP" not in body:
        return None
    rate = _RATE.search(body)
    device = _DEVICE.search(body)
    if rate is None or device is None:
        return None
    shape = _NUMBER.sub("#", _VENDOR.sub("", body.strip()))
    model = GPU_MODEL.search(body)  # kept whole: a 3060 is no peer of a 3090
    return (
        shape + (f" | {model[0]}" if model else ""),
        device["dev"] or device["dev2"],
        float(rate["value"]),
    )


# xmr-stak's HASHRATE REPORT: `|  0 |  503.1 |   (na) |   (na) |  1 |  510.5 | ...`, one cell of
# (thread ID, 10 s, 60 s, 15 min rates) per device thread, two to a row
TABLE_HEADER = "HASHRATE REPORT"
_TABLE_CELL = re.compile(
    r"\|\s*(?P<dev>\d+)\s*\|\s*(?P<r10>\d+(?:\.\d+)?|\(na\))\s*\|\s*(?P<r60>\d+(?:\.\d+)?|\(na\))"
    r"\s*\|\s*(?P<r15>\d+(?:\.\d+)?|\(na\))\s*(?=\|)"
)


def table_rates(body: str) -> list[tuple[str, str, float]]:
    """Return (shape, device, rate) of each cell of a HASHRATE REPORT row: the freshest rate
    the tool measured (10 s, else 60 s, else 15 min); a cell with none is skipped."""
    found = []
    for cell in _TABLE_CELL.finditer(body):
        rate = next((cell[g] for g in ("r10", "r60", "r15") if cell[g] != "(na)"), None)
        if rate is not None:
            found.append((TABLE_HEADER, cell["dev"], float(rate)))
    return found


def slow_peer(group: Sequence[tuple[str, float]], least: int = MIN_PEERS) -> int | None:
    """Return the index in `group` ((device, rate) pairs) of a device far below its peers;
    `least` devices make a group."""
    if len({device for device, _ in group}) < least:
        return None
    rates = sorted(rate for _, rate in group)
    median = rates[len(rates) // 2]
    slowest = min(range(len(group)), key=lambda i: group[i][1])
    return slowest if median > 0 and group[slowest][1] < SLOW_PEER_RATIO * median else None
