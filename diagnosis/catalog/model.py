"""Types of the Xid catalog: what NVIDIA and gpud say, and what TrainGuard decides."""

from __future__ import annotations

from dataclasses import dataclass

from diagnosis.model import Action, Blame, Category, ComponentKind, Severity


@dataclass(frozen=True)
class XidSource:
    """One row of xid_catalog.csv: NVIDIA's catalog and leptonai/gpud's view of one Xid."""

    xid: int
    mnemonic: str
    nvidia_description: str
    nvidia_immediate_action: str
    nvidia_investigatory_action: str
    gpud_description: str
    gpud_repair_actions: str
    gpud_event_type: str


@dataclass(frozen=True)
class Verdict:
    """TrainGuard's reading of a symptom: category, blame, level, urgency and next step."""

    category: Category
    blame: Blame
    component: ComponentKind | None
    severity: Severity
    action: Action
    confidence: float


@dataclass(frozen=True)
class XidPolicy:
    """TrainGuard's documented choice for one Xid code, with the reason."""

    verdict: Verdict
    why: str


@dataclass(frozen=True)
class XidEntry:
    """A catalog entry: the sources' text and TrainGuard's policy for one Xid code."""

    source: XidSource
    policy: XidPolicy

    @property
    def xid(self) -> int:
        """Return the Xid code."""
        return self.source.xid

    @property
    def mnemonic(self) -> str:
        """Return NVIDIA's mnemonic (empty when only gpud lists the code)."""
        return self.source.mnemonic
