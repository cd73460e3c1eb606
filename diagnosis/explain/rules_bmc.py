"""A BMC's system event log: ipmitool's SEL listing (a fault's or a warning's event, asserted)
and a threshold sensor's event where the listing has no assertion column (a BMC's web page).

Read from ipmitool's sensor_specific_event_types[] and its threshold event strings; the rules
sit in rules_host's KERNEL_RULES in their old place (precedence unchanged). A deasserted event
cleared and gives no finding.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, host_hardware, rule
from diagnosis.model import Action as A
from diagnosis.model import Severity as S

_SEL_SENSOR = (
    r"\|\s*(?:Memory|Processor|Critical Interrupt|Power Supply|System Event|Temperature"
    r"|System Firmware(?: Error| Progress)?)"
    r"(?: #0x[0-9a-f]{2})?[^|\n]{0,40}"
)
_SEL_FAULT = (
    r"Uncorrectable ECC|Parity|Memory Scrub Failed|Memory Device Disabled|Critical Overtemperature"
    r"|IERR|Thermal Trip|FRB[123]/[^|\n]+|SM BIOS Uncorrectable CPU-complex Error"
    r"|Uncorrectable machine check exception|Bus Timeout|I/O Channel check NMI|PCI PERR|PCI SERR"
    r"|Bus Uncorrectable error|Fatal NMI|Bus Fatal Error|Failure detected|Power Supply AC lost"
    r"|AC lost or out-of-range|Upper (?:Critical|Non-recoverable) going high"
    r"|Undetermined system hardware failure"
    # the firmware's POST errors (System Firmware Progress, offset 0: `System Firmware Error
    # #0x11 | No usable system memory`)
    r"|No (?:usable )?system memory(?: installed)?|Unrecoverable system-board failure"
    r"|BIOS corruption detected|CPU voltage mismatch|CPU speed matching failure"
    # a severity sensor's state (ipmitool's generic event strings: `Processor CPU Machine Chk |
    # Transition to Non-recoverable`)
    r"|Transition to (?i:Non-recoverable|Critical)(?: from [\w -]+)?"
)
_SEL_WARNING = (
    r"Correctable ECC(?: logging limit reached)?|Correctable machine check error|Throttled"
    r"|Predictive failure|Bus Correctable error|Bus Degraded"
    r"|Transition to (?i:Non-criti?cal) from OK"
)


def _sensor_state(m: re.Match[str]) -> Verdict:
    """A sensor read past its critical or non-recoverable threshold is an error."""
    return host_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.6)


def _threshold(m: re.Match[str]) -> Verdict:
    """A sensor past its warning threshold is a warning; past its critical one, an error."""
    if m["kind"].lower() == "non-critical":
        return host_hardware(S.WARNING, A.MONITOR, 0.5)
    return host_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.65)


BMC_RULES: tuple[Rule, ...] = (
    rule(
        "host.bmc_critical_fault",
        # HPE iLO's Integrated Management Log (`Server Critical Fault (Service Information:
        # Runtime Fault, System Board, P12V Main/AUX Regulator 1 (04h))`)
        r"\bServer Critical Fault \(Service Information:",
        ("server critical fault",),
        "The BMC logged a critical fault of the server's board (a regulator, a processor, the "
        "memory's power): the node crashes or will; service the part the entry names.",
        host_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "host.bmc_dimm_failed",
        # IBM's IMM event log (`Scrub Failure for "Memory Device 8" on subsystem "System
        # Memory"`, `"Memory Device 8" disabled on subsystem "System Memory"`)
        r"\bScrub Failure for \"Memory Device \d+\"|\"Memory Device \d+\" disabled on subsystem\b",
        ("scrub failure", "disabled on subsystem"),
        "The BMC logged a DIMM that failed its scrub or was disabled: the node runs with less "
        "memory or fails to train it at boot; replace the DIMM.",
        host_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "host.bmc_fault",
        # a BMC's system event log as `ipmitool sel list` prints it (ipmitool's
        # sensor_specific_event_types[]): a fault's event, asserted (a deasserted one cleared)
        rf"{_SEL_SENSOR}\s*\|\s*(?:{_SEL_FAULT})(?:\s*\([^)|\n]*\))?\s*\|\s*Asserted\b",
        ("asserted",),
        "The node's BMC logged a hardware fault (ipmitool's SEL: an uncorrectable ECC or parity "
        "error, a disabled DIMM, a processor IERR, thermal trip or uncorrectable machine check, "
        "a PCI SERR/PERR or fatal NMI, a failed power supply or lost AC, a temperature past its "
        "upper critical threshold, an undetermined hardware failure): inspect the node.",
        host_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.75),
    ),
    rule(
        "host.bmc_warning",
        rf"{_SEL_SENSOR}\s*\|\s*(?:{_SEL_WARNING})(?:\s*\([^)|\n]*\))?\s*\|\s*Asserted\b",
        ("asserted",),
        "The node's BMC logged a warning (ipmitool's SEL: correctable ECC or its logging limit, a "
        "correctable machine check, a throttled processor, a predictive power-supply failure, a "
        "correctable or degraded bus): the part is degrading; watch it.",
        host_hardware(S.WARNING, A.MONITOR, 0.6),
    ),
    rule(
        "host.bmc_threshold",
        # a threshold sensor's event where the SEL's listing has no assertion column (a BMC's web
        # page: `Temperature sensor #0x10 | Upper Non-critical going high`); a deasserted one
        # cleared
        # (also a BMC's CSV export, its fields dashed: `14,2024/07/04 07:09:11,FANA ,Fan,Lower
        # Non-Recoverable - Going Low - Assertion`)
        r"(?:^|[|,])\s*(?:Temperature|Voltage|Fan|Current)\b[^|\n]{0,40}[|,]\s*"
        r"(?:Upper|Lower) (?P<kind>Non-critical|Critical|Non-recoverable)(?:\s+-)? going "
        r"(?:high|low)\b"
        r"(?![^\n]*\bDe-?assert(?:ed|ion)\b)",
        ("going high", "going low"),
        "The BMC logged a temperature, voltage, fan or current sensor past a threshold: past a "
        "warning one (non-critical) the part runs hot or out of range, watch it; past a critical "
        "one, inspect the node.",
        judge=_threshold,
        flags=re.IGNORECASE | re.MULTILINE,
    ),
    rule(
        "host.bmc_sensor_critical",
        # `ipmitool sdr list`'s row: a sensor, its reading with a unit, its state past a critical
        # (`cr`) or non-recoverable (`nr`) threshold (`Fan3B | 0 RPM | cr`); `ok`, `nc` and `ns`
        # (no reading) are not read
        r"^\s*[^|\n]{1,40}\|\s*-?\d+(?:\.\d+)?\s+(?:RPM|degrees\s+C|Volts|Amps|Watts)\s*\|\s*"
        r"(?:cr|nr)\s*$"
        # `ipmitool sensor`'s row (`Fan3B | 0.000 | RPM | cr | na | ...`) and `sdr elist`'s
        # (`FAN 1 | 41h | cr | 29.1 | 0 RPM`)
        r"|^\s*[^|\n]{1,40}\|\s*-?\d+(?:\.\d+)?\s*\|\s*(?:RPM|degrees\s+C|Volts|Amps|Watts)\s*\|\s*"
        r"(?:cr|nr)\s*\|"
        r"|^\s*[^|\n]{1,40}\|\s*[0-9a-fA-F]{2}h\s*\|\s*(?:cr|nr)\s*\|[^|\n]*\|\s*-?\d+(?:\.\d+)?\s+"
        r"(?:RPM|degrees\s+C|Volts|Amps|Watts)\b",
        ("rpm", "degrees", "volts", "amps", "watts"),
        "The BMC reads a fan, temperature, voltage, current or power sensor past its critical or "
        "non-recoverable threshold (`ipmitool sdr`'s `cr`, `nr`): a dead fan, an overheating or "
        "out-of-range part; inspect the node.",
        judge=_sensor_state,
        flags=re.MULTILINE,
    ),
)
