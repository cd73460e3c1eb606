"""A group join that completed while nobody polled counts (kafka-python 3.0 fix).

kafka-python 3.0 (through 3.0.12, the newest release) runs JoinGroup + SyncGroup as a task
that `poll` awaits for at most its timeout. A join that completes after that poll returned
and before the next one starts is thrown away: the next poll sees the task done, starts a new
one and sends a new JoinGroup. A member that works between short polls for longer than a join
takes (a sink writing a batch on a loaded host, a worker feeding events) then rejoins for ever
and never gets its partitions; heartbeats are off during a join, so the broker finally drops
it. The Java client keeps a completed join until a poll takes it.

`keep_completed_joins` does the same on one consumer's coordinator: the assignment of a
completed join is kept until the join is applied; a join started while one is kept returns
it at once instead of asking the broker again. If the broker has rebalanced meanwhile, the
next heartbeat says so and the member joins again, as after any join. A coordinator without
these methods (another client version) is left as it is.

A second hole of the same release: a rejoin the consumer starts because its metadata changed
(a topic's partitions appeared after the first join: a group made right after its topics) is
"needed" only while the leader's assignment snapshot differs from the metadata. The join, as
leader, assigns that metadata, so when it completes after the poll gave up, the next poll
sees no rejoin needed and never applies it: no partitions fetched, heartbeats off, and the
broker drops the member. A started join therefore marks the rejoin needed until it is applied
(the client clears the mark only when it applies a join).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


def keep_completed_joins(coordinator: Any) -> bool:
    """Patch one kafka-python coordinator; return whether it had the methods to patch."""
    join_and_sync: Callable[[], Awaitable[bytes]] | None = getattr(
        coordinator, "_do_join_and_sync_async", None
    )
    complete: Callable[..., Awaitable[Any]] | None = getattr(
        coordinator, "_on_join_complete_async", None
    )
    if join_and_sync is None or complete is None:
        return False
    kept: list[bytes] = []  # the assignment of a completed join not applied yet

    async def join_once() -> bytes:
        # a rejoin the consumer asked for because its metadata changed is not "needed" any
        # more once this join, as leader, has assigned that metadata: keep it needed until
        # the join is applied, or the next poll never applies it
        coordinator.rejoin_needed = True
        if kept:
            log.info("applying a group join that completed between two polls")
            return kept.pop()
        assignment = await join_and_sync()
        kept.append(assignment)
        return assignment

    async def on_complete(*args: Any, **kwargs: Any) -> Any:
        kept.clear()
        return await complete(*args, **kwargs)

    coordinator._do_join_and_sync_async = join_once
    coordinator._on_join_complete_async = on_complete
    return True
