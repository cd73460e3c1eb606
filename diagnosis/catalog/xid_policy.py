"""TrainGuard's own severity, category, blame, level and action for every Xid code.

NVIDIA's catalog and gpud often disagree (Xid 63: NVIDIA ignores it, gpud reboots and asks for
an inspection). Each code below maps to a named profile or to its own choice, always with the
reason; diagnosis/CATALOG.md renders the full table. The choices are made for a training
cluster: a job restart is cheap, a node reboot costs a slot for minutes, a needless RMA costs
weeks, and the fleet correlator (not this table) escalates codes that repeat on one GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

from diagnosis.catalog.model import Verdict, XidPolicy
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA, APP, UNSURE = B.INFRASTRUCTURE, B.APPLICATION, B.UNKNOWN


def _policy(
    category: C, blame: B, severity: S, action: A, confidence: float, why: str
) -> XidPolicy:
    """Return a policy whose finding points at the GPU that logged the Xid."""
    return XidPolicy(Verdict(category, blame, K.GPU, severity, action, confidence), why)


LEGACY = _policy(
    C.GPU_HARDWARE, INFRA, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.4,
    "NVIDIA marks it unused on current GPUs and gpud lists no repair: unexpected on a training "
    "node, so collect a bug report instead of acting.",
)  # fmt: skip
LEGACY_FATAL = _policy(
    C.GPU_HARDWARE, INFRA, S.ERROR, A.REBOOT_NODE, 0.5,
    "NVIDIA marks it unused (contact support), gpud treats it as fatal and reboots. If it shows "
    "up the driver state is suspect: follow gpud and reboot; repeats escalate.",
)  # fmt: skip
MEDIA = _policy(
    C.GPU_APPLICATION, APP, S.WARNING, A.RESTART_JOB, 0.4,
    "Video/JPEG/optical-flow engine fault: NVIDIA restarts the app. Training touches these "
    "engines only to decode its own input; gpud's reboot is not justified by a media fault.",
)  # fmt: skip
COPY_ENGINE = _policy(
    C.GPU_HARDWARE, INFRA, S.WARNING, A.RESTART_JOB, 0.5,
    "Copy-engine exception: NVIDIA restarts the app and calls support if it persists, gpud has "
    "no repair. Restart once; the correlator escalates repeats on the same GPU.",
)  # fmt: skip
PUSH_BUFFER = _policy(
    C.GPU_APPLICATION, APP, S.WARNING, A.FIX_APPLICATION, 0.5,
    "Invalid push buffer stream: NVIDIA says restart the app and check the app/CUDA stack "
    "(a bad launch or driver/runtime mismatch from the job's side).",
)  # fmt: skip
IGNORE = _policy(
    C.BENIGN, UNSURE, S.INFO, A.NONE, 0.7,
    "Both sources say ignore (test message, informational or an engine training never uses).",
)  # fmt: skip
IGNORE_WATCH = _policy(
    C.BENIGN, UNSURE, S.INFO, A.MONITOR, 0.6,
    "NVIDIA says ignore, gpud has no repair: record it and let the correlator notice repeats.",
)  # fmt: skip
MEMORY_FATAL = _policy(
    C.GPU_HARDWARE, INFRA, S.CRITICAL, A.RESET_GPU, 0.9,
    "Uncorrectable memory error: the job is lost and a GPU reset is needed to retire/remap the "
    "bad memory (NVIDIA); gpud adds an inspection, which we keep for repeats or Xid 64.",
)  # fmt: skip
NVLINK5 = _policy(
    C.GPU_HARDWARE, INFRA, S.ERROR, A.REBOOT_NODE, 0.8,
    "NVLink5 link error: NVIDIA's NVLink5 workflow and gpud both end in a reboot; a message "
    "marked Nonfatal is downgraded to warning/monitor by the explainer.",
)  # fmt: skip
GSP = _policy(
    C.GPU_HARDWARE, INFRA, S.CRITICAL, A.REBOOT_NODE, 0.9,
    "GSP firmware timeout/error: NVIDIA says reset the GPU, gpud reboots. A reset needs GSP "
    "RPCs that are timing out and often fails (real_logs xid-120 needed a power cycle): reboot.",
)  # fmt: skip
HARD_RESET = _policy(
    C.GPU_HARDWARE, INFRA, S.CRITICAL, A.RESET_GPU, 0.8,
    "The GPU stopped (timeout/halt/init failure): NVIDIA resets the GPU; gpud reboots. Reset "
    "first, the action ladder reboots when the reset fails.",
)  # fmt: skip


def _one(category: C, blame: B, severity: S, action: A, confidence: float, why: str) -> XidPolicy:
    """Return a policy specific to one code."""
    return _policy(category, blame, severity, action, confidence, why)


SPECIFIC: Mapping[int, XidPolicy] = {
    8: _one(C.GPU_HARDWARE, INFRA, S.WARNING, A.RESTART_JOB, 0.5,
            "Channel idle timeout ('GPU stopped processing'): NVIDIA restarts the app, then "
            "support. Without an app fault beside it we assume the GPU; restart once."),
    13: _one(C.GPU_APPLICATION, APP, S.ERROR, A.FIX_APPLICATION, 0.7,
             "Graphics engine exception: almost always an out-of-range access or illegal "
             "instruction in a kernel (NVIDIA's Xid 13 workflow checks the app first; gpud: "
             "check app and GPU). Hardware only if it repeats across jobs on one GPU."),
    31: _one(C.GPU_APPLICATION, APP, S.ERROR, A.FIX_APPLICATION, 0.7,
             "MMU fault = illegal address from a kernel (the kernel side of 'illegal memory "
             "access'). gpud adds a hardware inspection; we do so only on repeats."),
    32: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.5,
             "Corrupted push buffer (PBDMA): NVIDIA says check the app, gpud reboots and "
             "inspects. User code cannot normally corrupt the PBDMA stream: reset the GPU."),
    38: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.MONITOR, 0.5,
             "FECS firmware watchdog: NVIDIA ignores it, gpud reboots and inspects. One "
             "occurrence usually recovers; watch for repeats."),
    43: _one(C.GPU_APPLICATION, APP, S.WARNING, A.FIX_APPLICATION, 0.6,
             "Channel reset after the app's own fault (follows Xid 13/31); NVIDIA ignores it. "
             "It adds nothing once the first fault is known."),
    44: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.6,
             "Fault during context switch: NVIDIA ignores, gpud reboots and inspects. Engine "
             "state is suspect after it: reset the GPU."),
    45: _one(C.BENIGN, UNSURE, S.INFO, A.NONE, 0.7,
             "Preemptive cleanup caused by a previous Xid or a killed process (NVIDIA: follow "
             "the other Xid; gpud: no action). Secondary: the other Xid carries the verdict."),
    54: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.HARDWARE_INSPECTION, 0.8,
             "Auxiliary power not connected: a mechanical problem (NVIDIA: check mechanicals)."),
    62: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.RESET_GPU, 0.85,
             "PMU halted: NVIDIA resets the GPU, gpud reboots and inspects. Reset; repeats "
             "escalate to inspection."),
    63: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.RESET_GPU, 0.8,
             "Row remap recorded: the repair worked but needs a GPU reset to take effect "
             "(NVIDIA: ignore; gpud: reboot and inspect). Not benign, not urgent: drain the GPU "
             "and reset it at the next job boundary."),
    64: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.ISOLATE_GPU, 0.9,
             "Row remap / page retirement failed: the GPU can no longer heal its memory. "
             "NVIDIA resets then calls support, gpud reboots and inspects: take it out of "
             "service for inspection."),
    69: _one(C.GPU_APPLICATION, APP, S.ERROR, A.FIX_APPLICATION, 0.5,
             "Graphics class error: NVIDIA restarts the app and checks the app/CUDA stack; gpud "
             "reboots. We follow NVIDIA."),
    74: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.REBOOT_NODE, 0.85,
             "NVLink error: all peer traffic over the link stops. On NVSwitch systems one GPU "
             "reset cannot retrain the fabric, so reboot (gpud) and inspect on repeats."),
    78: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.CAPTURE_DIAGNOSTICS, 0.5,
             "vGPU start error: a driver/firmware mismatch (NVIDIA: update SW/FW)."),
    79: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.REBOOT_NODE, 0.95,
             "GPU fell off the bus: it is unreachable until the node restarts (NVIDIA: restart "
             "bare metal; gpud: reboot and inspect). Repeats go to inspection."),
    80: _one(C.GPU_HARDWARE, INFRA, S.WARNING, A.RESTART_JOB, 0.5,
             "Push buffer CRC mismatch: data corrupted between host and GPU (PCIe). NVIDIA "
             "says check the app; a CRC error points at the link: restart, watch repeats."),
    92: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.MONITOR, 0.7,
             "High single-bit ECC rate: both sources ignore it, but SBE storms precede "
             "uncorrectable errors: feed failure prediction."),
    93: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.MONITOR, 0.6,
             "InfoROM wear limit exceeded (non-fatal): monitor."),
    94: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESTART_JOB, 0.8,
             "Contained uncorrectable memory error: only the affected app dies, no GPU reset "
             "needed (NVIDIA: restart app; gpud: reboot). Restart the job."),
    108: _one(C.GPU_APPLICATION, APP, S.WARNING, A.FIX_APPLICATION, 0.4,
              "NVLink remote translation error: reserved/unused, NVIDIA ignores it and points "
              "at the Xid 137 flow (an app's bad peer access)."),
    109: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.7,
              "Context switch timeout: NVIDIA resets the GPU. Seen after Xid 13 bursts, but "
              "the engine no longer switches contexts, so the GPU needs the reset."),
    110: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.6,
              "Security fault: NVIDIA resets the GPU, gpud reboots and inspects."),
    121: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.REBOOT_NODE, 0.7,
              "C2C (chip-to-chip) link error: NVIDIA ignores it, gpud reboots and inspects. A "
              "failing CPU-GPU link on a Grace node stalls training: reboot."),
    136: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.7,
              "Link training failed: NVIDIA resets the GPU and investigates link signal "
              "integrity."),
    137: _one(C.GPU_APPLICATION, APP, S.WARNING, A.FIX_APPLICATION, 0.5,
              "NVLink FLA privilege error: an app touched peer memory it does not own (gpud: "
              "check user app)."),
    143: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.RESET_GPU, 0.8,
              "GPU initialization failed: the GPU is unusable; reset it (NVIDIA), inspect if "
              "the reset fails (gpud)."),
    151: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.REBOOT_NODE, 0.5,
              "Confidential-computing key rotation error: NVIDIA restarts the VM."),
    154: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.7,
              "The driver's recovery action changed (it follows another Xid). The explainer "
              "reads the new action: reset required -> reset, reboot -> reboot, None -> info."),
    155: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.RESET_GPU, 0.6,
              "NVLink software-defined error: NVIDIA resets the GPU, gpud reboots."),
    156: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.RESET_GPU, 0.7,
              "Resource retirement event: like Xid 63, the repair needs a reset (NVIDIA)."),
    157: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.ISOLATE_GPU, 0.5,
              "Resource retirement failure: NVIDIA ignores it, but it is the Xid 64 of the "
              "newer retirement scheme: the bad resource stays in use."),
    159: _one(C.GPU_HARDWARE, INFRA, S.WARNING, A.RESTART_JOB, 0.5,
              "CHI non-data error on the coherent interconnect (NVIDIA: check UVM)."),
    163: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.MONITOR, 0.6,
              "Power smoothing disengaged: the node still trains but loses the protection; "
              "gpud's reboot can wait for a drain."),
    164: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.MONITOR, 0.6,
              "Power smoothing circuitry nearing end of life: plan a replacement."),
    165: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.HARDWARE_INSPECTION, 0.7,
              "Power smoothing circuitry lifetime exhausted: schedule an inspection."),
    166: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.REBOOT_NODE, 0.5,
              "NVLink encrypted-traffic misconfiguration (CC mode): gpud reboots."),
    167: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.REBOOT_NODE, 0.8,
              "PCIe fatal timeout: the GPU is unreachable over PCIe; reboot (gpud)."),
    168: _one(C.GPU_DEGRADED, INFRA, S.WARNING, A.HARDWARE_INSPECTION, 0.7,
              "Reduced memory capacity (errors in the write-protected region): the GPU runs "
              "with less memory; inspect."),
    169: _one(C.GPU_HARDWARE, INFRA, S.ERROR, A.REBOOT_NODE, 0.7,
              "SEC2 micro-controller halt: gpud reboots."),
    170: _one(C.GPU_APPLICATION, APP, S.WARNING, A.FIX_APPLICATION, 0.4,
              "Interrupt in CC mode: gpud says check the user app and GPU; we start with the app."),
    173: _one(C.GPU_HARDWARE, INFRA, S.CRITICAL, A.REBOOT_NODE, 0.8,
              "C2C fatal link failure (only gpud lists it): reboot."),
}  # fmt: skip

_PROFILE_CODES: tuple[tuple[XidPolicy, tuple[int, ...]], ...] = (
    (LEGACY, (1, 2, 3, 4, 5, 6, 7, 10, 15, 17, 20, 21, 22, 23, 24, 49, 50, 51, 52, 53, 55, 56,
              57, 58, 73, 87, 90, 91, 111, 112, 113, 114, 115, 116, 117, 118, 122, 124, 125,
              138)),
    (LEGACY_FATAL, (9, 12, 16, 18, 19, 26, 27, 28, 29, 30, 33, 34, 35, 36, 42, 47, 59, 61, 65,
                    81, 123)),
    (MEDIA, (60, 68, 82, 83, 84, 86, 88, 89, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 139,
             142)),
    (COPY_ENGINE, (39, 40, 41, 70, 71, 72, 75, 76, 77, 85, 126, 127, 128, 129, 130, 131, 132,
                   133, 134, 135)),
    (PUSH_BUFFER, (11, 25)),
    (IGNORE, (14, 106, 107, 152, 153, 162)),
    (IGNORE_WATCH, (37, 66, 67, 141, 160, 161)),
    (MEMORY_FATAL, (48, 95, 140, 171, 172)),
    (NVLINK5, (144, 145, 146, 147, 148, 149, 150)),
    (GSP, (119, 120)),
    (HARD_RESET, (46, 158)),
)  # fmt: skip

UNKNOWN_XID = XidPolicy(
    Verdict(C.UNKNOWN, UNSURE, K.GPU, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.3),
    "Not in the catalog (newer driver?): collect diagnostics and add the code.",
)


def xid_policies() -> dict[int, XidPolicy]:
    """Return TrainGuard's policy per Xid code; a code in two places is an error."""
    policies: dict[int, XidPolicy] = {}
    for policy, codes in _PROFILE_CODES:
        for code in codes:
            if code in policies:
                raise ValueError(f"Xid {code} has two policies")
            policies[code] = policy
    for code, policy in SPECIFIC.items():
        if code in policies:
            raise ValueError(f"Xid {code} has two policies")
        policies[code] = policy
    return policies
