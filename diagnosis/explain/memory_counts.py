"""Judges of memory error counts: how many errors make a DIMM or a socket faulty.

The host rules (``rules_host.KERNEL_RULES``) match the lines; these decide from their numbers:
``mcelog --client``'s memory summary (read by the engine across its header and count lines),
a machine-check bank's raw status register, rasdaemon's and edac-util's per-DIMM counts, and a
monitor's or a trigger's line of corrected and uncorrected counts. One rule of thumb holds for
all: any uncorrected error is a fault; corrected errors are one only at or past mcelog's daily
threshold in a day's window, or ten times it with no window.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import gpu_hardware, host_hardware
from diagnosis.model import Action as A
from diagnosis.model import Severity as S

MCELOG_RULE = "host.mcelog_memory"
MCELOG_HEADER = re.compile(r"^\s*(?P<kind>un)?corrected memory errors:\s*$")
MCELOG_COUNT = re.compile(r"^\s*(?P<n>\d+) (?:(?P<total>total)|in \d+[smhd])\s*$")
MCELOG_CE_THRESHOLD = 100
"""mcelog.conf's default memory-ce-threshold (100 / 24h): corrected errors in one window
at or past it are a DIMM to replace; mcelog prints the window's count as ``N in 24h``."""


def mcelog_count(kind: str, m: re.Match[str]) -> Verdict | None:
    """Return a fault for one count line of `mcelog --client`'s memory summary, under its
    ``corrected memory errors:`` or ``uncorrected memory errors:`` header (`kind`), matched by
    MCELOG_COUNT: any uncorrected error, or corrected errors in one window at
    or past mcelog's default threshold. Totals of corrected errors since mcelog started are
    history, and a count below the threshold is a DIMM to watch, not a fault."""
    n = int(m["n"])
    if kind == "uncorrected":
        return host_hardware(S.CRITICAL, A.ISOLATE_NODE, 0.8) if n > 0 else None
    if m["total"] is None and n >= MCELOG_CE_THRESHOLD:
        return host_hardware(S.WARNING, A.MONITOR, 0.6)
    return None


_MC_VAL, _MC_UC = 1 << 63, 1 << 61
"""IA32_MCi_STATUS's VAL (the bank holds an error) and UC (uncorrected) bits (Intel SDM vol. 3,
15.3.2.2; AMD's MCA_STATUS has the same two)."""


def mc_status(m: re.Match[str]) -> Verdict | None:
    """Return a fault for a machine-check bank's status register printed raw (a macOS panic's
    ``IA32_MC3_STATUS=0xBE00...``, a BIOS or BMC dump): an error the bank holds, uncorrected
    when its UC bit is set; a bank without VAL holds nothing."""
    status = int(m["status"], 16)
    if not status & _MC_VAL:
        return None
    if status & _MC_UC:
        return host_hardware(S.CRITICAL, A.ISOLATE_NODE, 0.7)
    return host_hardware(S.WARNING, A.MONITOR, 0.5)


LIFETIME_CE_THRESHOLD = 10 * MCELOG_CE_THRESHOLD
"""Corrected errors counted with no window (since boot, since a database began): ten days'
worth of mcelog's daily threshold before a DIMM is called failing (117 over 14 months is
not)."""
_WINDOW = re.compile(r"\bin\s+24\s*h|\b(?:per|/)\s*(?:24\s*h|day)\b|\blast\s+24\s*h", re.IGNORECASE)
_GPU_LINE = re.compile(r"\bGPU\b", re.IGNORECASE)


def _counted(ce: int, ue: int, windowed: bool) -> Verdict | None:
    """Return the fault that memory error counts show: any uncorrected error; corrected ones
    at or past mcelog's daily threshold in a window of a day, or ten times it without one."""
    if ue > 0:
        return host_hardware(S.CRITICAL, A.ISOLATE_NODE, 0.7)
    if ce >= (MCELOG_CE_THRESHOLD if windowed else LIFETIME_CE_THRESHOLD):
        return host_hardware(S.WARNING, A.MONITOR, 0.55)
    return None


def dimm_summary(m: re.Match[str]) -> Verdict | None:
    """Return a fault for one DIMM's counts in rasdaemon's `ras-mc-ctl --summary` (``Corrected
    on DIMM Label(s): '...' location: ... errors: 1873``, since the database began), its
    `--error-count` table (a DIMM's label, CE, UE) or edac-util's (``csrow2: 3 Uncorrected
    Errors``)."""
    if m["ce_row"] is not None:
        return _counted(int(m["ce_row"]), int(m["ue_row"]), False)
    n, kind = int(m["n"] or m["n2"]), m["kind"] or m["kind2"]
    uncorrected = kind.lower().startswith("un")
    return _counted(0 if uncorrected else n, n if uncorrected else 0, False)


def error_counts(m: re.Match[str]) -> Verdict | None:
    """Return a fault for a line that counts a socket's or DIMM's corrected and uncorrected
    memory errors (``Socket 0, Correctable 19899, Uncorrectable 0 ... in 24h``, a trigger's or
    a monitor's); a GPU's ECC counts on the line are the GPU's (uncorrected: a GPU fault)."""
    line = m.string  # (a rule sees one record: a line)
    if _GPU_LINE.search(line):
        if int(m["uc"]) == 0:
            return None
        return gpu_hardware(S.ERROR, A.RESET_GPU, 0.6)
    return _counted(int(m["ce"]), int(m["uc"]), _WINDOW.search(line) is not None)
