"""Incidents as Alertmanager alerts: posted while open, resolved when they close.

Alertmanager keeps an alert until its `endsAt`. Like Prometheus, `AlertSync` posts every open
incident again each interval with `endsAt` four intervals ahead, so an open incident never
expires while TrainGuard runs, and its alert resolves by itself if TrainGuard stops. A closed
incident (resolved or false alarm) is posted with `endsAt` = when it closed for
`resolved_retention_s` after, so a post lost while Alertmanager was away is made good.
The state is the incident store alone: a restart posts the same alerts again (Alertmanager
merges them by their labels).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from actions.webhooks.events import console_link
from actions.webhooks.transport import Poster
from analytics.incident_tables import INCIDENT_TRANSITIONS, INCIDENTS
from analytics.store import Store, StoreError
from diagnosis.incident_store import load_incidents
from diagnosis.incidents import Incident
from diagnosis.model import IncidentStatus

log = logging.getLogger(__name__)
ALERTNAME = "TrainGuardIncident"
DEFAULT_CLUSTER = "default"
RESEND_FACTOR = 4  # Prometheus: endsAt = now + 4 x max(resend delay, evaluation interval)
POST_BATCH = 500
DESCRIPTION_MAX = 4000
_CLOSED = (IncidentStatus.RESOLVED.value, IncidentStatus.FALSE_ALARM.value)


class AlertmanagerError(RuntimeError):
    """Alertmanager did not take a post."""


def alert_labels(incident: Incident) -> dict[str, str]:
    """Return an incident's alert labels (node, gpu and job only where known)."""
    top = incident.suspects[0] if incident.suspects else None
    labels = {
        "alertname": ALERTNAME,
        "severity": incident.severity.value,
        "category": incident.category.value,
        "cluster": str(getattr(incident, "cluster", None) or DEFAULT_CLUSTER),
        "incident_id": incident.id,
    }
    if top is not None and top.node:
        labels["node"] = top.node
    if top is not None and top.gpu is not None:
        labels["gpu"] = str(top.gpu)
    if incident.job:
        labels["job"] = incident.job
    return labels


def _description(incident: Incident) -> str:
    top = incident.suspects[0] if incident.suspects else None
    lines = [f"{incident.blame.value} {incident.category.value}, status {incident.status.value}"]
    if top is not None:
        lines.append(f"Suspect: {top.explanation}")
    lines.append(f"Recommended: {incident.action.value}")
    lines += incident.evidence[:5]
    text = "\n".join(lines)
    return text if len(text) <= DESCRIPTION_MAX else text[: DESCRIPTION_MAX - 1] + "…"


def incident_alert(
    incident: Incident,
    closed_at: datetime | None,
    now: datetime,
    interval_s: float,
    console_url: str | None = None,
) -> dict[str, Any]:
    """Return the Alertmanager alert of an incident (API v2 `postableAlert`)."""
    starts = incident.detected_at
    ends = (
        closed_at if closed_at is not None else now + timedelta(seconds=RESEND_FACTOR * interval_s)
    )
    annotations = {"summary": incident.summary, "description": _description(incident)}
    link = console_link(console_url, incident.id)
    alert: dict[str, Any] = {
        "labels": alert_labels(incident),
        "annotations": annotations,
        "startsAt": starts.isoformat(),
        "endsAt": max(ends, starts).isoformat(),  # Alertmanager refuses an end before the start
    }
    if link is not None:
        annotations["console"] = link
        alert["generatorURL"] = link
    return alert


