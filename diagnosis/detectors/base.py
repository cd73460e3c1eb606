"""The interface every streaming detector implements."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from diagnosis.model import Finding
from ingest.schema import EventBase


class Detector(Protocol):
    """A per-job streaming detector: feed it events, ask it for findings."""

    job_id: str

    def observe(self, event: EventBase) -> None:
        """Take one event into the detector's bounded state (other jobs and kinds are ignored)."""

    def check(self, now: datetime) -> list[Finding]:
        """Return the findings that became true by `now` (each symptom episode reported once)."""
