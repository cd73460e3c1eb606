"""GPU rules: Xid lines, the driver's other NVRM messages, nvidia-smi/dcgmi (CUDA's errors as
programs print them: rules_cuda).

Every pattern is written from a real line: real_logs (xid-*, gsp-timeout, gpu-fallen-off-bus-
no-xid, gpu-lost-pcie, cuda-*), real_samples (nvidia-smi -q, dcgmi diag) and the lines
``sim/formats`` copies (public_lines xid-48/64/74/95/119-modern/149/154, cuda-oom-full, ...).
"""

from __future__ import annotations

import re
from dataclasses import replace

from diagnosis.catalog import Verdict, xid_entry
from diagnosis.explain.nv_status import NVML_REFUSED
from diagnosis.explain.rules import (
    SPEAKER_WORDS,
    Rule,
    gpu_hardware,
    rule,
    sentence_bounds,
    verdict,
)
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
_PCI = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
_NVLINK5 = range(144, 151)
_RECOVERY = re.compile(r"recovery action changed from .* to 0x[0-9a-f]+ \((?P<action>[^)]*)\)")


def _recovery_verdict(base: Verdict, detail: str) -> Verdict:
    """Return the Xid 154 verdict for the recovery action the driver now asks for."""
    m = _RECOVERY.search(detail)
    wanted = m["action"].lower() if m else ""
    if wanted == "none":
        return replace(base, category=C.BENIGN, blame=B.UNKNOWN, severity=S.INFO, action=A.NONE)
    if "reboot" in wanted:
        return replace(base, severity=S.CRITICAL, action=A.REBOOT_NODE)
    if "drain p2p" in wanted:
        return replace(base, action=A.RESTART_JOB)
    return base


def xid_policy(m: re.Match[str]) -> Verdict:
    """Return the Xid catalogue's verdict for the Xid a line names (its ``xid`` group): for
    the tools that pass the driver's Xid on (DCGM, NVIDIA's device plugin, the HGX BMC,
    dcgm-exporter)."""
    return xid_entry(int(m["xid"])).policy.verdict


def _xid_verdict(m: re.Match[str]) -> Verdict:
    """Return the catalog's verdict for the Xid in `m`, refined by the line's own words."""
    code = int(m["xid"])
    base = xid_policy(m)
    detail = m["detail"]
    if code == 154:
        return _recovery_verdict(base, detail)
    if code in _NVLINK5 and re.search(r"\bNonfatal\b", detail):
        return replace(base, severity=S.WARNING, action=A.MONITOR)
    return base


SRAM_UE_RMA = 4
"""More uncorrectable SRAM errors than this on one GPU is a reason to RMA it (NVIDIA's
memory-error guidance, as the ml-engineering troubleshooting guide quotes it)."""


def _ecc_counter_verdict(m: re.Match[str]) -> Verdict:
    """Return degraded for an ECC/remap counter above zero, hardware past the SRAM RMA count."""
    if m["kind"] == "SRAM" and int(m["count"]) > SRAM_UE_RMA:
        return gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.6)
    return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.MONITOR, 0.5)


SBE_MANY = 1000
"""Correctable (single-bit) ECC errors on one GPU from which the count alone is degradation: a
healthy GPU corrects a handful; Xid 92 ('high single-bit ECC error rate') names the same state."""
_SLOWDOWN = "HW Slowdown|HW Thermal Slowdown|HW Power Brake Slowdown|SW Thermal Slowdown"
_SLOWDOWN_XML = "hw_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown|sw_thermal_slowdown"


SLOWDOWN_BITS = 0x8 | 0x20 | 0x40 | 0x80
"""NVML's clocks-event reasons that cut a GPU's clocks: HW slowdown, SW and HW thermal slowdown,
HW power brake (nvmlClocksEventReason*, the bits of DCGM_FI_DEV_CLOCK_THROTTLE_REASONS)."""


_SEARCHED = re.compile(
    r"\b(?:grep\w*|search\w*|look(?:ing)?\s+for|check\w*\s+for|alert\w*\s+(?:on|if|when)|if|whether|"
    r"watch\w*\s+for|ruled\s+out|when|fires|runbook|means)\b[^\n]{0,40}$",
    re.IGNORECASE,
)
_NOT_FOUND = re.compile(
    r"^[^\n]{0,60}?\b(?:returned\s+nothing|no\s+match\w*|not\s+found|never|means|is\s+normal)\b",
    re.IGNORECASE,
)


