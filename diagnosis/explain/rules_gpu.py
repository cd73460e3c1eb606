"""GPU rules: Xid lines, the driver's other NVRM messages, nvidia-smi/dcgmi and CUDA errors.

Every pattern is written from a real line: real_logs (xid-*, gsp-timeout, gpu-fallen-off-bus-
no-xid, gpu-lost-pcie, cuda-*), real_samples (nvidia-smi -q, dcgmi diag) and the lines
``sim/formats`` copies (public_lines xid-48/64/74/95/119-modern/149/154, cuda-oom-full, ...).
"""

from __future__ import annotations

import re
from dataclasses import replace

from diagnosis.catalog import Verdict, xid_entry
from diagnosis.explain.nv_status import NVML_REFUSED
from diagnosis.explain.rules import Rule, gpu_hardware, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA, APP = B.INFRASTRUCTURE, B.APPLICATION
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


RULES: tuple[Rule, ...] = (
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

_CUDA = "(?:CUDA error|(?i:cuda runtime error)(?: \\(\\d+\\))?|Cuda failure \\d*)\\W*"

CUDA_RULES: tuple[Rule, ...] = (
    rule(
        "cuda.ecc",
        r"uncorrectable ECC error encountered",
        ("uncorrectable ecc error",),
        "CUDA reports an uncorrectable ECC error: the GPU's memory failed (real_logs cuda-ecc).",
        gpu_hardware(S.CRITICAL, A.RESET_GPU, 0.9),
    ),
    rule(
        "cuda.nvlink",
        r"\buncorrectable\s+NVLink\s+errors?\b",
        ("uncorrectable nvlink error",),
        "CUDA (or the driver, tearing down the job's channels) reports an uncorrectable "
        "NVLink error during a kernel.",
        gpu_hardware(S.CRITICAL, A.REBOOT_NODE, 0.85),
        flags=re.IGNORECASE,
    ),
    rule(
        "cuda.contained",
        r"CUDA_ERROR_CONTAINED|cudaErrorContained|Invalid access of peer GPU memory over nvlink "
        r"or a hardware error",
        ("contained", "invalid access of peer gpu memory"),
        "CUDA's contained error (CUDA_ERROR_CONTAINED): the GPU stopped a kernel that read "
        "poisoned memory or a peer GPU's memory over a failing NVLink (the driver logs Xid "
        "94/95 or an NVLink Xid beside it). The process must be restarted; hardware, with the "
        "GPU or its NVLink to check.",
        gpu_hardware(S.CRITICAL, A.RESET_GPU, 0.75),
    ),
    rule(
        "cuda.oom",
        r"(?:OutOfMemoryError: )?CUDA out of memory\.(?:.*?GPU (?P<gpu>\d+) has a total capacity)?"
        r"|(?<!ray\.exceptions\.)OutOfMemoryError|" + _CUDA + r"'?out of memory"
        # CTranslate2's (`RuntimeError: CUDA failed with error out of memory`)
        r"|\bCUDA failed with error out of memory\b"
        # HAMi-core's vGPU allocator past the memory limit it enforces (`[HAMI-core ERROR ...]:
        # Device 0 OOM 10852066933 / 10307502080`)
        r"|(?:vGPU|HAMI-core) ERROR [^\n]*\]: Device \d+ OOM \d+ / \d+"
        # PaddlePaddle's out-of-memory error in Chinese (`GPU 0上出现内存不足错误。无法在GPU 0上分配
        # 50.000000MB内存`)
        r"|\bGPU ?\d+ ?上出现内存不足|无法在 ?GPU ?\d+ ?上分配"
        r"|CUBLAS_STATUS_ALLOC_FAILED"
        # TensorFlow's and XLA's (JAX) words for the same (not the allocator's own warning, which
        # TensorFlow recovers from: `The caller indicates that this is not a failure`)
        r"|\bOOM when allocating tensor\b[^\n]*\bGPU[_:]\d+"
        r"|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate\b"
        # XLA's GPU allocator (`RESOURCE_EXHAUSTED: Failed to allocate request for 6.27GiB
        # (6727663616B) on device ordinal 0`), the driver API's name, Apple Metal's command buffer
        r"|\bRESOURCE_EXHAUSTED: Failed to allocate request for [\d.]+\s*[KMGT]?i?B\b[^\n]{0,30}?"
        r"\bon device ordinal \d+"
        r"|\bCUDA_ERROR_OUT_OF_MEMORY\b|\bkIOGPUCommandBufferCallbackErrorOutOfMemory\b"
        # a miner's (T-Rex: `GPU #0: not enough free memory to mine ethash at epoch 462`)
        r"|\bGPU ?#?\d+: not enough free memory\b"
        # PaddlePaddle's (`ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate`)
        r"|\bOut of memory error on GPU \d+\b"
        # TensorRT's builder (`Error Code 2: OutOfMemory (no further information)`, `Requested
        # amount of GPU memory (24793579520 bytes) could not be allocated`)
        r"|\bError Code 2: OutOfMemory\b"
        r"|\bRequested amount of GPU memory \(\d+ bytes\) could not be allocated\b"
        # TensorRT-LLM's check of a CUDA call (`CUDA runtime error in ::cudaMallocAsync(ptr, n,
        # mCudaStream->get()): out of memory (/app/.../tllmBuffers.h:112)`), also cut by a
        # terminal inside the call
        r"|\bCUDA runtime error in [^\n]*?: out of memory\b|\)\): out of memory \(\S+:\d+\)"
        # the runtime API's name (Kokkos: `error( cudaErrorMemoryAllocation): out of memory`)
        r"|\bcudaErrorMemoryAllocation\b",
        (
            *("out of memory", "outofmemoryerror", "alloc_failed", "oom when allocating"),
            *("free memory", "outofmemory", "could not be allocated", "cudaerrormemoryallocation"),
            *(" oom ", "上出现内存不足", "上分配", "failed to allocate request", "out_of_memory"),
            "erroroutofmemory",
        ),
        "The job asked for more GPU memory than is free: fix batch size/parallelism (blame "
        "application), unless another process holds the memory (the message names it).",
        verdict(C.GPU_OOM, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.9),
    ),
    rule(
        "cuda.device_assert",
        r"device-side assert(?:ion)? triggered|block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] "
        r"Assertion .* failed",
        ("device-side assert", "assertion"),
        "A device-side assertion in a kernel, usually an index out of range in user data "
        "(real_logs cuda-device-assert).",
        verdict(C.GPU_APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.9),
    ),
    rule(
        "cuda.illegal_address",
        r"an illegal memory access was encountered|misaligned address|"
        r"an illegal instruction was encountered"
        # the driver API's name for it (CUDA_ERROR_ILLEGAL_ADDRESS), as Blender's Cycles prints
        # it (`CUDA error: Illegal address in cuCtxSynchronize()`)
        r"|\bCUDA error: Illegal address in cu\w+\(\)|\bCUDA_ERROR_ILLEGAL_ADDRESS\b"
        # the runtime API's name (the CUDA samples' checkCudaErrors:
        # `code=700(cudaErrorIllegalAddress)`)
        r"|\bcudaErrorIllegalAddress\b",
        (
            *("illegal memory access", "misaligned address", "illegal instruction"),
            *("illegal address in cu", "cuda_error_illegal_address", "cudaerrorillegaladdress"),
        ),
        "A kernel touched memory it must not: the job's code (the kernel side is Xid 13/31). "
        "Hardware only when it repeats on one GPU across jobs.",
        verdict(C.GPU_APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.75),
    ),
    rule(
        "cuda.debugger_exception",
        # cuda-gdb's exceptions (`CUDA Exception: Warp Out-of-range Address`, `received signal
        # CUDA_EXCEPTION_5`, `Illegal access to address (@shared)0xdc0 detected`) and
        # compute-sanitizer's memcheck and racecheck reports: a kernel's own bad access
        # (the debugger's own lines: a document naming an exception is no stop)
        r"^\s*CUDA Exception: (?:Lane|Warp|Device) [A-Z][\w -]*"
        r"|\breceived signal CUDA_EXCEPTION_\d+\b"
        r"|\bIllegal access to address \(@\w+\)0x[0-9a-fA-F]+ detected\b"
        r"|^=+\s+Invalid __(?:global|shared|local)__ (?:read|write|atomic) of size \d+"
        r"|^=+\s+(?:Race reported between|ERROR SUMMARY: [1-9]\d* errors?\b)",
        (
            *("cuda exception", "cuda_exception_", "illegal access to address", "invalid __"),
            *("race ", "error summary"),
        ),
        "cuda-gdb stopped a kernel on an exception (an out-of-range, misaligned or illegal "
        "address, an illegal instruction, a stack overflow) or compute-sanitizer found an "
        "invalid access or a race: the kernel's own code.",
        verdict(C.GPU_APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.75),
        flags=re.MULTILINE,
    ),
    rule(
        "cuda.launch_failure",
        r"unspecified launch failure|too many resources requested for launch"
        # a cuBLAS kernel that failed to run (`CUBLAS_STATUS_EXECUTION_FAILED when calling
        # cublasGemmEx(...)`)
        r"|CUBLAS_STATUS_EXECUTION_FAILED|\bCUDA error: invalid configuration argument\b",
        (
            *("launch failure", "resources requested for launch", "cublas_status_execution_failed"),
            "invalid configuration argument",
        ),
        "A kernel crashed ('segfault on the GPU'; cuBLAS's kernel failed to execute). Debatable: "
        "user kernels and their inputs are the usual cause, but Xid 13/31/62 can sit beside it; "
        "confidence is kept low.",
        verdict(C.GPU_APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "cuda.launch_timeout",
        # cudaErrorLaunchTimeout (error 6): the display watchdog ended a kernel that ran too long
        # (the driver logs Xid 8 beside it)
        r"\bthe launch timed out and was terminated\b|\bcudaErrorLaunchTimeout\b"
        r"|\bCUDA_ERROR_LAUNCH_TIMEOUT\b",
        ("launch timed out", "launchtimeout", "launch_timeout"),
        "A kernel ran past the watchdog's limit and was ended (cudaErrorLaunchTimeout, with Xid 8 "
        "in the kernel log): the program's kernel is too long for a GPU that drives a display or "
        "has its watchdog on; split the kernel or run it on a compute-only GPU.",
        verdict(C.GPU_APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "cuda.driver_too_old",
        # cudaErrorInsufficientDriver (error 35): the program's CUDA runtime is newer than the
        # driver (a container built for a newer CUDA than the node's driver)
        r"\bCUDA driver version is insufficient for CUDA runtime version\b"
        r"|\bcudaErrorInsufficientDriver\b",
        ("insufficient for cuda runtime", "cudaerrorinsufficientdriver"),
        "The program's CUDA runtime is newer than the node's driver (cudaErrorInsufficientDriver): "
        "the image or the driver to match, a setup error, not the GPU.",
        verdict(C.APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "cuda.unknown_error",
        _CUDA + r"'?unknown error|cudaErrorUnknown|Cuda failure 999",
        ("unknown error", "cudaerrorunknown", "failure 999"),
        "CUDA error 999: the driver or GPU is in a bad state (real_logs "
        "nccl-unhandled-cuda-error); a reset usually clears it.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.7),
    ),
    rule(
        "cuda.no_device",
        r"no CUDA-capable device is detected|all CUDA-capable devices are busy or unavailable"
        r"|CUDA driver initialization failed",
        ("cuda-capable device", "cuda driver initialization failed"),
        "The process sees no usable GPU: a GPU dropped out or the driver failed to load.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.5),
    ),
)
