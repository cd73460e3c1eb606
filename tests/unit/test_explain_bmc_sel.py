"""A BMC's system event log as `ipmitool sel list` prints it (issue 21, "whole families, not
lines"): the event strings of ipmitool's sensor_specific_event_types[] and
generic_event_types[] (include/ipmitool/ipmi_sel.h), in its line format
(lib/ipmi_sel.c: id | date | time | sensor | event | Asserted/Deasserted).

The lines are built from those strings; a deasserted event (the condition cleared), presence and
boot events are the negative controls.
"""

from __future__ import annotations

import pytest

from diagnosis.explain.engine import explain
from diagnosis.model import Category, Severity
from tests.explain_helpers import alarms


def _sel(sensor: str, event: str, direction: str = "Asserted") -> str:
    return f"   1 | 01/01/2000 | 00:15:20 | {sensor} | {event} | {direction}"


@pytest.mark.parametrize(
    ("line", "category", "severity"),
    [
        (_sel("Memory #0x01", "Uncorrectable ECC"), Category.HOST_HARDWARE, Severity.ERROR),
        (_sel("Processor #0x02", "IERR"), Category.HOST_HARDWARE, Severity.ERROR),
        (_sel("Processor CPU1 Status", "Thermal Trip"), Category.HOST_HARDWARE, Severity.ERROR),
        (_sel("Critical Interrupt #0x19", "PCI SERR"), Category.HOST_HARDWARE, Severity.ERROR),
        (_sel("Power Supply #0x51", "Failure detected"), Category.HOST_HARDWARE, Severity.ERROR),
        (
            "  1a | 03/02/2021 | 10:11:12 | Temperature CPU1 Temp | Upper Critical going high | "
            "Asserted | Reading 96 > Threshold 95 degrees C",
            Category.HOST_HARDWARE,
            Severity.ERROR,
        ),
        (_sel("Drive Slot / Bay #0x30", "Drive Fault"), Category.HOST_STORAGE, Severity.ERROR),
        (_sel("Memory #0x01", "Correctable ECC"), Category.HOST_HARDWARE, Severity.WARNING),
    ],
)
def test_a_bmc_event_of_a_fault_has_its_category(
    line: str, category: Category, severity: Severity
) -> None:
    found = explain(line)
    assert found and found[0].category == category, found
    worse = (Severity.ERROR, Severity.CRITICAL)  # an uncorrectable ECC is critical
    assert found[0].severity in (worse if severity == Severity.ERROR else (severity,)), found


@pytest.mark.parametrize(
    "line",
    [
        _sel("Memory #0x01", "Uncorrectable ECC", "Deasserted"),  # the condition cleared
        _sel("Processor #0x02", "Presence detected"),
        _sel("Power Supply #0x51", "Presence detected"),
        _sel("System Firmware Progress #0x05", "Motherboard initialization"),
        _sel("System Event #0x83", "OEM System boot event"),
        _sel("Drive Slot / Bay #0x30", "Drive Present"),
    ],
)
def test_presence_boot_and_cleared_events_stay_silent(line: str) -> None:
    assert alarms(line) == [], line