def _clocks_slowdown(m: re.Match[str]) -> Verdict | None:
    """Return GPU degradation on a slowdown reason that is active, unless the line quotes it as
    a search (`grep '...'`, `alert if ...`, `... returned nothing`)."""
    before, after = m.string[: m.start()], m.string[m.end() :]
    if _SEARCHED.search(before) or _NOT_FOUND.match(after):
        return None
    return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.6)


def _slowdown_mask(m: re.Match[str]) -> Verdict | None:
    """Return GPU degradation when the mask holds a slowdown reason (module constants), unless
    the line explains the field (a runbook's `8 means HW slowdown`, a question)."""
    if _SEARCHED.search(m.string[: m.start()]) or _NOT_FOUND.match(m.string[m.end() :]):
        return None
    mask = int(m["mask"], 16) if m["mask"].lower().startswith("0x") else int(m["mask"])
    if not mask & SLOWDOWN_BITS:
        return None
    return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.6)


def _dcgm_memory_field(m: re.Match[str]) -> Verdict | None:
    """Return the verdict of a DCGM memory field with a value (None when it is healthy)."""
    value = float(m["value"].replace(",", ""))
    if value <= 0:
        return None
    field = m["field"]
    if field == "ROW_REMAP_FAILURE":
        return gpu_hardware(S.CRITICAL, A.ISOLATE_GPU, 0.8)
    if field == "ROW_REMAP_PENDING":
        return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.RESET_GPU, 0.6)
    if field.startswith("ECC_SBE") and not m["rate"] and value < SBE_MANY:
        return None
    return verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.MONITOR, 0.5)


XID_DEFINED = "gpu.xid_defined"
XID_INJECTED = "gpu.xid_injected"
EXPLAINED_BY: dict[str, frozenset[str]] = {
    "gpu.xid": frozenset({XID_DEFINED, XID_INJECTED}),
    "gpu.fell_off_bus": frozenset({XID_INJECTED}),
}
"""An Xid line in an input that defines its code as a catalogue does (the page's example) or
says the Xid was injected (a fault-injection test's)."""

_OWN_REPORT = re.compile(
    SPEAKER_WORDS + r"|\b(?:see|saw|seeing|got|reported|happen\w*)\b|\bon\s+node\b",
    re.IGNORECASE,
)
_NOT_INJECTED = re.compile(
    r"\b(?:not|cannot|never|without|unlike)\b|n['’]t\b|\bno\s+way\b|\bis\s+there\b"
    r"|\bhow\s+(?:do|can|to)\b",
    re.IGNORECASE,
)
_PAGE_SAYS = verdict(C.BENIGN, INFRA, K.GPU, S.INFO, A.NONE, 0.4)


def _defined(m: re.Match[str]) -> Verdict | None:
    """A definition, unless its line tells the speaker's own event (`Xid 79 = GPU has fallen off
    the bus. We see it on node 7 every night:`)."""
    return None if _OWN_REPORT.search(m.string) else _PAGE_SAYS


def _injected(m: re.Match[str]) -> Verdict | None:
    """An injection, unless the line denies it or asks about one (`We cannot inject Xids here`,
    `Is there a way to inject Xid errors?`) or sets it apart (`Unlike the test where we injected
    Xids, ...`)."""
    start, end = sentence_bounds(m)
    if _NOT_INJECTED.search(m.string, start, m.start()) or m.string[end : end + 1] == "?":
        return None
    return _PAGE_SAYS


