"""Placement: best fit on 8-GPU servers, whole servers for big jobs, risky servers last."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scheduler.model import Server


class Slot(Protocol):
    """What placement reads from a server."""

    @property
    def server_id(self) -> int: ...
    @property
    def gpus(self) -> int: ...
    @property
    def risk(self) -> float: ...
    @property
    def free(self) -> int: ...


RISKY = 0.5
"""Predicted failure risk at or above which fault-aware placement uses a server last."""


def _tier(server: Slot, fault_aware: bool) -> int:
    return 1 if fault_aware and server.risk >= RISKY else 0


def best_fit(
    servers: Sequence[Slot], gpus: int, fault_aware: bool = False
) -> dict[int, int] | None:
    """Return GPUs to take per server for a `gpus`-GPU job, or None when it does not fit.

    A job up to one server goes to the fullest server that still fits it; a bigger job takes
    whole free servers plus a best-fit remainder, and spreads over the emptiest servers only
    when there are not enough whole ones. `servers` is in preference order.
    """
    if gpus <= 0:
        return {}
    size = servers[0].gpus if servers else 8
    if gpus <= size:
        return _fit_one(servers, gpus, fault_aware, exclude=set())
    whole = [s for s in servers if s.free == s.gpus]
    whole.sort(key=lambda s: _tier(s, fault_aware))
    need_whole, rest = divmod(gpus, size)
    if len(whole) >= need_whole:
        taken = {s.server_id: s.gpus for s in whole[:need_whole]}
        if rest == 0:
            return taken
        tail = _fit_one(servers, rest, fault_aware, exclude=set(taken))
        if tail is not None:
            taken.update(tail)
            return taken
    return _spread(servers, gpus, fault_aware)


def _fit_one(
    servers: Sequence[Slot], gpus: int, fault_aware: bool, exclude: set[int]
) -> dict[int, int] | None:
    best: tuple[int, int, int] | None = None
    chosen: Slot | None = None
    for rank, s in enumerate(servers):
        free = s.free
        if free < gpus or s.server_id in exclude:
            continue
        key = (_tier(s, fault_aware), free, rank)
        if best is None or key < best:
            best, chosen = key, s
            if free == gpus and key[0] == 0:
                break
    return None if chosen is None else {chosen.server_id: gpus}


def _spread(servers: Sequence[Slot], gpus: int, fault_aware: bool) -> dict[int, int] | None:
    order = sorted(
        (s for s in servers if s.free > 0), key=lambda s: (_tier(s, fault_aware), -s.free)
    )
    taken: dict[int, int] = {}
    left = gpus
    for s in order:
        take = min(s.free, left)
        taken[s.server_id] = take
        left -= take
        if left == 0:
            return taken
    return None


def place_batch(
    servers: Sequence[Server], demands: Sequence[tuple[int, int]], fault_aware: bool = False
) -> dict[int, dict[int, int]]:
    """Place (job, GPUs) demands biggest first (best-fit decreasing) without mutating servers.

    Returns the placement of each job that fit; the rest are left out.
    """
    free = {s.server_id: s.free for s in servers}
    shadow = [_Shadow(s, free) for s in servers]
    placed: dict[int, dict[int, int]] = {}
    for job_id, gpus in sorted(demands, key=lambda d: -d[1]):
        where = best_fit(shadow, gpus, fault_aware)
        if where is None:
            continue
        for sid, g in where.items():
            free[sid] -= g
        placed[job_id] = where
    return placed


class _Shadow:
    """A server view whose free GPUs come from a scratch table (for trial placements)."""

    __slots__ = ("server_id", "gpus", "risk", "_free")

    def __init__(self, server: Server, free: dict[int, int]) -> None:
        self.server_id = server.server_id
        self.gpus = server.gpus
        self.risk = server.risk
        self._free = free

    @property
    def free(self) -> int:
        """Return the GPUs still free in the scratch table."""
        return self._free[self.server_id]
