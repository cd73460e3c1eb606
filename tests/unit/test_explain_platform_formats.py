"""A server's BMC event logs beyond ipmitool's (Redfish registries, OpenBMC, Dell iDRAC, HPE
iLO) and the clouds' notices about the host, read from their registries and documentation
(issue 21, "whole families, not lines").

The lines are the registries' and providers' message formats with their arguments filled in;
the negative controls are their recovery, informational, completed and maintenance messages.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

FAULTS = [
    # an HGX baseboard's GPU, NVSwitch, through the host BMC's Redfish
    (
        "The resource property GPU_SXM_4 Memory has detected errors of type 'Row-Remapping "
        "Failure'.",
        C.GPU_HARDWARE,
        "platform.gpu_baseboard",
    ),
    (
        "The resource property GPU_SXM_2 Memory has detected errors of type 'Row Remapping "
        "Pending'.",
        C.GPU_DEGRADED,
        "platform.gpu_baseboard",
    ),
    (
        "The resource property NVSwitch_2 PCIe has detected errors of type 'PCIe link error - "
        "Fatal'.",
        C.NETWORK,
        "platform.gpu_baseboard",
    ),
    # OpenBMC, Dell, HPE host parts
    ("Memory ECC uncorrectable error. Socket=0 Channel=2 DIMM=1 Rank=0.", C.HOST_HARDWARE, None),
    (
        "MEM0001: Multi-bit memory errors detected on a memory device at location(s) DIMM A1.",
        C.HOST_HARDWARE,
        None,
    ),
    ("CPU0000: CPU 1 has an internal error (IERR).", C.HOST_HARDWARE, None),
    ("PCIe Fatal Completion Timeout. Bus=23 Device=0 Function=0.", C.HOST_HARDWARE, None),
    (
        "PCI1302: A bus fatal error was detected on a component at bus 59 device 0 function 0.",
        C.HOST_HARDWARE,
        None,
    ),
    ("PSU0003: The power input for power supply 1 is lost.", C.HOST_HARDWARE, None),
    ("VLT0304: The system board PS1 PG Fail voltage is outside of range.", C.HOST_HARDWARE, None),
    (
        "CPU1 Temp sensor crossed a critical high threshold going high. Reading=101 Threshold=95.",
        C.HOST_HARDWARE,
        None,
    ),
    ("Intel UPI link width reduced to half. Node=1.", C.HOST_HARDWARE, None),
    ("MEM0701: Correctable memory error rate exceeded for DIMM_A1.", C.HOST_HARDWARE, None),
    (
        "Drive Array Device Failure (Slot 0, Bus 1, Bay 3)",
        C.HOST_STORAGE,
        "platform.drive_failed",
    ),
    # clouds
    (
        "instance-retirement  The instance is running on degraded hardware",
        C.HOST_HARDWARE,
        "cloud.host_degraded",
    ),
    ("System reachability check failed", C.HOST_HARDWARE, "cloud.host_degraded"),
    (
        '{"methodName": "compute.instances.hostError", "statusMessage": "Instance terminated by '
        'Compute Engine."}',
        C.HOST_HARDWARE,
        "cloud.host_degraded",
    ),
    (
        "VirtualMachinePossiblyDegradedDueToHardwareFailure: We're sorry, your virtual machine is "
        "running on a host server with a degraded hardware component that will fail soon.",
        C.HOST_HARDWARE,
        "cloud.host_degraded",
    ),
]


@pytest.mark.parametrize(("line", "category", "rule"), FAULTS)
def test_each_platform_fault_is_read(line: str, category: Category, rule: str | None) -> None:
    found = first(line)
    assert found is not None and found[0] == category, (line, found)
    if rule is not None:
        assert found[1] == rule


BENIGN = [
    "The resource property GPU_SXM_4 Memory has corrected errors of type 'Correctable ECC'.",
    "CPU1 Temp sensor crossed a critical high threshold going low. Reading=80 Threshold=95.",
    "Power supply 1 recovered.",
    "Power supply redundancy is restored.",
    "Correctable memory error logging disabled for a memory device at location DIMM_A1.",
    "0004 Repaired  Uncorrectable Memory Error detected by ROM-based memory validation (Board 1, "
    "Memory Module 4)",
    "[Completed] The instance is running on degraded hardware",
    "system-maintenance  The instance is scheduled for a reboot",
    "compute.instances.migrateOnHostMaintenance  Instance migrated during Compute Engine "
    "maintenance.",
    '{"EventType":"Freeze","ResourceType":"VirtualMachine","Description":"Host server is '
    'undergoing maintenance.","EventSource":"Platform"}',
    "LiveMigrationSucceeded",
    "Memory RAS Configuration Disabled. Error=0 Mode=1.",
]


@pytest.mark.parametrize("line", BENIGN)
def test_recovery_maintenance_and_history_stay_silent(line: str) -> None:
    assert alarms(line) == [], line
