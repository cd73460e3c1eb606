"""Incident revisions out of the streaming worker: stored first, then sent on the bus.

A new incident is stored and sent at once; later revisions of one incident at most once per
`interval_s` (the newest one wins). A revision is marked sent only after both the store and
the bus took it, so a store or bus error keeps it for the next try and never loses it.
Status changes made elsewhere (resolved, false alarm) are read back, carried on the next
revisions and close the incident in the diagnosis, so a recurrence opens a new incident
instead of reviving a closed one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from analytics.store import Store, StoreError
from diagnosis.clusters import ClusterEngines
from diagnosis.incident_store import latest_statuses, save_incidents, save_states
from diagnosis.incidents import Incident
from diagnosis.lifecycle import is_final
from diagnosis.model import IncidentStatus
from ingest.bus import BusError, Producer

log = logging.getLogger(__name__)
_OPEN = IncidentStatus.OPEN


class PublishCounters(Protocol):
    """The counters a publisher adds to (the worker's, shown in logs and /metrics)."""

    incidents: int  # new incidents seen
    published: int  # revisions stored and sent
    store_errors: int
    bus_errors: int


class IncidentPublisher:
    """Stores and sends the revisions a worker's diagnosis produces; tracks their status."""

    def __init__(
        self,
        store: Store,
        producer: Producer,
        topic: str,
        interval_s: float,
        stats: PublishCounters,
        monotonic: Callable[[], float] = time.monotonic,
        observe: Callable[[float], None] | None = None,
    ) -> None:
        self.store, self.producer, self.topic = store, producer, topic
        self.interval_s = interval_s
        self.stats = stats
        self._monotonic = monotonic
        self._observe = observe
        self._published: dict[str, tuple[float, int]] = {}  # id -> (when, revision)
        self._unpublished: dict[str, Incident] = {}
        self._status: dict[str, IncidentStatus] = {}
        self._failing = False  # the last attempt to store failed
        self._unstored: set[str] = set()  # new incidents no revision of which is stored yet
        self._refused = 0  # store attempts refused in a row (logged 1st, 2nd, 4th, ...)

    def settled(self) -> bool:
        """Whether every incident is stored (a later revision may wait for its interval): the
        worker commits no offset past evidence whose incident a crash would lose. The store,
        not the bus, is what a restarted worker restores from."""
        return not self._failing and not self._unstored

    def forget(self) -> None:
        """Drop what is known of every incident (a rebuild follows, `restored` refills it)."""
        self._published.clear()
        self._unpublished.clear()
        self._status.clear()
        self._failing = False
        self._unstored.clear()

    def restored(self, incident_id: str, revision: int, status: IncidentStatus) -> None:
        """Note an incident taken back from the store (already stored and sent)."""
        self._published[incident_id] = (self._monotonic(), revision)
        self._status[incident_id] = status

    def publish(self, engines: ClusterEngines, force: bool = False) -> None:
        """Store and send new incidents now, updated ones when their interval has passed."""
        for incident in engines.drain_updates():
            if incident.id not in self._published:
                self.stats.incidents += 1
                self._unstored.add(incident.id)
            self._unpublished[incident.id] = incident
        if not self._unpublished:
            return
        now = self._monotonic()
        due = [
            inc
            for inc in self._unpublished.values()
            if force
            or inc.id not in self._published
            or now - self._published[inc.id][0] >= self.interval_s
        ]
        if not due:
            return
        due = [i.model_copy(update={"status": self._status.get(i.id, i.status)}) for i in due]
        started = time.perf_counter()
        try:
            save_states(self.store, engines.states(i.id for i in due))
            save_incidents(self.store, due)
        except StoreError as exc:
            self.stats.store_errors += 1
            self._failing = True
            self._refused += 1
            if worth_logging(self._refused):
                log.warning(
                    "incidents not stored yet (kept, retried; %d refusal(s) in a row): %s",
                    self._refused,
                    exc,
                )
            return
        self._failing, self._refused = False, 0
        self._unstored -= {i.id for i in due}
        try:
            for inc in due:
                self.producer.send_raw(self.topic, inc.id.encode(), _wire(inc))
            self.producer.flush()
        except BusError as exc:
            self.stats.bus_errors += 1
            log.warning("incidents not published yet (kept, retried): %s", exc)
            return
        if self._observe is not None:
            self._observe(time.perf_counter() - started)
        for inc in due:
            first = inc.id not in self._published  # new here: not published or restored before
            self._published[inc.id] = (now, inc.revision)
            del self._unpublished[inc.id]
            self.stats.published += 1
            if first:
                log.info("incident %s r%d: %s [%s]", inc.id, inc.revision, inc.summary, _top(inc))
            else:
                log.debug("incident %s r%d: %s", inc.id, inc.revision, inc.summary)

    def read_statuses(self, engines: ClusterEngines) -> None:
        """Take the statuses set elsewhere; close the incidents that reached a final one."""
        live = [i for i in self._published if not is_final(self._status.get(i, _OPEN))]
        if not live:
            return
        try:
            statuses = latest_statuses(self.store, live)
        except StoreError as exc:
            self.stats.store_errors += 1
            log.warning("incident statuses not readable: %s", exc)
            return
        for incident_id, (status, _reason) in statuses.items():
            self._status[incident_id] = status
            if is_final(status):
                engines.close(incident_id)


def _wire(incident: Incident) -> bytes:
    return incident.model_dump_json().encode()


def worth_logging(count: int) -> bool:
    """Return whether the count-th occurrence of a repeated warning is logged: the 1st, 2nd,
    4th, 8th, ... (a flood costs a few lines, and the count says how big it was)."""
    return count & (count - 1) == 0


def _top(incident: Incident) -> str:
    """Return where the incident's top suspect is, in a few words (for the log)."""
    if not incident.suspects:
        return "no suspect"
    top = incident.suspects[0]
    where = (("node", top.node), ("gpu", top.gpu), ("nic", top.nic), ("rank", top.rank))
    named = " ".join(f"{name} {value}" for name, value in where if value is not None)
    return f"top suspect: {top.component.value} {named}".rstrip()
