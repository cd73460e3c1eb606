"""NVLink rules without an Xid: links down or inactive (nvidia-smi, dcgmi, DCGM's health
report), error counters by the thousand, the driver's NVLink code failing, a fabric block's
state, and NVLink said to be faulty in words.

Written from the development part of the real-log corpus: nvidia-smi's "all links are inActive",
gpud's ``knvlink...: ... failed`` signature (leptonai/gpud#1271), DCGM's
``GPU 2's NvLink link 9 is currently down`` and its link-0 false alarm on PCIe cards.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, gpu_hardware, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE


NVLINK_FAULT = gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.6)
"""An NVLink fault seen without an Xid (links down, a fabric not registered or unhealthy)."""


_FABRIC_FIELD = re.compile(
    r"^\s*(?P<field>State|Status|Summary|Bandwidth|Route Unhealthy)\s*:\s*(?P<value>\S.*?)\s*$"
)
_FABRIC_FINE = {
    "State": {"completed", "n/a", "not supported"},
    "Status": {"success", "n/a", "not supported"},
    "Summary": {"healthy", "n/a", "not supported"},
    "Bandwidth": {"full", "n/a", "not supported"},
    "Route Unhealthy": {"false", "n/a", "not supported"},
}
FABRIC_RULE = "nvlink.fabric_state"


def fabric_field(body: str) -> Verdict | None:
    """Return an NVLink fault for a `State` or `Status` line of nvidia-smi -q's `Fabric` block
    (the engine passes only lines inside one) that is not a healthy value: a fabric still `In
    Progress` (not registered), a status other than `Success` (`Insufficient Resources`, ...),
    or its `Health`: a `Summary` other than `Healthy`, a `Bandwidth` other than `Full`, a `Route
    Unhealthy` of `True`. `N/A` and `Not Supported` are GPUs without a fabric: healthy."""
    m = _FABRIC_FIELD.match(body)
    if m is None or m["value"].lower() in _FABRIC_FINE[m["field"]]:
        return None
    if m["field"] == "State" and m["value"].lower() != "in progress":
        return None  # `Not Started` and others: not judged on their own
    return NVLINK_FAULT


def _about_nvlink(m: re.Match[str]) -> Verdict | None:
    """Return an NVLink fault when the links spoken of are NVLink's (named in the line)."""
    return NVLINK_FAULT if "nvlink" in m.string.lower() else None


def _unless_denied(m: re.Match[str]) -> Verdict | None:
    """Return an NVLink fault unless the words just before deny it (``no error in the NVLink``)."""
    before = m.string[max(0, m.start() - 25) : m.start()]
    if re.search(r"\b(?:no|not|without|never|isn't|wasn't)\b[^.\n]*$", before, re.IGNORECASE):
        return None
    return NVLINK_FAULT


