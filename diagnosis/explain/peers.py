"""Per-device rate reports: one device far slower than its peers (a fail-slow GPU).

Burn-in and benchmark tools print the same line once per device (``GEMM [I] (ADAPTER#3)
Ending with 19256.4 GFlops``, ``GPU 5: 412.3 TFLOPS``, ``rank 2 busbw 180.1 GB/s``, a miner's
``| #0 GeForce GTX 1080 Ti | 1min: 2889.51 kH/s``, hashcat's ``Speed.Dev.#1.....: 1891 H/s``).
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


def slow_peer(group: Sequence[tuple[str, float]]) -> int | None:
    """Return the index in `group` ((device, rate) pairs) of a device far below its peers."""
    if len({device for device, _ in group}) < MIN_PEERS:
        return None
    rates = sorted(rate for _, rate in group)
    median = rates[len(rates) // 2]
    slowest = min(range(len(group)), key=lambda i: group[i][1])
    return slowest if median > 0 and group[slowest][1] < SLOW_PEER_RATIO * median else None
