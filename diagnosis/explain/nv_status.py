"""NVIDIA driver status codes (``NV_ERR_*``) that RM prints without an Xid: meaning and verdict.

Codes and names are those of ``src/common/sdk/nvidia/inc/nvstatuscodes.h`` in
NVIDIA/open-gpu-kernel-modules. The driver prints them as ``[NV_ERR_GPU_IS_LOST] (0x0000000F)``
in ``nvAssertOkFailedNoLog``/``nvCheckOkFailedNoLog`` lines, and as a bare number in
``rpcSendMessage failed with status 0x0000000f`` or ``GspRmAlloc failed: ... status=0x00000062``.

Only statuses that say something about the GPU's health get a verdict; the rest (invalid
arguments, unsupported calls, objects not found: what a bad ioctl or a fuzzer produces) are
silent, because a person would not act on them (the corpus labels them benign).
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnosis.catalog import Verdict
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity

NVML_REFUSED = (
    r"(?![^\n]{0,24}?(?:Insufficient Permissions|GPU access blocked|The operating system))"
)
"""After a device's address: not NVML refusing the caller (NVML_ERROR_NO_PERMISSION,
NVML_ERROR_OPERATING_SYSTEM), which rules_driver's nvml.access_denied reads as the caller's
setup, not a lost GPU."""


@dataclass(frozen=True)
class NvStatus:
    """One driver status with TrainGuard's reading."""

    code: int
    name: str
    meaning: str
    verdict: Verdict


def _gpu(category: Category, severity: Severity, action: Action, confidence: float) -> Verdict:
    """Return a verdict on the GPU."""
    return Verdict(category, Blame.INFRASTRUCTURE, ComponentKind.GPU, severity, action, confidence)


_HW = Category.GPU_HARDWARE
STATUSES: tuple[NvStatus, ...] = (
    NvStatus(0x0B, "NV_ERR_ECC_ERROR", "an ECC error the driver could not hide",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.7)),
    NvStatus(0x0F, "NV_ERR_GPU_IS_LOST", "the GPU fell off the bus (same as Xid 79)",
             _gpu(_HW, Severity.CRITICAL, Action.REBOOT_NODE, 0.85)),
    NvStatus(0x10, "NV_ERR_GPU_IN_FULLCHIP_RESET", "calls fail while the GPU is being reset",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.6)),
    NvStatus(0x11, "NV_ERR_GPU_NOT_FULL_POWER", "the GPU is not at full power",
             _gpu(_HW, Severity.ERROR, Action.HARDWARE_INSPECTION, 0.6)),
    NvStatus(0x1C, "NV_ERR_INSUFFICIENT_POWER", "the board reports insufficient power",
             _gpu(_HW, Severity.ERROR, Action.HARDWARE_INSPECTION, 0.6)),
    NvStatus(0x47, "NV_ERR_MEMORY_TRAINING_FAILED", "GPU memory training failed at init",
             _gpu(_HW, Severity.CRITICAL, Action.ISOLATE_GPU, 0.8)),
    NvStatus(0x51, "NV_ERR_NO_MEMORY", "the driver could not allocate GPU memory or address space",
             Verdict(Category.GPU_OOM, Blame.APPLICATION, ComponentKind.JOB, Severity.WARNING,
                     Action.FIX_APPLICATION, 0.45)),
    NvStatus(0x62, "NV_ERR_RESET_REQUIRED", "the GPU is in a state only a reset clears",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.85)),
    NvStatus(0x65, "NV_ERR_TIMEOUT", "a driver/firmware call timed out",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.55)),
    NvStatus(0x6E, "NV_ERR_RESOURCE_LOST", "a GPU resource was lost",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.5)),
    NvStatus(0x70, "NV_ERR_FLCN_ERROR", "a falcon microcontroller failed",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.6)),
    NvStatus(0x71, "NV_ERR_FATAL_ERROR", "the driver hit a fatal error",
             _gpu(_HW, Severity.CRITICAL, Action.REBOOT_NODE, 0.6)),
    NvStatus(0x72, "NV_ERR_MEMORY_ERROR", "a GPU memory error",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.6)),
    NvStatus(0x74, "NV_ERR_NVLINK_INIT_ERROR", "NVLink failed to initialise",
             _gpu(_HW, Severity.ERROR, Action.REBOOT_NODE, 0.7)),
    NvStatus(0x75, "NV_ERR_NVLINK_MINION_ERROR", "the NVLink minion failed",
             _gpu(_HW, Severity.ERROR, Action.REBOOT_NODE, 0.7)),
    NvStatus(0x76, "NV_ERR_NVLINK_CLOCK_ERROR", "an NVLink clock error",
             _gpu(_HW, Severity.ERROR, Action.REBOOT_NODE, 0.7)),
    NvStatus(0x77, "NV_ERR_NVLINK_TRAINING_ERROR", "an NVLink failed to train",
             _gpu(_HW, Severity.ERROR, Action.REBOOT_NODE, 0.75)),
    NvStatus(0x78, "NV_ERR_NVLINK_CONFIGURATION_ERROR", "NVLink configuration failed",
             _gpu(_HW, Severity.ERROR, Action.REBOOT_NODE, 0.6)),
    NvStatus(0x79, "NV_ERR_RISCV_ERROR", "the GSP/RISC-V core failed",
             _gpu(_HW, Severity.CRITICAL, Action.REBOOT_NODE, 0.7)),
    NvStatus(0x7A, "NV_ERR_FABRIC_MANAGER_NOT_PRESENT", "Fabric Manager is not running",
             Verdict(Category.NETWORK, Blame.INFRASTRUCTURE, ComponentKind.SWITCH,
                     Severity.ERROR, Action.CAPTURE_DIAGNOSTICS, 0.6)),
    NvStatus(0x81, "NV_ERR_NVLINK_FABRIC_NOT_READY", "the NVLink fabric is not ready",
             Verdict(Category.NETWORK, Blame.INFRASTRUCTURE, ComponentKind.SWITCH,
                     Severity.ERROR, Action.CAPTURE_DIAGNOSTICS, 0.6)),
    NvStatus(0x82, "NV_ERR_NVLINK_FABRIC_FAILURE", "the NVLink fabric failed",
             Verdict(Category.NETWORK, Blame.INFRASTRUCTURE, ComponentKind.SWITCH,
                     Severity.CRITICAL, Action.REBOOT_NODE, 0.7)),
    NvStatus(0x87, "NV_ERR_FABRIC_STATE_OUT_OF_SYNC", "the driver's NVLink fabric state is stale",
             Verdict(Category.NETWORK, Blame.INFRASTRUCTURE, ComponentKind.SWITCH,
                     Severity.ERROR, Action.CAPTURE_DIAGNOSTICS, 0.55)),
    NvStatus(0x8C, "NV_ERR_DMA_XFER_FAILED", "a DMA transfer failed",
             _gpu(_HW, Severity.ERROR, Action.RESET_GPU, 0.5)),
)  # fmt: skip

BY_NAME = {s.name: s for s in STATUSES}
BY_CODE = {s.code: s for s in STATUSES}


def status_of(name: str | None, code: str | None) -> NvStatus | None:
    """Return the known status named `name` or numbered `code` (hex text), else None."""
    if name and name in BY_NAME:
        return BY_NAME[name]
    if code:
        try:
            return BY_CODE.get(int(code, 16))
        except ValueError:
            return None
    return None