RULES: tuple[Rule, ...] = (
    rule(
        "nvlink.dcgm_link_zero",
        r"\bGPU \d+'s NvLink link 0 is currently down\b",
        ("link 0 is currently down",),
        "DCGM reports link 0 of a GPU down: its known false alarm on GPUs without NVLink (a "
        "PCIe card), which lists every link from 0 on; no fault, and it explains the other "
        "links' lines of the same input (EXPLAINED_BY).",
        verdict(C.BENIGN, B.UNKNOWN, K.GPU, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "nvlink.dcgm_link_down",
        # dcgm_errors.h DCGM_FR_NVLINK_DOWN_MSG, in dcgmi health's table or a monitor's report
        r"\bGPU \d+'s NvLink link \d+ is currently down\b",
        ("is currently down",),
        "DCGM reports an NVLink of a GPU down (`GPU 2's NvLink link 9 is currently down`): lost "
        "bandwidth, or a hang for the collectives that need it. Links from 0 on are DCGM's "
        "known false alarm on GPUs without NVLink, and no finding.",
        # (link 0's own line is nvlink.dcgm_link_zero's, the rule before; a real link 0 down
        # is missed)
        gpu_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.6),
    ),
    rule(
        "nvlink.status_down",
        r"^\s*(?=(?:[UDX_]\s+)*U\b)(?=(?:[UDX_]\s+)*D\b)(?:[UDX_]\s+){3,}[UDX_]\s*$",
        ("u d", "d u", "x d", "d x"),
        "`dcgmi nvlink --link-status`: a GPU (or switch) with some NVLinks up and others Down: "
        "the links down are lost bandwidth, or a hang for collectives that need them.",
        gpu_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.6),
    ),
    rule(
        "nvlink.links_down",
        r"Unable to retrieve NVLink information as all links are inActive"
        r"|^\s*D(?: D){7,}\s*$"
        r"|^\s*Link \d+: <inactive>\s*$"
        r"|P2P is disabled between NVLINK connected GPUs \d+ and \d+",
        ("nvlink information", "d d d d", "<inactive>", "nvlink connected gpus"),
        "NVLink failed without an Xid: every link inactive (nvidia-smi), a link shown "
        "'<inactive>' by nvidia-smi nvlink -s, dcgmi "
        "showing every link Down, or NCCL's topology check finding P2P disabled between "
        "NVLink-connected GPUs (src/graph/paths.cc: 'probably due to a hardware issue'). "
        "Collectives over NVLink hang or fall back; reboot, then inspect.",
        gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.7),
        flags=re.IGNORECASE,
    ),
    rule(
        "nvlink.error_counters",
        # `nvidia-smi nvlink -e` (`Link 0: CRC Errors: 65535`), sampled once: counts since the
        # driver loaded, so only by the thousand (recoveries by the ten) are they a link that
        # keeps failing rather than a few errors over months (a rising pair is monitor.*'s)
        r"^\s*Link \d+: (?:Recovery Errors: [1-9]\d+|(?:CRC|Replay) Errors: [1-9]\d{3,})\s*$"
        # dcgm-exporter's totals of the same counters (a sample of one GPU's since boot)
        r"|^DCGM_FI_DEV_NVLINK_(?:CRC_FLIT|CRC_DATA|REPLAY|RECOVERY)_ERROR_COUNT_TOTAL\{[^}\n]*\}\s+"
        r"[1-9]\d{3,}(?:\.0+)?\s*$",
        ("errors:", "dcgm_fi_dev_nvlink_"),
        "nvidia-smi's NVLink error counters are high (`nvidia-smi nvlink -e`: CRC or replay "
        "errors by the thousand, recoveries by the ten): the link retrains or retransmits, "
        "losing bandwidth; read it again, and a counter still rising is a link (GPU, NVLink "
        "bridge or baseboard) to inspect.",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.5),
        flags=re.MULTILINE,
    ),
    rule(
        "gpu.pcie_card",
        # nvidia-smi -L and nvlink -s name each GPU: `GPU 0: NVIDIA A100-PCIE-40GB (UUID: ...)`
        r"^\s*GPU \d+: [^(\n]*?\bPCIe\b[^(\n]*\(UUID: ",
        ("pcie",),
        "A PCIe card named by nvidia-smi: it has no NVLink unless a bridge is fitted, so its "
        "links shown inactive are no fault (EXPLAINED_BY).",
        verdict(C.BENIGN, B.UNKNOWN, K.GPU, S.INFO, A.NONE, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "nvlink.driver_error",
        # RM prints only errors by default: an NVLink function's line saying it failed
        r"NVRM: (?:GPU\d+ |GPU [0-9a-f:.]+: )?\w*nvlink\w*: "
        r"(?!.*\b(?:not supported|Skipping|should enter|error counts?|error counters?|cleared)\b).*"
        r"\b(?:fail\w*|unable|error\w*|could not|cannot|not connected|not registered)\b"
        # the nvlink core module (nvlink_linux.c) and its training (debug builds)
        r"|nvidia-nvlink: (?:Failed to (?:initialize driver|allocate)|\s?Unable to create"
        r"|NVLink: (?:Assertion failed|requested sleep duration))"
        r"|Unable to set (?:sub)?link state to (?:ACTIVE|HIGH SPEED)"
        r"|No connections to train to ACTIVE|did not transition to INIT"
        r"|Invalid (?:tx |rx )?(?:sub)?link(?:/sublink)? mode while training",
        ("nvlink", "link state to", "no connections to", "transition to init", "while training"),
        "The NVIDIA driver's NVLink code reports a failure without an Xid (read from "
        "open-gpu-kernel-modules: kernel_nvlinkcorelibtrain.c, kernel_nvlinkcorelibcallback.c, "
        "nvlink_linux.c, nvlink_training.c): links that did not train to ACTIVE, could not be "
        "shut down, reset, put to sleep or woken, a link state that could not be set or read, "
        "a link with no remote end. Collectives over NVLink hang or fall back; reboot, then "
        "inspect the GPU and its links. Its notices (L2 not supported, fabric managed "
        "elsewhere) are not faults.",
        gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.7),
        flags=re.IGNORECASE,
    ),
    rule(
        "nvlink.links_said_down",
        r"\b(?:one\s+or\s+more|some|several|\d+|two|three|four)\s+(?:NVLink\s+)?links?\s+"
        r"(?:are\s+|is\s+|were\s+|was\s+|shown\s+|reported\s+|as\s+)?(?:inactive|down)\b"
        r"|\bfewer\s+active\s+(?:NVLink\s+)?links\b",
        ("inactive", "down", "fewer active"),
        "A report that one or more NVLink links are inactive or down (or a GPU has fewer active "
        "links than it should): a partial fabric slows or hangs collectives over NVLink; "
        "reboot, then inspect the GPU and its links.",
        judge=_about_nvlink,
        flags=re.IGNORECASE,
    ),
    rule(
        "nvlink.said_faulty",
        r"\b(?:an?\s+)?(?:error|fault|failure|problem|issue|defect)s?\s+(?:in|with|on)\s+"
        r"(?:the\s+|its\s+|their\s+|an?\s+)?NVLinks?\b"
        r"|\bNVLinks?\s+(?:is|was|are|were|seems?|looks?)\s+(?:to\s+be\s+)?(?:broken|faulty|bad|"
        r"defective|dead|failing|failed)\b"
        r"|\b(?:broken|faulty|bad|defective|failing|failed)\s+NVLinks?\b"
        # a bridge that is not seated: `the nvlink bridge cannot plug in fully`
        r"|\bNVLink\s+bridges?\s+(?:\w+\s+){0,3}?(?:cannot|can't|could\s*n[o']t|couldn't"
        r"|(?:is|was|does|did|would|will)\s*(?:n't|\s+not))\s+(?:be\s+)?(?:fully\s+|properly\s+)?"
        r"(?:plugged|plug\s+in|seated|seat|inserted)\b(?![^.\n]*\?)"
        r"|\b(?:loose|unseated|half-seated)\s+NVLink\s+bridges?\b",
        ("nvlink",),
        "A report that a node's or GPU's NVLink is faulty (an error in the NVLink, a broken "
        "link, a bridge not fully seated): collectives over it fail or hang; reboot, then "
        "inspect the GPU and its links.",
        judge=_unless_denied,
        flags=re.IGNORECASE,
    ),
)


EXPLAINED_BY: dict[str, frozenset[str]] = {
    "nvlink.links_down": frozenset({"gpu.pcie_card"}),
    "nvlink.dcgm_link_down": frozenset({"nvlink.dcgm_link_zero"}),
}
"""NVLink links inactive in an input whose nvidia-smi names PCIe cards: cards without NVLink
(HPE's note on the A100 PCIe), not links that went down; DCGM's links down listed from link 0
on: its false alarm on GPUs without NVLink."""
