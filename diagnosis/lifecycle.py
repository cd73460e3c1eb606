"""Incident lifecycle: open -> mitigating -> resolved, or a false alarm, and who moved it."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from diagnosis.model import IncidentStatus

_OPEN, _MITIGATING = IncidentStatus.OPEN, IncidentStatus.MITIGATING
_RESOLVED, _FALSE = IncidentStatus.RESOLVED, IncidentStatus.FALSE_ALARM

# A mitigation that fails puts the incident back to open; resolved and false alarm are final
# (a recurrence is a new incident, so the action engine can escalate on repetition).
ALLOWED: dict[IncidentStatus, frozenset[IncidentStatus]] = {
    _OPEN: frozenset({_MITIGATING, _RESOLVED, _FALSE}),
    _MITIGATING: frozenset({_OPEN, _RESOLVED, _FALSE}),
    _RESOLVED: frozenset(),
    _FALSE: frozenset(),
}


class LifecycleError(ValueError):
    """A status change the lifecycle does not allow."""


class Transition(BaseModel):
    """One status change of an incident, as audited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    incident_id: str
    status: IncidentStatus = Field(description="The status entered.")
    reason: str = Field(min_length=1, max_length=2000, description="Why, in the actor's words.")
    actor: str = Field(min_length=1, max_length=200, description="Who: a user or a component.")
    at: AwareDatetime


def check_transition(current: IncidentStatus, to: IncidentStatus) -> None:
    """Raise LifecycleError unless `current` may move to `to`."""
    if to not in ALLOWED[current]:
        allowed = ", ".join(sorted(s.value for s in ALLOWED[current])) or "none (final)"
        raise LifecycleError(
            f"an incident that is {current.value} cannot become {to.value}; allowed: {allowed}"
        )


def is_final(status: IncidentStatus) -> bool:
    """Return whether nothing follows this status."""
    return not ALLOWED[status]
