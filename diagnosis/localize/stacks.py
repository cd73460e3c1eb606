"""Stack-trace aggregation the ByteRobust way: group identical stacks, report the outliers.

In a hang almost every rank sits in the same collective; the few whose stacks differ (in the
data loader, in compute, in another collective) are where to look. Groups much smaller than
the largest are outliers; among them, groups outside any torch.distributed call rank first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from diagnosis.model import Action, Blame, Category, ComponentKind, Finding, Severity
from ingest.readers.pyspy import Frame, PyThread

RULE = "implicit.stack_outlier"
COLLECTIVE_FILE = "distributed_c10d.py"


@dataclass(frozen=True)
class StackGroup:
    """Threads with one identical stack."""

    frames: tuple[Frame, ...]
    members: tuple[PyThread, ...]

    @property
    def in_collective(self) -> bool:
        """Return whether the stack is inside a torch.distributed call."""
        return any(f.endswith(COLLECTIVE_FILE) for _, f in self.frames)

    def where(self) -> str:
        """Return the innermost frame outside the standard library, ``function (file)``."""
        func, file = next((f for f in self.frames if "/" in f[1]), self.frames[0])
        return f"{func} ({file})"


def group_stacks(threads: Iterable[PyThread], main_only: bool = True) -> list[StackGroup]:
    """Group threads by identical stack, largest group first."""
    by_stack: dict[tuple[Frame, ...], list[PyThread]] = {}
    for t in threads:
        if main_only and t.name not in (None, "MainThread"):
            continue
        by_stack.setdefault(t.frames, []).append(t)
    groups = [StackGroup(frames, tuple(members)) for frames, members in by_stack.items()]
    return sorted(groups, key=lambda g: (-len(g.members), g.frames))


def outlier_groups(groups: list[StackGroup], share: float = 0.25) -> list[StackGroup]:
    """Return groups at most `share` of the largest group, non-collective ones first."""
    if len(groups) < 2:
        return []
    limit = max(1.0, share * len(groups[0].members))
    small = [
        g for g in groups if len(g.members) <= limit and len(g.members) < len(groups[0].members)
    ]
    return sorted(small, key=lambda g: (g.in_collective, len(g.members)))


def stack_outlier_finding(
    threads: Iterable[PyThread], ranks: Mapping[str, int] | None = None
) -> Finding | None:
    """Return a finding naming the outlier stacks of a job's py-spy dumps, or None."""
    groups = group_stacks(threads)
    outliers = outlier_groups(groups)
    if not outliers:
        return None
    total = sum(len(g.members) for g in groups)
    first = outliers[0]
    ids = [m.thread for m in first.members]
    waiting = sum(len(g.members) for g in groups if g.in_collective and g not in outliers)
    line = (
        f"{len(first.members)} of {total} ranks' main threads in {first.where()} "
        f"(thread {', '.join(ids[:8])}) while {waiting} wait in collectives; "
        f"{len(groups)} distinct stacks, {len(outliers)} outlier group(s)"
    )
    rank = ranks.get(ids[0]) if ranks and len(ids) == 1 else None
    node = first.members[0].source or None if len(first.members) == 1 else None
    return Finding(
        category=Category.HANG,
        blame=Blame.UNKNOWN,
        component=ComponentKind.JOB,
        severity=Severity.ERROR,
        action=Action.CAPTURE_DIAGNOSTICS,
        line=line,
        confidence=0.8 if not first.in_collective else 0.5,
        rule=RULE,
        node=node,
        rank=rank,
    )
