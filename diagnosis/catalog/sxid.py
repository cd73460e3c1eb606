"""The NVSwitch SXid catalog: NVIDIA's class per code and TrainGuard's verdict for it.

Source: ``sxid_catalog.csv`` in this package lists every SXid in leptonai/gpud
``pkg/nvidia-query/sxid/sxid.go`` (commit 4446606e), which transcribes appendix D of NVIDIA's
Fabric Manager user guide (DU-09883-001 v1.3, October 2023): name, class (``non_fatal`` D.4,
``fatal`` D.5 "potentially fatal", ``always_fatal`` D.6, ``notable`` D.7), gpud's event type and
repair actions, and the guide's impact and recovery text.

TrainGuard's choice, one rule for the whole family (the line's own "Fatal"/"Non-fatal" word wins
over the catalog class, since the driver knows what happened on that port):

- fatal or always fatal: the switch port (or the whole fabric) is down and NVLink traffic
  through it hangs -> network/switch, critical, reboot the node (resets GPUs and switches);
- non-fatal that the guide says stalls traffic (gpud repair REBOOT_SYSTEM: 11004, 12028, 19084)
  -> network/switch, error, reboot the node;
- other non-fatal (single-bit ECC corrected, replay, link flap on shutdown) -> warning, monitor;
- ``22013`` (the guide: "can be safely ignored") -> benign;
- unknown codes -> warning, capture diagnostics (a person would look it up).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from diagnosis.catalog.model import Verdict
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity

CSV_PATH = Path(__file__).with_name("sxid_catalog.csv")
CLASSES = ("non_fatal", "fatal", "always_fatal", "notable")
IGNORABLE = frozenset({22013})
_FATAL_CLASSES = frozenset({"fatal", "always_fatal"})


@dataclass(frozen=True)
class SXidEntry:
    """One row of sxid_catalog.csv."""

    sxid: int
    name: str
    klass: str
    gpud_event_type: str
    gpud_repair_actions: tuple[str, ...]
    impact: str
    recovery: str

    @property
    def stalls_traffic(self) -> bool:
        """Return whether the guide/gpud call for a reset even when the class is non-fatal."""
        return "REBOOT_SYSTEM" in self.gpud_repair_actions


def _switch(severity: Severity, action: Action, confidence: float) -> Verdict:
    """Return a network verdict pointing at the NVSwitch."""
    return Verdict(
        Category.NETWORK, Blame.INFRASTRUCTURE, ComponentKind.SWITCH, severity, action, confidence
    )


FATAL = _switch(Severity.CRITICAL, Action.REBOOT_NODE, 0.85)
STALLING = _switch(Severity.ERROR, Action.REBOOT_NODE, 0.75)
NON_FATAL = _switch(Severity.WARNING, Action.MONITOR, 0.6)
UNKNOWN_SXID = _switch(Severity.WARNING, Action.CAPTURE_DIAGNOSTICS, 0.5)
IGNORED = Verdict(
    Category.BENIGN, Blame.UNKNOWN, ComponentKind.SWITCH, Severity.INFO, Action.NONE, 0.7
)


@cache
def sxid_entries() -> dict[int, SXidEntry]:
    """Return the catalog by code; raise ValueError on a malformed row."""
    out: dict[int, SXidEntry] = {}
    with CSV_PATH.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["class"] not in CLASSES:
                raise ValueError(f"SXid {row['sxid']}: unknown class {row['class']!r}")
            code = int(row["sxid"])
            if code in out:
                raise ValueError(f"SXid {code} listed twice")
            out[code] = SXidEntry(
                sxid=code,
                name=row["name"],
                klass=row["class"],
                gpud_event_type=row["gpud_event_type"],
                gpud_repair_actions=tuple(a for a in row["gpud_repair_actions"].split(";") if a),
                impact=row["impact"],
                recovery=row["recovery"],
            )
    return out


def sxid_entry(code: int) -> SXidEntry | None:
    """Return the catalog entry of `code`, or None when the guide does not list it."""
    return sxid_entries().get(code)


def sxid_verdict(code: int, said: str | None = None) -> Verdict:
    """Return the verdict for SXid `code`; `said` is the line's own "fatal"/"non-fatal" word."""
    if code in IGNORABLE:
        return IGNORED
    entry = sxid_entry(code)
    word = (said or "").lower().replace("-", "_")
    if word == "fatal" or (not word and entry is not None and entry.klass in _FATAL_CLASSES):
        return FATAL
    if entry is None:
        return NON_FATAL if word == "non_fatal" else UNKNOWN_SXID
    if entry.klass == "non_fatal" and entry.stalls_traffic:
        return STALLING
    if entry.klass == "notable":
        return replace(NON_FATAL, action=Action.CAPTURE_DIAGNOSTICS)
    return NON_FATAL
