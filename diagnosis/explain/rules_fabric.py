"""NVSwitch fabric rules: SXid lines, Fabric Manager errors, nvidia-peermem.

Written from the development part of the corpus: the SXid lines of NVSentinel's parser tests
(fatal, non-fatal, SOE, truncated and ``Severity``/``Data`` continuation lines), gpud's
``kern :err : <iso>`` SXid data line (leptonai/gpud#338), gpud's Fabric Manager matcher cases
(``detected NVSwitch fatal|non-fatal error <sxid> ... pci bus id ... port <n>``, the multicast
"failed to find the GPU handle", the topology mismatch and the failed driver query) and the
nvidia-peermem ``invalid context`` line. The verdict per SXid code is the catalog's
(diagnosis/catalog/sxid.py); the switch's PCI address is the finding's ``pci_bus_id``.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.catalog.sxid import sxid_verdict
from diagnosis.explain.rules import Rule, rule, unit_failed, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE


def _switch(severity: S, action: A, confidence: float) -> Verdict:
    """Return a network verdict pointing at the NVSwitch fabric."""
    return verdict(C.NETWORK, INFRA, K.SWITCH, severity, action, confidence)


_NO_NVSWITCH = re.compile(r"\b(?:no|without) NVSwitch|\bPCIe\b", re.IGNORECASE)
FM_RULES = frozenset({"fabric.fm_driver_query", "fabric.fm_not_started"})
NVLSM_MISSING = "fabric.nvlsm_missing"
FM_VERSION_MISMATCH = "fabric.fm_version_mismatch"
_FM_EXPLAINERS = frozenset({"fabric.no_nvswitch", NVLSM_MISSING, FM_VERSION_MISMATCH})
EXPLAINED_BY = {
    **dict.fromkeys(FM_RULES, _FM_EXPLAINERS),
    "fabric.cuda_not_ready": frozenset({NVLSM_MISSING}),
}
"""Fabric Manager's failure in an input that shows a machine without NVSwitch or names its
package's version mismatch with the driver; its failure and CUDA's `system not ready` in an
input that says the NVLink subnet manager is not running (NVLink 5 fabrics need it): the node's
setup."""


def _fm_applies(m: re.Match[str], fault: Verdict) -> Verdict | None:
    """Return `fault` for Fabric Manager's failure unless its line names a machine without
    NVSwitch (a PCIe box): there FM has nothing to manage and refuses to run by design, and
    CUDA works without it."""
    return None if _NO_NVSWITCH.search(m.string) else fault


def _sxid(m: re.Match[str]) -> Verdict:
    """Return the catalog verdict for the SXid in `m`, with the line's fatal/non-fatal word."""
    said = m.groupdict().get("said")
    return sxid_verdict(int(m["sxid"]), said)


_NODE_SETUP = verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5)
"""The fabric's software on the node not set up (its service, its version): the node's setup."""

