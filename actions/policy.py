"""Declarative policies: rules map an incident to an escalation ladder of actions.

A policy is YAML (see actions/policies/default.yaml). Rules are tried in order and the first
that matches wins, so an escalation (the same fault again after a reboot) is written as a
rule above the rule it escalates. Parsing is strict: unknown fields, bad kinds and bad values
fail with the file, line and field named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from actions.model import ActionKind, Target
from diagnosis.incidents import Incident
from diagnosis.model import Blame, Category, ComponentKind, Suspect

DEFAULT_POLICY = Path(__file__).parent / "policies" / "default.yaml"


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the line and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class History(_Strict):
    """What the component's recent history must show for a rule to match."""

    within_s: float = Field(gt=0, description="Look back this far.")
    min_occurrences: int = Field(
        1, ge=1, description="Incidents on the component in the window (this one included)."
    )
    after: ActionKind | None = Field(
        None, description="Only if this action was done on the component in the window."
    )


class Match(_Strict):
    """Which incidents a rule takes."""

    categories: list[Category] = Field(min_length=1)
    blame: list[Blame] = Field(default_factory=lambda: list(Blame))
    components: list[ComponentKind] = Field(default_factory=lambda: list(ComponentKind))
    min_score: float = Field(0.0, ge=0, le=1, description="Top suspect's score at least this.")
    history: History | None = None
    job: bool | None = Field(
        None, description="true: only incidents naming a job; false: only those naming none."
    )


class Step(_Strict):
    """One rung of a ladder."""

    kind: ActionKind
    timeout_s: float = Field(600.0, gt=0, le=86_400, description="Phase timeout.")
    optional: bool = Field(False, description="A failure is noted but does not escalate.")
    params: dict[str, Any] = Field(default_factory=dict)


class Rule(_Strict):
    """A named match and the ladder it runs."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    description: str = ""
    match: Match
    ladder: list[Step] = Field(min_length=1)
    final: bool = Field(False, description="No automatic return to service (e.g. inspection).")

    @field_validator("ladder", mode="before")
    @classmethod
    def _short_steps(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"kind": v} if isinstance(v, str) else v for v in value]
        return value


class Policy(_Strict):
    """A versioned list of rules."""

    version: int = Field(ge=1, le=1)
    rules: list[Rule] = Field(min_length=1)

    @field_validator("rules")
    @classmethod
    def _unique_names(cls, rules: list[Rule]) -> list[Rule]:
        names = [r.name for r in rules]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate rule name(s): {', '.join(dupes)}")
        return rules


@dataclass(frozen=True)
class HistoryView:
    """A component's recent history, as the engine read it from the audit."""

    occurrences: int
    done_kinds: frozenset[ActionKind]


HistoryLookup = Callable[[str, float], HistoryView]


@dataclass(frozen=True)
class Selection:
    """The rule an incident matched, the suspect acted on and its history key."""

    rule: Rule
    suspect: Suspect | None
    target: Target
    component_key: str


def component_key(incident: Incident, suspect: Suspect | None) -> str:
    """Return the history key of what an incident blames (a GPU, a NIC, a node, a job)."""
    if suspect is None or suspect.component == ComponentKind.JOB or suspect.node is None:
        return f"job:{incident.job or incident.id}"
    if suspect.component == ComponentKind.GPU and suspect.gpu is not None:
        return f"gpu:{suspect.node}:{suspect.gpu}"
    if suspect.component == ComponentKind.NIC and suspect.nic:
        return f"nic:{suspect.node}:{suspect.nic}"
    if suspect.component == ComponentKind.SWITCH and suspect.switch:
        return f"switch:{suspect.switch}"
    return f"node:{suspect.node}"


def _matches(rule: Rule, incident: Incident, top: Suspect | None, hist: HistoryLookup) -> bool:
    m = rule.match
    if incident.category not in m.categories or incident.blame not in m.blame:
        return False
    if m.job is not None and m.job != bool(incident.job):
        return False
    component = top.component if top is not None else ComponentKind.JOB
    if component not in m.components or (top.score if top else 0.0) < m.min_score:
        return False
    if m.history is None:
        return True
    view = hist(component_key(incident, top), m.history.within_s)
    seen = max(view.occurrences, incident.findings)
    if seen < m.history.min_occurrences:
        return False
    return m.history.after is None or m.history.after in view.done_kinds


def select(policy: Policy, incident: Incident, hist: HistoryLookup) -> Selection | None:
    """Return the first rule matching an incident (acting on its top suspect only), or None."""
    top = incident.suspects[0] if incident.suspects else None
    for rule in policy.rules:
        if _matches(rule, incident, top, hist):
            target = Target(
                node=top.node if top else None,
                gpu=top.gpu if top else None,
                nic=top.nic if top else None,
                switch=top.switch if top else None,
                job=incident.job,
            )
            return Selection(rule, top, target, component_key(incident, top))
    return None


def _line_of(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """Return the 1-based line of the deepest YAML node along a pydantic error location."""
    node, line = root, (root.start_mark.line + 1) if root is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = [(k, v) for k, v in node.value if getattr(k, "value", None) == part]
            if not found:
                break
            key, node = found[0]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        elif isinstance(part, str) and not part[:1].islower():
            continue  # a union branch name in the location, not a field
        else:
            break
    return line


def parse_policy(text: str, source: str = "<policy>") -> Policy:
    """Parse and validate policy YAML; raise PolicyError naming the line and field."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"{source}: not valid YAML: {exc}") from exc
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            line = _line_of(root, loc)
            field = ".".join(str(p) for p in loc) or "(top level)"
            lines.append(f"{source}:{line or '?'}: {field}: {err['msg']}")
        raise PolicyError("invalid policy:\n" + "\n".join(lines)) from exc


def load_policy(path: Path = DEFAULT_POLICY) -> Policy:
    """Read a policy file; raise PolicyError."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise PolicyError(f"cannot read policy {path}: {exc}") from exc
    return parse_policy(text, str(path))
