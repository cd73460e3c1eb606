"""PCIe rules: AER errors (corrected, non-fatal, fatal) in every spelling of the kernel's aer.c,
a GPU's uncorrectable error, slots that lost power or link (pciehp), DPC containment, failed
recovery and retraining, links trained narrower than capable, and devices that did not answer
when woken (`Unable to change power state from D3cold to D0, device inaccessible`).

Patterns come from the kernel's own lines (drivers/pci/pcie/aer.c, err.c, dpc.c, pciehp, pci.c)
as quoted in tests/fixtures/explain/public_host_lines.jsonl and the real-log corpus. A link of
a device that names a GPU (rules_host.GPU_NAMED) is the GPU's; any other is the host's.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, gpu_hardware, host_hardware, rule, verdict
from diagnosis.explain.rules_host import GPU_NAMED
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE


def _narrower(m: re.Match[str]) -> Verdict | None:
    """Return a degraded link when it trained narrower than capable: the GPU's when the line
    names an NVIDIA device or a GPU, else the host's."""
    if int(m["have"]) >= int(m["want"]):
        return None
    if GPU_NAMED.search(m.string):
        return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.6)
    return host_hardware(S.WARNING, A.HARDWARE_INSPECTION, 0.6)


HOT_REMOVED_RULE = "host.pcie_hot_removed"
EXPLAINED_BY = {
    rule_id: frozenset({HOT_REMOVED_RULE})
    for rule_id in (
        "host.pcie_fatal",
        "host.pcie_error",
        "host.pcie_recovery_failed",
        "storage.nvme",
    )
}
"""A port's errors, its failed recovery and the NVMe controller's reset behind it, in an input
that says the device was hot-removed (a surprise removal, a hot-plug test): what a removal
prints, not a fault."""