RULES: tuple[Rule, ...] = (
    rule(
        NVLSM_MISSING,
        # (`Not running the NVLSM on Blackwell ... will result in FabricManager failing to
        # start`, `missing the NVLSM dependency`)
        r"\b(?:not\s+running|without|missing)\s+(?:the\s+)?NVLSM\b"
        r"|\bNVLSM\s+(?:dependency\s+|service\s+)?(?:is\s+)?(?:missing|not\s+running|not\s+installed)\b",
        ("nvlsm",),
        "The NVLink subnet manager (NVLSM) is said not to run: on NVLink 5 fabrics (Blackwell) "
        "Fabric Manager needs it, fails to start without it, and CUDA reports the system not "
        "ready; install and start it, the node's setup.",
        verdict(C.APPLICATION, B.INFRASTRUCTURE, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "fabric.imex_unhealthy",
        r"\bDCGM_FR_IMEX_UNHEALTHY\b|\bIMEX daemon status is -?\d+ \(not READY\)"
        r"|\bIMEX (?:daemon|domain|channel)s? (?:is |are )?(?:not ready|unhealthy|down)\b",
        ("imex",),
        "The IMEX daemon that shares GPU memory across the NVLink domain (GB200 NVL72) is not "
        "ready (DCGM's NVLink watch): jobs that span the domain's nodes cannot use NVLink.",
        _switch(S.ERROR, A.CHECK_NETWORK, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "fabric.sxid",
        r"nvidia-nvswitch\d+: SXid \((?:PCI:)?(?P<pci>[^)]*)\): (?P<sxid>\d+),\s*"
        r"(?:(?P<said>Non-fatal|Fatal)\b)?",
        ("sxid",),
        "An NVSwitch SXid: the catalog's class and action per code (diagnosis/catalog/"
        "sxid.py), the line's own Fatal/Non-fatal word first. Continuation lines (Severity, "
        "Data) carry the code alone and get the catalog class.",
        judge=_sxid,
    ),
    rule(
        "fabric.fm_sxid",
        r"detected NVSwitch (?P<said>fatal|non-fatal) error (?P<sxid>\d+) on fid \d+ "
        r"on NVSwitch pci bus id (?P<pci>\S+)",
        ("detected nvswitch",),
        "Fabric Manager's report of an SXid (same code space and policy as the kernel line).",
        judge=_sxid,
    ),
    rule(
        "fabric.fm_topology",
        r"don't match with any supported system topology|aborting fabric manager",
        ("supported system topology", "aborting fabric manager"),
        "Fabric Manager found fewer NVSwitches than the system needs and exited: no NVLink "
        "fabric, CUDA init fails (cudaErrorSystemNotReady). A switch or its firmware is missing.",
        _switch(S.CRITICAL, A.HARDWARE_INSPECTION, 0.8),
    ),
    rule(
        "fabric.fm_multicast",
        r"failed to find the GPU handle \d+ in the multicast team",
        ("multicast team",),
        "Fabric Manager could not set up an NVLink multicast team (NVLS): a GPU left the "
        "fabric; gpud treats it as an NVLink failure. Reboot the node.",
        _switch(S.ERROR, A.REBOOT_NODE, 0.65),
    ),
    rule(
        "fabric.no_nvswitch",
        r"\bno NVSwitch(?:es)?\b|\bwithout NVSwitch(?:es)?\b",
        ("no nvswitch", "without nvswitch"),
        "The text says the machine has no NVSwitch: Fabric Manager refuses to run by design "
        "there and CUDA works without it; no fault, and it explains FM's failed start in the "
        "same input (EXPLAINED_BY). FM's own `NV_WARN_NOTHING_TO_DO` alone is read as the "
        "fabric's failure, as gpud reads it.",
        verdict(C.BENIGN, INFRA, K.SWITCH, S.INFO, A.NONE, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "fabric.fm_config_invalid",
        # FM's config parser on a key it rejects (`fabric manager config file item:
        # FABRIC_NODE_CONFIG_FILE has an invalid value`)
        r"\bfabric manager config file item: \w+ has an invalid value\b",
        ("config file item",),
        "Fabric Manager rejects an item of its configuration file and exits: the node's "
        "software setup (the file or the package that ships it), not the fabric.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.5),
        flags=re.IGNORECASE,
    ),
    rule(
        "fabric.fm_driver_query",
        r"request to query NVSwitch device information from NVSwitch driver failed",
        ("nvswitch driver failed",),
        "Fabric Manager cannot talk to the NVSwitch driver: the fabric is not managed. On a "
        "machine the text says has no NVSwitch (a PCIe box) it is FM's normal refusal, and no "
        "finding.",
        judge=lambda m: _fm_applies(m, _switch(S.ERROR, A.REBOOT_NODE, 0.65)),
    ),
    rule(
        FM_VERSION_MISMATCH,
        # FM's own words for a driver of another version (`fabric manager NVIDIA GPU driver
        # interface version 530.30.02 don't match with driver version 530.41.03`)
        r"\bfabric manager NVIDIA GPU driver interface version \S+ don't match with driver"
        r" version",
        ("don't match",),
        "Fabric Manager's package and the loaded GPU driver are of different versions, so FM "
        "will not start: install the FM package of the driver's exact version. The node's "
        "software setup (as NVML's `Driver/library version mismatch`), not the fabric; it "
        "explains FM's failed start in the same input (EXPLAINED_BY).",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "fabric.fm_not_started",
        # systemd's words for the unit that would not start (systemctl's, journald's)
        r"\bJob for nvidia-fabricmanager\.service failed\b|"
        + unit_failed("nvidia-fabricmanager", "NVIDIA fabric manager service")
        # systemctl status's failed start
        + r"|\bProcess: \d+ ExecStart=\S*nv-fabricmanager\b.*\bstatus=[1-9]",
        ("nvidia-fabricmanager", "fabric manager service", "nv-fabricmanager"),
        "Fabric Manager's service would not start (systemd): the NVSwitch fabric is not set up, "
        "so CUDA fails to initialise on every GPU of an NVSwitch node. Its journal says why "
        "(a driver version it does not match, a switch missing). On a machine the text says has "
        "no NVSwitch (a PCIe box) it is FM's normal refusal, and no finding.",
        judge=lambda m: _fm_applies(m, _switch(S.ERROR, A.CAPTURE_DIAGNOSTICS, 0.55)),
    ),
    rule(
        "fabric.cuda_not_ready",
        # CUDA's cudaErrorSystemNotReady (802): on an NVSwitch node, the fabric not set up yet
        r"\b(?:Error|error|err(?:or)? code)\s*802\b[^\n]{0,10}?system not yet initiali[sz]ed"
        r"|\bcudaErrorSystemNotReady\b|\bCUDA_ERROR_SYSTEM_NOT_READY\b"
        r"|\bCUDA error: system not yet initiali[sz]ed\b|\bcudaGetDeviceCount returned 802\b"
        # a CUDA failure printed with the runtime's words alone (`Test CUDA failure common.cu:1030
        # 'system not yet initialized'`, `failed to initialize CUDA: system not yet initialized`)
        r"|\bCUDA\b[^\n]{0,40}?\b(?:failure|failed|error)\b[^\n]{0,40}?"
        r"'?system not yet initiali[sz]ed\b"
        r"|\b(?:failed|unable)\s+to\s+initiali[sz]e\s+CUDA:\s+system not yet initiali[sz]ed\b"
        # the same told with its number (`CUDA initialization fails with 802 system error`)
        r"|\bCUDA\s+(?:initiali[sz]ation|init)\s+(?:fails?|failed|failing)\s+with\s+(?:error\s+)?802\b",
        ("802", "systemnotready", "system_not_ready", "not yet initiali"),
        "CUDA refuses to start with `system not yet initialized` (802, cudaErrorSystemNotReady): "
        "on an NVSwitch node the fabric is not set up (Fabric Manager not running, not "
        "finished, or its version not the driver's): the node's setup, and every GPU of the "
        "node is unusable until it is. On a machine the text says has no NVSwitch it is no "
        "fabric's.",
        judge=lambda m: _fm_applies(m, _NODE_SETUP),
    ),
    rule(
        "fabric.fm_error",
        r"^\[\w{3} \d\d \d{4} \d\d:\d\d:\d\d\] \[ERROR\]",
        ("[error]",),
        "Any other Fabric Manager [ERROR] line (its own timestamp format): weak evidence.",
        _switch(S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.4),
    ),
    rule(
        "fabric.peermem",
        r"nvidia-peermem \w+:\d+ ERROR|\bnv_mem nv_get_p2p_free_callback:\d+ .*\binvalid\b",
        ("nvidia-peermem", "nv_get_p2p_free_callback"),
        "nvidia-peermem (GPUDirect RDMA) freed a mapping whose context is gone; repeated, gpud "
        "reads it as inter-node communication trouble. Warning: check the NIC/driver versions.",
        verdict(C.NETWORK, INFRA, K.NIC, S.WARNING, A.CHECK_NETWORK, 0.55),
    ),
    rule(
        "fabric.peermem_missing",
        r"(?:Failed to load|could not insert(?: module)?|ERROR: Module) '?(?:nv_peer_mem"
        r"|nvidia[-_]peermem)\b|\b(?:nv_peer_mem|nvidia[-_]peermem): (?:disagrees about version "
        r"of symbol|Unknown symbol) \w+"
        # not registered with the IB core (its sysfs entry missing), or not loaded
        r"|/sys/kernel/mm/memory_peers/nv_mem\w*/version: No such file or directory"
        r"|\b(?:nv_peer_mem|nvidia[-_]peermem)\b[^.\n]{0,30}?\b(?:isn't|is\s+not|not)\s+"
        r"(?:found\s+in|listed\s+(?:in|by)|shown\s+(?:in|by))\s+lsmod\b",
        (
            "memory_peers",
            "lsmod",
            "failed to load",
            "could not insert",
            "error: module",
            "disagrees about version",
            "unknown symbol",
        ),
        "The GPUDirect RDMA peer-memory module (nvidia-peermem / nv_peer_mem) is missing or "
        "does not load (built for another driver or IB stack; the module loader's 'disagrees "
        "about version of symbol' / 'Unknown symbol' lines), not loaded (absent from lsmod) or "
        "not registered with the IB core (its memory_peers entry missing): NCCL disables "
        "GPUDirect RDMA and stages through host memory, or fails to register GPU buffers.",
        verdict(C.NETWORK, INFRA, K.NIC, S.ERROR, A.CHECK_NETWORK, 0.6),
    ),
)
