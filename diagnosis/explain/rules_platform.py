"""What the server's platform says about the host: BMC event logs beyond ipmitool's (Redfish
and its registries, OpenBMC, Dell iDRAC, HPE iLO) and the clouds' notices about the machine
under a GPU instance (AWS, Google Cloud, Azure).

Read from the registries and the providers' documentation (catalogued in the session notes of
2026-12-05: DMTF's ResourceEvent registry, openbmc/bmcweb's registry, Dell's EEMI message ids,
HPE's IML classes and iLO events, AWS scheduled events and status checks, GCE's system events,
Azure's Scheduled Events and Resource Health):

- a GPU, NVSwitch or NVLink of an HGX baseboard that the host BMC reports through Redfish
  (``The resource property GPU_SXM_4 Memory has detected errors of type 'Row-Remapping
  Failure'``): the GPU (a pending remap, throttling or a thermal warning degrades it), an
  NVSwitch the network's switch;
- the host's memory (an uncorrectable or multi-bit error, a parity error, a DIMM's thermal
  trip), processors (IERR, thermal trip, a degraded UPI or QPI link), PCIe (a fatal error, a
  SERR), power (an input lost, a failed supply, power-good not asserted, a voltage out of
  range), fans and critical thresholds crossed going out of range: host hardware, error; the
  rates of correctable errors past their threshold, a supply predicted to fail, a warning
  threshold crossed: host hardware, warning; a failed drive: host storage;
- a cloud saying the machine under the instance failed or is degrading (AWS ``running on
  degraded hardware``, a failed system reachability check; GCE ``hostError``; Azure's host
  crashed, rebooted or healed for repair, possibly degraded): host hardware.

Guarantees: the recovery direction of a threshold (``going low`` after ``high``), deasserted or
repaired entries, notices already completed or cancelled (``[Completed]``), planned
maintenance, preemptions and live migrations stay silent; a Redfish error on a resource that
is not a GPU keeps host hardware (host.mce_uncorrected reads DIMMs).
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, gpu_hardware, host_hardware, host_storage, rule, verdict
from diagnosis.explain.rules_gpu import xid_policy
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_DONE = (
    r"^(?!.*(?:\[Completed\]|\[Canceled\]|\bRepaired\b|Deassert|\bresolved\b"
    r"|has been restored))"
)
"""A notice already done, cancelled, repaired or resolved is history, not a fault."""
_DEGRADING = re.compile(
    r"pending|throttl|thermal (?:warning|alert)|warning|power brake|(?<!un)correctable",
    re.IGNORECASE,
)


def _baseboard(m: re.Match[str]) -> Verdict:
    """Return the verdict for an HGX baseboard part the host BMC reports through Redfish (an
    Xid it passes on takes the Xid catalogue's)."""
    if m["xid"]:
        return xid_policy(m)
    if re.search(r"NVSwitch", m["part"], re.IGNORECASE):
        return verdict(C.NETWORK, INFRA, K.SWITCH, S.ERROR, A.HARDWARE_INSPECTION, 0.7)
    if _DEGRADING.search(m["kind"]):
        return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.MONITOR, 0.6)
    return gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.75)