RULES: tuple[Rule, ...] = (
    rule(
        HOT_REMOVED_RULE,
        # (`hot-removing an Intel NVMe SSD`, `performing a looping hot plug test`, `On hotplug
        # ports capable of surprise removal, Surprise Down Errors are expected`)
        r"\bhot[\s-]?(?:remov(?:e|ed|es|ing|al)|unplug(?:ged|ging)?)\b"
        r"|\bhot[\s-]?plug\s+(?:test\w*|event)|\bsurprise\s+removal\b",
        ("hot", "surprise removal"),
        "The text says a PCIe device was hot-removed (a surprise removal, a hot-plug test): the "
        "port's Surprise Down, DPC containment and failed recovery that follow are the removal's "
        "(EXPLAINED_BY), no fault.",
        verdict(C.BENIGN, B.UNKNOWN, K.NODE, S.INFO, A.NONE, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "host.gpu_inaccessible",
        # pci.c when a device does not answer as it is woken (its config space reads all ones):
        # bound to the nvidia driver (or to vfio-pci, passed through to a VM: on GPU nodes a
        # GPU), the GPU is lost
        # (a redacted address too: `vfio-pci <BDF>: `)
        r"\b(?:nvidia|vfio-pci) (?:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
        r"|<[\w-]{1,16}>): Unable to change power state from D3\w* to D0, device inaccessible\b",
        ("device inaccessible",),
        "A GPU did not answer when the kernel woke it (`Unable to change power state from D3cold "
        "to D0, device inaccessible`): it is lost to the host, like a GPU fallen off the bus; "
        "drain the node, reset or reseat the GPU.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.6),
    ),
    rule(
        "host.device_inaccessible",
        r"(?<![\w-])(?:pcieport|pci) (?:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
        r"|<[\w-]{1,16}>): Unable to change power state from D3\w* to D0, device inaccessible\b",
        ("device inaccessible",),
        "A PCIe port or device did not answer when the kernel woke it (`device inaccessible`): "
        "the devices behind it are lost until the node resets.",
        host_hardware(S.ERROR, A.REBOOT_NODE, 0.6),
    ),
    rule(
        "host.pcie_gpu_uncorrectable",
        # aer.c prints the device's own driver before its address: `nvidia` is a GPU's
        r"\bnvidia [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]: (?:AER: )?PCIe Bus Error: "
        r"ser?verity=Uncorrect(?:ed|able)\b",
        ("pcie bus error",),
        "An uncorrectable PCIe error (AER) that a GPU reported, bound to the nvidia driver: "
        "the GPU's link or the GPU itself; its transfers may be lost or poisoned. Drain it and "
        "inspect its seat, riser and the GPU.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.65),
    ),
    rule(
        "host.pcie_fatal",
        r"AER: (?:Multiple )?Uncorrect(?:ed|able) \(Fatal\) error (?:message )?received"
        r"|ser?verity=Uncorrect(?:ed|able) \(Fatal\)|\bUncorrect(?:ed|able) \(Fatal\) error: \w"
        # a slot that lost power or its link (pciehp), a port that contained an error (DPC)
        r"|\bpciehp(?: \S+)?: [Ss]lot\(\S+\): (?:Power fault|Cannot train link|No link"
        r"|Link training error)"
        r"|\bDPC:? containment event\b|\bDPC: unmasked uncorrectable error detected\b"
        # a link the port could not bring back (pci.c's retraining of a broken device's link)
        r"|\bbroken device, retraining non-functional downstream link\b|: retraining failed$",
        (
            *("uncorrected (fatal)", "uncorrectable (fatal)", "pciehp", "containment event"),
            *("unmasked uncorrectable", "retraining"),
        ),
        "A fatal PCIe error (AER) on a host port, a slot's power fault or link that would not "
        "train, a port that contained an error (DPC): the devices behind it are unreliable.",
        host_hardware(S.ERROR, A.REBOOT_NODE, 0.75),
    ),
    rule(
        "host.pcie_narrow_link",
        r"available PCIe bandwidth, limited by [\d.]+ GT/s PCIe x(?P<have>\d+) link at \S+ "
        r"\(capable of [\d.]+ Gb/s with [\d.]+ GT/s PCIe x(?P<want>\d+) link\)",
        ("available pcie bandwidth",),
        "A PCIe link trained narrower than its device and slot can (x8 of x16): a bad seat, "
        "riser or cable; a GPU on it moves data at a fraction of its speed. (A link that only "
        "trained slower is not read: idle GPUs lower their PCIe speed.)",
        judge=_narrower,
    ),
    rule(
        "host.phb_link_unstable",
        # OPAL's skiboot on POWER, for each PCIe host bridge's link it trains at boot
        r"\bPHB#[0-9a-fA-F]+(?:\[\d+:\d+\])?: (?:LINK: Went down waiting for stabil\w*"
        r"|Linked? trained but was degraded or unstable|LINK: Timeout waiting for (?:link up"
        r"|electrical link))",
        ("phb#",),
        "The firmware of a POWER host could not train a PCIe host bridge's link (skiboot: `Went "
        "down waiting for stability`, `trained but was degraded or unstable`): the card, its "
        "slot or riser; the devices behind it are slow or lost.",
        host_hardware(S.WARNING, A.HARDWARE_INSPECTION, 0.6),
    ),
    rule(
        "host.pcie_recovery_failed",
        r"AER: can't recover \(no error_detected callback\)|AER: device recovery failed",
        ("can't recover", "device recovery failed"),
        "PCIe error recovery failed (drivers/pci/pcie/err.c): the device's driver cannot recover "
        "from the AER error, or the link reset did not bring it back; the device is unusable "
        "until the node reboots.",
        host_hardware(S.ERROR, A.REBOOT_NODE, 0.7),
    ),
    rule(
        "host.pcie_error",
        r"AER: (?:Multiple )?(?:Correct(?:ed|able)|Uncorrect(?:ed|able) \(Non-Fatal\)) error "
        r"(?:message )?received|PCIe Bus Error: ser?verity="
        # the device that reported the error first (aer.c, printed with each error's details)
        # (aer.c prints `AER:   Error of this Agent is reported first`; older kernels name the
        # agent's id: `Error of this Agent(0018) is reported first`)
        r"|\bAER:\s+Error of this [Aa]gent(?:\(\w+\))? is reported first\b"
        r"|\bError of this Agent\(\w+\) is reported first\b"
        # a slot whose link went down (pciehp: a surprise removal, or a link that failed)
        r"|\bpciehp(?: \S+)?: [Ss]lot\(\S+\): Link Down\b"
        # lspci -vvv's AER capability: an uncorrectable error's status bit latched (`CmpltTO+`)
        r"|^\s*UESta:[^\n]*\b(?:DLP|SDES|TLP|FCP|CmpltTO|CmpltAbrt|UnxCmplt|RxOF|MalfTLP|ECRC"
        r"|UnsupReq|ACSViol)\+",
        ("aer:", "pcie bus error", "pciehp", "uesta:", "reported first"),
        "A corrected or non-fatal PCIe error (AER), in both spellings of drivers/pci/pcie/aer.c "
        "('Corrected'/'Uncorrected' before Linux 6.x, 'Correctable'/'Uncorrectable' after): "
        "watch the link, it may degrade.",
        host_hardware(S.WARNING, A.MONITOR, 0.6),
    ),
)