def alerting_incidents(
    store: Store, since: datetime, limit: int = 10_000
) -> list[tuple[Incident, datetime | None]]:
    """Return incidents still open, and those closed since `since` with when they closed."""
    db = store.database
    frame = store.query_df(
        f"SELECT id, status, toUInt32(closed) AS closed_s, closed_us FROM ("
        f"SELECT DISTINCT id FROM `{db}`.`{INCIDENTS.name}`) AS known ANY LEFT JOIN ("
        f"SELECT id, argMax(status, (at, at_us)) AS status, argMax(at, (at, at_us)) AS closed, "
        f"argMax(at_us, (at, at_us)) AS closed_us FROM `{db}`.`{INCIDENT_TRANSITIONS.name}` "
        f"GROUP BY id) AS moved USING id "
        f"WHERE status NOT IN %(closed)s OR closed >= toDateTime(%(since)s) LIMIT %(limit)s",
        {"closed": _CLOSED, "since": int(since.timestamp()), "limit": int(limit)},
    )
    closed: dict[str, datetime | None] = {}
    for id_, status, closed_s, closed_us in frame.itertuples(index=False):
        at = datetime.fromtimestamp(int(closed_s), UTC).replace(microsecond=int(closed_us))
        closed[str(id_)] = at if str(status) in _CLOSED else None
    ids = list(closed)
    found: list[tuple[Incident, datetime | None]] = []
    for n in range(0, len(ids), 1000):
        for incident in load_incidents(store, ids=ids[n : n + 1000], limit=1000):
            found.append((incident, closed[incident.id]))
    return found


@dataclass(frozen=True)
class Auth:
    """How to authenticate to Alertmanager: files re-read on every post (rotated secrets)."""

    username: str | None = None
    password_file: Path | None = None
    bearer_token_file: Path | None = None

    def header(self) -> SecretStr | None:
        """Return the Authorization header value, or None without credentials."""
        if self.bearer_token_file is not None:
            return SecretStr(f"Bearer {self.bearer_token_file.read_text().strip()}")
        if self.username and self.password_file is not None:
            pair = f"{self.username}:{self.password_file.read_text().rstrip(chr(10))}"
            return SecretStr(f"Basic {base64.b64encode(pair.encode()).decode()}")
        return None


class AlertmanagerClient:
    """Posts alerts to one Alertmanager's API v2 (proxy variables honoured, no redirects)."""

    def __init__(self, url: str, auth: Auth | None = None, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/") + "/api/v2/alerts"
        self.auth = auth or Auth()
        self.poster = Poster(timeout_s)

    def post(self, alerts: list[dict[str, Any]]) -> None:
        """Post alerts in batches; raise AlertmanagerError on the first batch not taken."""
        headers = {"Content-Type": "application/json", "User-Agent": "trainguard-alerts/1"}
        try:
            secret = self.auth.header()
        except OSError as exc:
            raise AlertmanagerError(f"credentials file unreadable: {exc.strerror}") from None
        if secret is not None:
            headers["Authorization"] = secret.get_secret_value()
        for n in range(0, len(alerts), POST_BATCH):
            body = json.dumps(alerts[n : n + POST_BATCH]).encode()
            answer = self.poster.post(self.url, body, headers)
            if not answer.ok:
                raise AlertmanagerError(f"{len(alerts)} alert(s) not taken: {answer.error}")

    def close(self) -> None:
        """Close the HTTP client."""
        self.poster.close()


class AlertSync:
    """Posts every open and recently closed incident to Alertmanager, once or every interval."""

    def __init__(
        self,
        store: Store,
        client: AlertmanagerClient,
        interval_s: float = 60.0,
        resolved_retention_s: float = 900.0,
        console_url: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store, self.client, self.clock = store, client, clock
        self.interval_s, self.retention_s = interval_s, resolved_retention_s
        self.console_url = console_url

    def sync(self) -> int:
        """Post the alerts now; return how many were posted."""
        now = self.clock()
        found = alerting_incidents(self.store, now - timedelta(seconds=self.retention_s))
        alerts = [
            incident_alert(i, closed, now, self.interval_s, self.console_url) for i, closed in found
        ]
        if alerts:
            self.client.post(alerts)
        return len(alerts)

    def run(self, stop: threading.Event) -> None:
        """Sync every interval until stopped; a failed sync is logged and tried next time."""
        while not stop.is_set():
            try:
                posted = self.sync()
                log.debug("alertmanager: %d alert(s) posted", posted)
            except (AlertmanagerError, StoreError) as exc:
                log.warning(
                    "alertmanager: alerts not posted (next try in %.0fs): %s", self.interval_s, exc
                )
            stop.wait(self.interval_s)
