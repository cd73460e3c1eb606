"""Per-device rate reports: one device far slower than its peers (a fail-slow GPU).

Burn-in and benchmark tools print the same line once per device (``GEMM [I] (ADAPTER#3)
Ending with 19256.4 GFlops``, ``GPU 5: 412.3 TFLOPS``, ``rank 2 busbw 180.1 GB/s``, a miner's
``| #0 GeForce GTX 1080 Ti | 1min: 2889.51 kH/s``, hashcat's ``Speed.Dev.#1.....: 1891 H/s``),
or a table of them (xmr-stak's ``HASHRATE REPORT``, read by the engine only under its header).
Lines of one shape (the text with its numbers blanked) that name at least ``MIN_PEERS`` different
devices form a peer group; a device whose rate is below ``SLOW_PEER_RATIO`` times the group's
median is a fail-slow device. Only rates count (higher is better), never durations.

Workers of one job that print their progress without naming themselves (MXNet's
``Epoch[0] Batch [100]	Speed: 889.48 samples/sec``, one line per worker) are told apart by the
step: one process prints a step once, so the same step printed again is another worker
(``step_rate_of``). The lines of one step, with their other figures blanked, form a group of
peers, and ``MIN_STEP_PEERS`` of them suffice: the step names what they have in common.

Guarantees: a group needs ``MIN_PEERS`` distinct devices (``MIN_STEP_PEERS`` workers of one
step), so one or two lines never alarm; equal or jittering healthy rates (within 30 % of the
median) never alarm.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_PEERS = 4
MIN_STEP_PEERS = 3
"""Three workers at one step: the slow one is an outlier of a majority of two."""
SLOW_PEER_RATIO = 0.7

_RATE = re.compile(
    r"(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>[GT]FLOPS|[GT]Flops|[GT]FLOP/s|TFLOPs|GB/s|Gbps"
    r"|samples/s|tokens/s|[kKMGT]?H/s|[kKMGT]?h/s|Sol/s|images/sec|img/s)(?![\w/])"
)
# `GPU 3`, `ADAPTER#3`, `rank=2`, `cuda:1`, hashcat's `Dev.#3`, a miner's `| #0 GeForce ...`
_DEVICE = re.compile(
    r"\b(?:ADAPTER|GPU|[Dd]evice|Dev\.|[Rr]ank|RANK|cuda:)\s*[#=:]?\s*(?P<dev>\d+)\b"
    r"|(?:^|[\s|])#(?P<dev2>\d+)\s+[A-Za-z]"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_HINTS = ("lop", "/s", "gbps")


# a progress rate with no device: `Speed: 889.48 samples/sec`, `1234 tokens/sec`, `3.2 it/s`
_STEP_RATE = re.compile(
    r"(?P<value>\d+(?:\.\d+)?)\s*(?:samples|tokens|images|img|sequences|seqs)/s(?:ec)?(?![\w/])"
    r"|(?P<value2>\d+(?:\.\d+)?)\s*it/s\b",
    re.IGNORECASE,
)
# the step a line reports: `Epoch[0] Batch [100]`, `epoch 3 step 1200`, `iter 50` (an epoch
# names the step only with a batch, step or iteration inside it)
_STEP = re.compile(
    r"\b(?:epoch|batch|step|iter(?:ation)?)\s*[\[#:=]?\s*\d+\s*\]?(?:\s*/\s*\d+)?", re.IGNORECASE
)
STEP_GROUP = "step "
"""The prefix of a same-step group's key (`slow_peer` needs only MIN_STEP_PEERS of them)."""


def step_rate_of(body: str) -> tuple[str, float] | None:
    """Return (group, rate) of a progress line that names its step but no device: the group is
    the step with the line's other figures blanked, so the workers printing one step share it."""
    rate = _STEP_RATE.search(body)
    steps = _STEP.findall(body)
    # an epoch alone is no step: a progress bar prints it on every update
    if rate is None or all(s.lower().startswith("epoch") for s in steps) or _DEVICE.search(body):
        return None
    rest = _NUMBER.sub("#", _STEP.sub("", body.strip()))
    return STEP_GROUP + " ".join(s.strip() for s in steps) + " | " + rest, float(
        rate["value"] or rate["value2"]
    )


def rate_of(body: str) -> tuple[str, str, float] | None:
    """Return (shape, device, rate) of a per-device rate line, or None."""
    if not any(h in body for h in _HINTS) and "LOP" not in body:
        return None
    rate = _RATE.search(body)
    device = _DEVICE.search(body)
    if rate is None or device is None:
        return None
    return _NUMBER.sub("#", body.strip()), device["dev"] or device["dev2"], float(rate["value"])


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
