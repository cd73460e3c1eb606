"""NVIDIA DCGM's health and diagnostic messages (``dcgmi health -c``, ``dcgmi diag``, the host
engine's log): its error catalogue, read whole.

Read from DCGM's own catalogue (NVIDIA/DCGM dcgmlib/dcgm_errors.h, every ``DCGM_FR_*`` message
with its severity and category from dcgm_errors.c; catalogued in the session notes of
2026-12-05). Each message is DCGM's format string followed by its advice, in every surface
DCGM prints it (a health report's row, a diag box's row, a log line, JSON):

- the GPU's memory or state failed (a volatile double-bit ECC error, retired pages past the
  limit, a corrupt InfoROM, faulty or NaN memory elements, a CUDA-reported DBE, a memory
  mismatch, an L1 miscompare, a failed or uncorrectable row remap, an uncontained error, pending
  retirements with a DBE): GPU hardware, error;
- the GPU works but is degraded (a pending retired page or row remap, PCIe replays, a link
  trained below its generation or width, clocks held back by a thermal or power violation,
  thermal violations, a temperature over its limit, a stress level, power or memory bandwidth
  the diag could not reach, a bandwidth or latency outside its bounds): GPU degraded, warning;
- NVLink errors past their threshold: the GPU's links (GPU hardware, as the driver's NVLink
  lines are read; a link ``currently down`` or fewer links up than expected are not read: DCGM
  prints them on GPUs without NVLink too); an NvSwitch's fatal errors, links
  down or SXid: the switch (network, error; its non-fatal errors a warning);
- ``Detected XID N for GPU M``: the Xid catalogue's verdict for N.

Guarantees: only DCGM's own wording is read, so the advice it appends (``Reset GPU``) and its
passing rows (``Pass``, ``Skip``, ``Healthy``, ``Successfully ran diagnostic for group.``,
printed even when a test failed) never alarm; DCGM's failures of its own (``There was an
internal error during the test``, plugins that would not load) are no GPU fault.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, gpu_hardware, rule, verdict
from diagnosis.explain.rules_gpu import xid_policy
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE


def _switch(m: re.Match[str]) -> Verdict:
    """Return an NvSwitch fault: a warning for its non-fatal errors, else an error."""
    nonfatal = "nonfatal" in m[0].lower()
    severity, action = (S.WARNING, A.MONITOR) if nonfatal else (S.ERROR, A.HARDWARE_INSPECTION)
    return verdict(C.NETWORK, INFRA, K.SWITCH, severity, action, 0.7)


_NVLINK_ERRORS = gpu_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.7)


def _fewer_links(m: re.Match[str]) -> Verdict | None:
    """NVLink errors, or fewer links up than the GPU expects (equal counts are healthy)."""
    if m["want"] is not None and int(m["up"]) >= int(m["want"]):
        return None
    return _NVLINK_ERRORS


RULES: tuple[Rule, ...] = (
    rule(
        "dcgm.xid",
        # DCGM's `Detected XID N for GPU M`, or dcgm-exporter's metric with its last Xid as a
        # label (`DCGM_FI_DEV_XID_ERRORS{gpu="3",... err_code="92"`; 0: none yet)
        r"(?:\bDetected XID (?=\d+ for GPU \d)"
        r"|\bDCGM_FI_DEV_XID_ERRORS\{[^}\n]*?\berr_code=\"(?=[1-9]))"
        r"(?P<xid>\d+)(?: for GPU (?P<gpu>\d+))?",
        ("detected xid", "dcgm_fi_dev_xid_errors"),
        "DCGM's health watch saw an Xid on the GPU: the Xid catalogue's verdict.",
        judge=xid_policy,
    ),
    rule(
        "dcgm.gpu_memory",
        r"Detected \d+ volatile double-bit ECC error\(s\) in GPU (?P<gpu>\d+)"
        r"|\d+ or more retired pages have been detected in GPU (?P<gpu2>\d+)"
        r"|retired pages due to DBEs have been detected|A corrupt InfoROM has been detected"
        r"|Found \d+ (?:faulty|NaN-value) memory elements on GPU"
        r"|CUDA APIs have indicated that a double-bit ECC error has occ?urr?ed"
        r"|A memory mismatch was detected on GPU|miscompare failure in the L1 cache"
        r"|had uncorrectable memory errors and (?:row remapping failed|\d+ rows were remapped)"
        r"|GPU had an uncontained error|Pending page retirements together with a DBE"
        # DCGM 4.x names the field: `Detected 3 ecc_dbe_volatile_total for GPU 1`
        r"|Detected \d+ \w*dbe\w* for GPU \d+",
        (
            *("double-bit", "retired pages", "inforom", "memory elements", "memory mismatch"),
            *("miscompare", "uncorrectable memory", "uncontained", "pending page", "dbe"),
        ),
        "DCGM found the GPU's memory failing (a double-bit ECC error, retired pages past the "
        "limit, faulty memory elements, a failed row remap, an uncontained error) or its "
        "InfoROM corrupt: drain the GPU, reset it, and run a field diagnostic.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.8),
    ),
    rule(
        "dcgm.gpu_degraded",
        r"A pending retired page has been detected in GPU|had memory errors and row remappings"
        r" are pending|Detected more than \d+ PCIe replays per minute for GPU"
        r"|host-side PCIe replay violation|is running at PCI link (?:generation|width)"
        r"|Detected (?:clock throttling|clocks event) due to (?:thermal|power) violation"
        r"|There were thermal violations totaling|Thermal violations totaling"
        r"|exceeded user-specified maximum allowed temperature"
        r"|(?:Clocks are being throttled|Clocks event) for GPU \d+ because"
        r"|did not reach desired (?:stress level|power)|only achieved a memory bandwidth of"
        r"|Bandwidth of GPU \d+ in direction \S+ of [\d.]+ did not exceed"
        r"|Latency type \S+ of GPU \d+ value [\d.]+ exceeded"
        r"|Detected \d+ \w*(?:sbe|pcie_replay)\w* for GPU \d+ which is above the threshold",
        (
            *("pending retired page", "row remappings", "pcie replay", "pci link"),
            *("violation", "temperature", "throttled", "clocks event", "did not reach"),
            *("memory bandwidth", "did not exceed", "latency type", "above the threshold"),
        ),
        "DCGM found the GPU degraded: pending retirements or remaps (a reset applies them), "
        "PCIe replays or a link trained down, clocks held back by heat or power, a stress, "
        "power or bandwidth target missed. It still works, slower; it can make a straggler.",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.MONITOR, 0.6),
    ),
    rule(
        "dcgm.nvswitch",
        r"Detected (?:fatal|nonfatal) errors on NvSwitch \d+ link \d+|Detected fatal NvSwitch SXID"
        r"|NvSwitch \d+ - Only \d+ NvLinks are up|NvSwitch physical ID \d+'s NvLink port \d+ is"
        r" currently down|NVSwitch \d+'s NvLink \d+ is down",
        ("nvswitch",),
        "DCGM found an NvSwitch failing (fatal errors or an SXid on a link, links down): every "
        "GPU behind it loses bandwidth or its collectives; non-fatal errors are a warning.",
        judge=_switch,
    ),
    rule(
        "dcgm.nvlink",
        r"Detected \d+ (?:\S+ ){1,3}NvLink errors on GPU \d+'s (?:NVLink|link)"
        # fewer links up than the GPU's expected count (none expected: a GPU without NVLink)
        r"|(?:\bGPU \d+ |\"warning\":\s*\")Only (?P<up>\d+) NvLinks are up out of the\s+"
        r"(?:\|\s*)*expected "
        r"(?P<want>[1-9]\d*)\b"
        r"|NvLink errors found occ?urr?ing per"
        r" second on GPU",
        ("nvlink",),
        "DCGM counted NVLink errors on the GPU past their threshold: collectives over NVLink "
        "slow down, replay or hang; check the GPU and its links. (DCGM's `link ... is "
        "currently down` is not read: DCGM prints it on systems without NVLink too; `Only N "
        "NvLinks are up out of the expected M` is, when M is not zero.)",
        judge=_fewer_links,
    ),
)
