"""The action engine's consumer loop: incidents from the incidents topic drive the engine.

Offsets are committed after a batch is acted on (every state is persisted before its side
effect, so a redelivered incident maps to the same actions and never runs one twice). A bus
error (a broker down, a rebalance) is logged and the loop goes on: a failed poll is retried,
a failed commit means a redelivery.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from pydantic import ValidationError

from actions.engine import ActionEngine
from analytics.store import StoreError, StoreUnavailable
from diagnosis.incidents import Incident
from ingest.bus import BusError, Consumer, Record, TopicPartition

log = logging.getLogger(__name__)
_BUS_RETRY_S = 1.0  # wait after a failed poll (a broker restarting, a coordinator moving)


def consume(
    engine: ActionEngine,
    consumer: Consumer,
    stop: threading.Event,
    poll_s: float,
    recheck_s: float = 10.0,
) -> int:
    """Handle incidents until stopped; commit offsets after each batch is acted on.

    Every `recheck_s` the steps waiting on the world (a job's next checkpoint) are checked
    again, between batches, so a long wait never holds up new incidents. With replicas
    (claims), every unfinished ladder is swept then, so a ladder whose replica died (or an
    approval given through the API) moves on here; the claims keep each move single.
    """
    handled = 0
    last_check = time.monotonic()
    while not stop.is_set():
        if time.monotonic() - last_check >= recheck_s:
            last_check = time.monotonic()
            try:
                engine.recover() if engine.claims is not None else engine.poll_waiting()
            except StoreError as exc:  # ClickHouse away: the waits are stored, check next time
                log.warning("act: waiting steps not checked: %s", exc)
        try:
            records = consumer.poll(100, poll_s)
        except BusError as exc:  # a broker down or the group moving: the client reconnects
            log.warning("act: bus: %s (polling again in %.0f s)", exc, _BUS_RETRY_S)
            stop.wait(_BUS_RETRY_S)
            continue
        latest, offsets = latest_revisions(records)
        for incident in latest.values():
            if not handle_retrying(engine, incident, stop):
                return handled  # stopped while the store was away: offsets stay uncommitted
            handled += 1
        if offsets:
            try:
                consumer.commit(offsets)
            except BusError as exc:  # redelivered: acting on an incident again is a no-op
                log.warning("act: offsets not committed (the incidents come again): %s", exc)
    return handled


def handle_retrying(
    engine: ActionEngine, incident: Incident, stop: threading.Event, max_wait_s: float = 10.0
) -> bool:
    """Act on an incident, retrying while the store is unavailable; False if stopped first.

    In a ClickHouse cluster a replica down or restarting refuses quorum writes for a while
    (codes 285, 286). A retry is a redelivery: states stored before each side effect and the
    step claims keep every step single.
    """
    wait_s = 0.5
    while not stop.is_set():
        try:
            engine.handle(incident)
            return True
        except StoreUnavailable as exc:
            reason = str(exc).splitlines()[0]
            log.warning(
                "act: store unavailable, %s again in %.1f s: %s", incident.id, wait_s, reason
            )
            stop.wait(wait_s)
            wait_s = min(wait_s * 2, max_wait_s)
    return False


def recover_retrying(
    engine: ActionEngine, stop: threading.Event, max_wait_s: float = 10.0
) -> list[str] | None:
    """Resume unfinished ladders, retrying while the store is unavailable; None if stopped.

    A replica started while a ClickHouse replica is down or catching up is refused quorum
    writes for a while (codes 285, 286): it waits, as it does for each incident, instead of
    exiting (which needed a manual restart).
    """
    wait_s = 0.5
    while not stop.is_set():
        try:
            return engine.recover()
        except StoreUnavailable as exc:
            reason = str(exc).splitlines()[0]
            log.warning("act: store unavailable, recovery again in %.1f s: %s", wait_s, reason)
            stop.wait(wait_s)
            wait_s = min(wait_s * 2, max_wait_s)
    return None


def latest_revisions(
    records: list[Record],
) -> tuple[dict[str, Incident], dict[TopicPartition, int]]:
    """Return the highest revision of each incident in a batch and the offsets to commit.

    An undecodable record is logged and passed over (its offset is committed with the rest).
    """
    latest: dict[str, Incident] = {}
    offsets: dict[TopicPartition, int] = {}
    for record in records:
        offsets[record.tp] = record.offset + 1
        try:
            incident = Incident.model_validate_json(record.value)
        except ValidationError as exc:
            log.error(
                "undecodable incident at %s@%d: %s",
                record.topic,
                record.offset,
                str(exc).splitlines()[0],
            )
            continue
        known = latest.get(incident.id)
        if known is None or incident.revision >= known.revision:
            latest[incident.id] = incident  # keep the highest revision
    return latest, offsets


def recover_and_consume(
    engine: ActionEngine,
    subscribe: Callable[[], Consumer],
    stop: threading.Event,
    poll_s: float,
    recheck_s: float = 10.0,
) -> int:
    """Resume unfinished ladders, then subscribe and consume incidents until stopped.

    The consumer joins its group only after the recovery (which may take a while), so the
    group never waits on a member that does not poll yet; it is closed on the way out.
    """
    resumed = recover_retrying(engine, stop)
    if resumed is None:
        return 0  # stopped while the store was away: the next start recovers
    log.info("act: resumed %d unfinished ladder(s)", len(resumed))
    consumer = subscribe()
    try:
        return consume(engine, consumer, stop, poll_s, recheck_s)
    finally:
        consumer.close()
