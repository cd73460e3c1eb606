"""Reads of the REST API's audit of writes (`api_audit`); the API writes it (api/context.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from analytics.api_tables import API_AUDIT
from analytics.store import Store


@dataclass(frozen=True)
class AuditedWrite:
    """One audited API write to a target."""

    at: datetime
    actor: str
    detail: str


def writes_to(store: Store, target: str, path: str) -> list[AuditedWrite]:
    """Return the audited writes of one kind (`path`: acknowledge...) to a target, oldest first."""
    frame = store.query_df(
        f"SELECT toUInt32(ts) AS t, ts_us, actor, detail FROM `{store.database}`."
        f"`{API_AUDIT.name}` WHERE target = %(id)s AND path = %(path)s ORDER BY ts, ts_us",
        {"id": target, "path": path},
    )
    return [
        AuditedWrite(
            at=datetime.fromtimestamp(int(t), UTC).replace(microsecond=int(us)),
            actor=str(actor),
            detail=str(detail),
        )
        for t, us, actor, detail in frame.itertuples(index=False)
    ]