RULES: tuple[Rule, ...] = (
    rule(
        "platform.repaired",
        r"^\s*\d+\s+Repaired\s|Severity:\s*Repaired\b|\"Repaired\":\s*true",
        ("repaired",),
        "An iLO Integrated Management Log entry marked repaired: history, not a fault now.",
        verdict(C.BENIGN, B.UNKNOWN, K.NODE, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "platform.gpu_baseboard",
        _DONE
        + r".*The resource property '?(?P<part>[^'\n]{0,80}?(?:GPU_SXM|HGX_GPU|GPU_\d|NVSwitch"
        r"|NVLink)[^'\n]{0,80}?)'? has detected errors of type (?:'(?P<kind>[^'\n]+)'"
        # NVIDIA's BMC passes the driver's Xid event on: `[time][pid][gpu] XID 48 DBE ...`
        r"|(?:\[[^\]\n]*\]){3} XID (?P<xid>\d+))",
        ("has detected errors of type",),
        "The host's BMC reports an error on a GPU, NVLink or NVSwitch of the HGX baseboard "
        "(through Redfish): the GPU's memory, links or PCIe failed (a pending remap or "
        "throttling only degrades it); an NVSwitch's is the fabric's.",
        judge=_baseboard,
        flags=re.IGNORECASE,
    ),
    rule(
        "platform.host_fault",
        _DONE + r".*(?:\bMEM0001\b|Multi-bit memory errors detected on a memory device"
        r"|Memory ECC uncorrectable error\.|Command and Address parity error\."
        r"|Memory parity error\."
        r"|Memory ThermTrip asserted|Uncorrectable Memory Error detected by ROM"
        r"|POST Error: 201-Memory Error|CPU \d+ has an internal error \(IERR\)|CPU Error Occurred:"
        r"|CPU \d+ Thermal Trip|UPI link width reduced|QPI\) Link Degradation"
        r"|PCIe Fatal [\w ]+\. Bus=|A (?:bus )?fatal error was detected on a component at"
        r"|Legacy PCI SERR\.|PCI Bus Error \(Slot|The power input for power supply \S+ is lost"
        r"|is not receiving input power|Power supply redundancy is lost|Power supply \S+ failed\."
        r"|Power supply \S+ power lost\.|System Power Lost\.|power good failed to assert"
        r"|POST Error: 1615|voltage is outside of range|Fan redundancy lost\.|Fan Failure \(Fan"
        r"|Voltage Regulator Overheated|SSB Thermal trip|Operating System Shutdown Initiated Due to"
        r"|Unrecoverable System Error|sensor crossed a critical (?:high threshold going high"
        r"|low threshold going low)"
        # the DMTF sensor registries' and Dell's wordings of a critical threshold crossed
        r"|reading of [\d.]+ (?:\(\w+\) |\S+ )?is (?:above the [\d.]+ upper"
        r"|below the [\d.]+ lower) critical threshold"
        r"|is (?:greater than the upper|less than the lower) critical threshold"
        # FreeIPMI's ipmi-sel and HPE's hplog tables, Solaris/ILOM fault management
        r"|\|\s*Critical\s*\|\s*(?:Power Supply Failure detected|Uncorrectable ECC|Processor IERR"
        r"|Thermal Trip|Power Supply AC lost)|\b(?:Pwr\.|Power)\s+Supply\s+Bay\s+Failed\b"
        r"|Problem class\s*:\s*fault\.(?:cpu|memory|io|psu|fan|chassis|board)\.)",
        (
            *("mem0001", "multi-bit", "uncorrectable", "parity error", "thermtrip", "post error"),
            *("internal error", "cpu error", "thermal trip", "link width", "link degradation"),
            *("pcie fatal", "fatal error", "serr", "bus error", "power input", "input power"),
            *("redundancy is lost", "failed.", "power lost", "power good", "voltage"),
            *("fan", "overheated", "shutdown initiated", "unrecoverable", "crossed a critical"),
            *("critical", "supply bay", "problem class", "threshold"),
        ),
        "The server's BMC reports a failing host part (memory, a processor, PCIe, power, "
        "voltage, fans, a critical threshold crossed): the node is unreliable for training; "
        "drain it and have the part inspected.",
        host_hardware(S.ERROR, A.ISOLATE_NODE, 0.7),
    ),
    rule(
        "platform.host_warning",
        _DONE + r".*(?:\bMEM070[12]\b|Correctable memory error rate exceeded"
        r"|Persistent correctable memory error|Corrected Memory Error threshold exceeded"
        r"|Power supply \S+ failure predicted|Power supply redundancy is degraded"
        r"|\bDIMM_Degraded\b|The DIMM has degraded|\w*CECCCountMemErr\w*"
        # Dell's BAT messages (a RAID controller's or the system board's backup battery)
        r"|\bThe (?:[\w-]+ ){1,2}battery (?:is low|is failing|has failed)\b"
        r"|\bCMOS battery (?:is )?low\b"
        r"|sensor crossed a warning (?:high threshold going high|low threshold going low))",
        (
            "mem070",
            "correctable memory error",
            "failure predicted",
            "degraded",
            "crossed a warning",
            "battery",
        ),
        "The server's BMC reports a host part degrading (correctable memory errors past their "
        "rate, a supply predicted to fail, a warning threshold crossed, a RAID controller's or "
        "the board's battery low): plan a replacement.",
        host_hardware(S.WARNING, A.HARDWARE_INSPECTION, 0.5),
    ),
    rule(
        "platform.drive_failed",
        _DONE + r".*(?:Drive Array Device Failure|Drive \S+ in Backplane .* has failed"
        r"|DrvArr(?:PhysDrv|LogDrv|Controller)Failed|Drive Error Occurred:)",
        ("drive array", "backplane", "drvarr", "drive error"),
        "The server's BMC reports a failed drive or array controller: the node's local storage "
        "(checkpoints, datasets, scratch) fails.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "cloud.gpu_live_migration",
        # Compute Engine refusing a GPU instance that asks to live-migrate on host maintenance
        r"\bInstances with guest accelerators do not support live migration\b"
        r"|\bScheduling must have onHostMaintenance be one of the following valid types: "
        r"\[TERMINATE\]",
        ("guest accelerators", "onhostmaintenance"),
        "The cloud refuses to create a GPU instance set to live-migrate on host maintenance: GPU "
        "instances must be set to terminate (`onHostMaintenance: TERMINATE`); the request's "
        "configuration.",
        verdict(C.APPLICATION, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        "cloud.gpu_driver_extension_failed",
        # Azure's NVIDIA driver extension that could not install the driver on the VM's image
        r"\bfailure when processing extension 'NvidiaGpuDriver(?:Linux|Windows)'",
        ("nvidiagpudriver",),
        "The cloud's GPU driver extension failed to install the NVIDIA driver on the VM (Azure's "
        "NvidiaGpuDriverLinux): the image, its kernel or the extension's version; the VM has no "
        "usable GPU until the driver installs.",
        verdict(C.APPLICATION, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "cloud.host_degraded",
        _DONE + r".*(?:running on degraded hardware|has detected degradation of the underlying "
        r"hardware|System reachability check failed|\bAWS_EC2_\w*RETIREMENT_SCHEDULED\b"
        r"|\bdue\s+to\s+(?:the\s+)?(?:underlying|host)\s+hardware\s+degradation\b"
        r"|\binstance-retirement\b|(?<!=)(?<!=\")compute\.instances\.hostError|VirtualMachineHostCrashed"
        r"|VirtualMachineHostRebootedForRepair|VirtualMachineMigrationInitiatedForRepair"
        r"|VirtualMachinePossiblyDegradedDueToHardwareFailure"
        r"|VirtualMachineMigrationScheduledForDegradedHardware"
        r"|VirtualMachineScheduledForServiceHealing|Host server is undergoing an emergency repair)",
        (
            *("degraded hardware", "degradation", "reachability", "retirement"),
            *("hosterror", "virtualmachine", "emergency repair"),
        ),
        "The cloud provider says the machine under the instance failed or is degrading (a host "
        "error, a crash, a repair, degraded hardware, the system check failing): the instance "
        "is lost or will be; restart the job elsewhere.",
        host_hardware(S.ERROR, A.ISOLATE_NODE, 0.7),
    ),
)