RULES: tuple[Rule, ...] = (
    rule(
        XID_DEFINED,
        # a catalogue's or an explainer's equation (`Xid 43 = GPU stopped processing`): a page
        # that teaches the code, whose sample line (`로그 예시:` ...) is no event
        r"^\W*Xid\s*\d+\s*=\s*[A-Za-z]",
        ("xid",),
        "A line that defines an Xid code (`Xid 43 = GPU stopped processing`), as a catalogue or "
        "an explainer does: documentation; the Xid line it gives as an example in the same "
        "input is no event (EXPLAINED_BY); not when the line tells the speaker's own event.",
        judge=_defined,
        flags=re.IGNORECASE,
    ),
    rule(
        XID_INJECTED,
        # a fault injector's words for its own Xid (`An injected Xid now reaches the node's
        # kernel log`, `inject Xid 79 on GPU 0`)
        r"\binjected\s+Xids?\b|\binject(?:s|ing)?\s+(?:an?\s+|the\s+)?Xids?\b"
        r"|\bXids?\s+(?:\d+\s+|errors?\s+)?(?:(?:was|were|is|are)\s+)?injected\b",
        ("inject",),
        "The text says the Xid was injected (a fault-injection tool, a simulator, a test of the "
        "health checks): the Xid line it shows is the test's, no GPU fault (EXPLAINED_BY); not "
        "when the sentence denies or asks about an injection.",
        judge=_injected,
        flags=re.IGNORECASE,
    ),
    rule(
        "gpu.xid",
        r"NVRM: Xid \((?:PCI:)?(?P<pci>[^)]*?)(?: GPU-I:\d+)?\): (?P<xid>\d+),?\s*(?P<detail>.*)",
        ("xid",),
        "Any Xid line: the catalog's per-code policy (diagnosis/catalog), refined for Xid 154's "
        "new recovery action and NVLink5 'Nonfatal' events.",
        judge=_xid_verdict,
    ),
    rule(
        "gpu.fell_off_bus",
        rf"(?:GPU (?P<pci>{_PCI})[:\s].*)?fallen off the bus",
        ("fallen off the bus",),
        "The driver lost the GPU on PCIe without (or before) an Xid 79: same policy as Xid 79.",
        gpu_hardware(S.CRITICAL, A.REBOOT_NODE, 0.9),
    ),
    rule(
        "gpu.config_space_lost",
        # lspci's revision read as 0xff: the device's config space answers all ones, as a GPU
        # that fell off the bus does
        r"\b(?:3D controller|VGA compatible controller|Display controller): NVIDIA\b[^\n]*"
        r"\(rev ff\)",
        ("rev ff",),
        "lspci reads an NVIDIA GPU's revision as ff: its config space answers all ones, the GPU "
        "fell off the bus (as Xid 79): drain the node and reset or replace the GPU.",
        gpu_hardware(S.CRITICAL, A.REBOOT_NODE, 0.8),
    ),
    rule(
        "gpu.gsp_timeout",
        r"GPU(?P<gpu>\d+) _kgsp\w*(?:TimedOut|Timeout)\b|GSP Timeout",
        ("kgsp", "gsp timeout"),
        "GSP heartbeat or RPC timeout without an Xid line: same policy as Xid 119 (reboot).",
        gpu_hardware(S.CRITICAL, A.REBOOT_NODE, 0.85),
    ),
    rule(
        "gpu.pmu_halted",
        r"GPU(?P<gpu>\d+) _kgspRpcGspEventPmuHalted|PMU has halted",
        ("pmu has halted", "pmuhalted"),
        "GSP reports the PMU halted (companion of Xid 62): same policy as Xid 62.",
        gpu_hardware(S.CRITICAL, A.RESET_GPU, 0.8),
    ),
    rule(
        "gpu.memory_subsystem",
        r"GPU(?P<gpu>\d+) \w+: .*(?:Memory Subsystem Error|timeout error waiting for startToken)",
        ("memory subsystem error", "waiting for starttoken"),
        "The driver's memory-subsystem/sysmembar failures (GSP timeout family, real_logs "
        "gsp-timeout).",
        gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.7),
    ),
    rule(
        "gpu.probe_failed",
        r"NVIDIA probe routine failed",
        ("probe routine failed",),
        "The driver could not initialise a GPU at load (follows an off-the-bus notice).",
        gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.6),
    ),
    rule(
        "gpu.lost",
        rf"Unable to determine the device handle for GPU ?(?P<pci>{_PCI})"
        # (not a caller NVML may not serve: rules_driver's nvml.access_denied)
        + NVML_REFUSED,
        ("unable to determine the device handle",),
        "nvidia-smi cannot reach the GPU (user-visible side of Xid 79, real_logs gpu-lost-pcie).",
        gpu_hardware(S.CRITICAL, A.REBOOT_NODE, 0.75),
    ),
    rule(
        "gpu.remap_failure",
        r"^\s*Remapping Failure Occurred\s*:\s*Yes\b",
        ("remapping failure",),
        "nvidia-smi -q: a row remap failed, as Xid 64.",
        gpu_hardware(S.CRITICAL, A.ISOLATE_GPU, 0.8),
    ),
    rule(
        "gpu.remap_pending",
        r"^\s*Pending(?: Page Blacklist)?\s*:\s*Yes\b"
        r"|(?<!\bNo )(?<!\bno )row[\s|]+remappings are pending"
        # (not one that went away: `the 'Pending: Yes' ... went away`)
        r"|['\"‘“]Pending(?: Page Blacklist)?\s*:\s*Yes['\"’”]"
        r"(?![^\n]*\b(?:went\s+away|cleared|now\s+shows)\b)"
        r"|\bRemapped\s+Rows:\s*Pending:\s*Yes\b"
        r"|\bretired\s+pages?\s+pending\s*[:=]?\s*Yes\b"
        r"|\bpending\s+(?:page\s+)?retirement\s*[:=]?\s*Yes\b",
        ("pending",),
        "nvidia-smi -q 'Remapped Rows / Pending: Yes' (or dcgmi's wording): a reset applies the "
        "remap, as Xid 63.",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.RESET_GPU, 0.6),
    ),
    rule(
        "gpu.dcgm_memory",
        r"GPU (?P<gpu>\d+) has uncorrectable memory errors"
        r"|GPU Memory\s*\|\s*Fail - GPU: (?P<gpu2>\d+)",
        ("uncorrectable memory errors", "fail - gpu"),
        "dcgmi diag reports uncorrectable GPU memory errors or a failed memory test.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.7),
    ),
    rule(
        "gpu.dcgm_fail",
        r"\|\s*Fail - GPUs?: (?P<gpu>\d+)"
        # a person quoting dcgmi's verdict for a test on every GPU (`only returns "PCIe Fail -
        # All"`)
        # (quoted: the table's own row `| PCIe | Fail - All |` is read with its warnings, and on
        # PCIe cards is DCGM's link-0 false alarm, rules_driver.nvlink.dcgm_link_zero)
        r"|(?<=[\"'“])(?:PCIe|Memory|Diagnostic|Targeted Stress|Targeted Power|Memory Bandwidth"
        r"|SM Stress|EUD|Pulse Test|NVBandwidth) Fail - All\b",
        ("fail - gpu", "fail - all"),
        "A dcgmi diag test failed on a GPU (the test row names it): the GPU, until a rerun "
        "says otherwise.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.6),
    ),
    rule(
        "gpu.ecc_counter",
        r"^\s*(?:(?P<kind>SRAM|DRAM) )?Uncorrectable(?: Error)?\s*:\s*(?P<count>[1-9]\d*)\s*$",
        ("uncorrectable",),
        "nvidia-smi -q ECC/remap counter above zero: history, not an event; may be aggregate. "
        "Past the SRAM RMA count (more than 4 uncorrectable SRAM errors) the GPU is hardware.",
        judge=_ecc_counter_verdict,
    ),
    rule(
        "gpu.thermal_violation",
        r"GPU (?P<gpu>\d+) Thermal violations|Thermal violations totaling [\d.]+ seconds"
        r"|Detected clock(?:s event| throttling) due to thermal violation in GPU (?P<gpu2>\d+)",
        ("thermal violations", "thermal violation in gpu"),
        "DCGM's thermal messages (dcgm_errors.h: diag 'Thermal violations totaling ...', health "
        "watch 'Detected clocks event / clock throttling due to thermal violation in GPU N'): "
        "the GPU throttles its clocks for heat (cooling, fan, thermal interface).",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.6),
    ),
    rule(
        "gpu.clocks_slowdown",
        rf"^\s*(?:{_SLOWDOWN})\s*:\s*Active\b|['‘\"“](?:{_SLOWDOWN})\s*:\s*Active\b"
        rf"|<clocks_(?:throttle|event)_reason_(?:{_SLOWDOWN_XML})>\s*Active\s*<"
        rf"|\bclocks_(?:throttle|event)_reasons\.(?:{_SLOWDOWN_XML})\s*[:=]\s*Active\b",
        ("slowdown",),
        "nvidia-smi -q 'Clocks Throttle Reasons' / 'Clocks Event Reasons' (and its -x XML): a "
        "hardware slowdown (thermal, power brake) or the driver's thermal slowdown is active. "
        "NVML documents HW Slowdown as clocks cut by half or more for heat, an external power "
        "brake (PSU, BMC) or a power spike. 'SW Power Cap' and 'Idle' are normal and are not "
        "matched; 'Not Active', 'N/A' and the event counters (a duration, not 'Active') are not. "
        "Also quoted in a sentence, and as --query-gpu's field (clocks_event_reasons.hw_slowdown); "
        "a quote that is a search (`grep 'HW Slowdown: Active' ... returned nothing`) is not.",
        judge=_clocks_slowdown,
    ),
    rule(
        "gpu.clock_reasons_mask",
        # a value after the name, its Prometheus labels or `=`/`:` (not a field id in brackets)
        r"\bDCGM_FI_DEV_CLOCKS?_(?:THROTTLE|EVENT)_REASONS\b(?:\{[^}\n]*\})?\s*[=:]?\s*"
        r"(?P<mask>0x[0-9a-fA-F]+|\d+)\b(?!\s*\))",
        ("dcgm_fi_dev_clock",),
        "DCGM's clock-event reasons field, a bit mask of NVML's reasons: a hardware slowdown "
        "(0x8), the driver's or the hardware's thermal slowdown (0x20, 0x40) or a power brake "
        "(0x80) is a GPU cut below its clocks; idle, the application's clocks, the power cap and "
        "sync boost (0x1, 0x2, 0x4, 0x10) are normal.",
        judge=_slowdown_mask,
    ),
    rule(
        "gpu.throttled_below_threshold",
        r"GPU throttled below threshold \([\d.]+ ?MHz / [\d.]+ ?MHz\)",
        ("throttled below threshold",),
        "NVBench's throttle check (its 'GPU throttled below threshold (cur MHz / default MHz) "
        "(p% < t%)' warning): the SM clock fell below the configured share of its default.",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.5),
    ),
    rule(
        "gpu.dcgm_memory_field",
        r"\b(?:DCGM_FI_DEV_)?(?P<field>ECC_SBE_(?:VOL|AGG)_TOTAL|ROW_REMAP_PENDING"
        r"|ROW_REMAP_FAILURE|UNCORRECTABLE_REMAPPED_ROWS)\b`?(?:\{[^}]*\})?[`\s|:=,]*"
        r"(?:rate[\s|:=]*)?(?P<value>\d[\d,]*(?:\.\d+)?(?:[eE]\+?\d+)?)(?P<rate>/s)?",
        ("ecc_sbe_", "row_remap_", "uncorrectable_remapped_rows"),
        "A DCGM memory-health field with its value (dcgmi/dcgm-exporter 'DCGM_FI_DEV_<field>', "
        "Prometheus '<field>{...} N', or a table row): a pending row remap is as 'Pending: Yes', "
        "a remap failure as 'Remapping Failure Occurred: Yes', uncorrectable remapped rows as "
        "the nvidia-smi counter; correctable (single-bit) errors count only as a rate or in the "
        f"thousands (>= {SBE_MANY}), far beyond what a healthy GPU corrects.",
        judge=_dcgm_memory_field,
    ),
    rule(
        "gpu.memory_test_errors",
        # memtestG80's (and memtestCL's) running count of a GPU's memory errors (`Test iteration
        # 50 (GPU 0, 128 MiB): 45528 errors so far`)
        r"\bTest iteration \d+ \(GPU (?P<gpu>\d+), \d+ MiB\): [1-9]\d* errors so far",
        ("errors so far",),
        "A GPU memory tester found errors in the GPU's memory (memtestG80): without ECC to hide "
        "them, the GPU corrupts data (NaNs, crashes); replace the card.",
        gpu_hardware(S.ERROR, A.ISOLATE_GPU, 0.75),
    ),
    rule(
        "gpu.diag_gflops",
        r"GPU (?P<gpu>\d+) calculated at approximately [\d.]+ gigaflops during this test",
        ("gigaflops during this test",),
        "DCGM's diagnostic reports the rate a GPU reached: information on its own; with the "
        "test's 'status': 'Fail' in the same JSON result the engine reports a slow GPU.",
        verdict(C.BENIGN, B.UNKNOWN, K.GPU, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "gpu.below_performance",
        r"Detected [\d.]+ \S+ for GPU (?P<gpu>\d+) which is below the threshold [\d.]+"
        r"|did not reach desired stress level of [\d.]+ for GPU (?P<gpu2>\d+)",
        ("which is below the threshold", "did not reach desired stress level"),
        "DCGM measured a GPU below its expected performance (dcgm_errors.h "
        "DCGM_FR_PERF_THRESHOLD 'Detected N <unit> for GPU N which is below the threshold N', "
        "DCGM_FR_STRESS_LEVEL): a fail-slow GPU that slows every collective it is in.",
        verdict(C.STRAGGLER, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.6),
    ),
)
