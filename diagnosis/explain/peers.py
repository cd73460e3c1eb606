"""Per-device rate reports: one device far slower than its peers (a fail-slow GPU).

Burn-in and benchmark tools print the same line once per device (``GEMM [I] (ADAPTER#3)
Ending with 19256.4 GFlops``, ``GPU 5: 412.3 TFLOPS``, ``rank 2 busbw 180.1 GB/s``, a miner's
``| #0 GeForce GTX 1080 Ti | 1min: 2889.51 kH/s``, hashcat's ``Speed.Dev.#1.....: 1891 H/s``),
or a table of them (xmr-stak's ``HASHRATE REPORT``, read by the engine only under its header).
Lines of one shape (the text with its numbers blanked) that name at least ``MIN_PEERS`` different
devices form a peer group; a device whose rate is below ``SLOW_PEER_RATIO`` times the group's
median is a fail-slow device. Only rates count (higher is better), never durations.

Guarantees: a group needs ``MIN_PEERS`` distinct devices, so one or two lines never alarm;
equal or jittering healthy rates (within 30 % of the median) never alarm.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_PEERS = 4
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


def slow_peer(group: Sequence[tuple[str, float]]) -> int | None:
    """Return the index in `group` ((device, rate) pairs) of a device far below its peers."""
    if len({device for device, _ in group}) < MIN_PEERS:
        return None
    rates = sorted(rate for _, rate in group)
    median = rates[len(rates) // 2]
    slowest = min(range(len(group)), key=lambda i: group[i][1])
    return slowest if median > 0 and group[slowest][1] < SLOW_PEER_RATIO * median else None
