"""Driver rules without an Xid: ``NV_ERR_*`` statuses, NVML/nvidia-smi errors, DCGM's host engine
(NVLink's failures are rules_nvlink's).

Written from the development part of the real-log corpus (tests/fixtures/explain/corpus):
``nvAssertOkFailedNoLog ... [NV_ERR_GPU_IS_LOST] (0x0000000F)`` and ``rpcSendMessage failed
with status 0x0000000f`` (open-gpu-kernel-modules#688), ``GspRmAlloc failed ...
status=0x00000062`` (scitix/sichek#51), nvidia-smi's "Unable to determine the device handle"
in its spellings (three-digit PCI domains, "detect" for "determine", no space before the
address), pynvml's ``NVMLError_GpuIsLost``.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.nv_status import NVML_REFUSED, status_of
from diagnosis.explain.rules import (
    Rule,
    gpu_hardware,
    rule,
    unit_failed,
    unless_named_only,
    verdict,
)
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA = B.INFRASTRUCTURE
INFOROM_RULE = "nvml.inforom_corrupted"


def _smi_err(m: re.Match[str]) -> Verdict | None:
    """Return a GPU fault when the fan, temperature or performance state reads ERR! (a power
    reading alone that fails is a known transient of some virtual machines; N/A is a GPU
    without that sensor)."""
    failed = "ERR!" in (m["fan"], m["temp"], m["perf"])
    return gpu_hardware(S.ERROR, A.RESET_GPU, 0.5) if failed else None


def _status_verdict_any(m: re.Match[str]) -> Verdict | None:
    """Return the verdict for whichever status group matched."""
    groups = m.groupdict()
    name = groups.get("name") or groups.get("name2")
    code = groups.get("code") or groups.get("code2")
    status = status_of(name, code)
    return status.verdict if status is not None else None


DCGM_CONNECTED = "dcgm.hostengine_connected"

_NO_GPUS_HERE = re.compile(
    r"\b(?:node|host|machine|server|VM)\s+(?:has|had)\s+no\s+GPUs?\b|\bno\s+GPUs?\s+(?:on|in)\s+"
    r"(?:this|that|the)\s+(?:node|host|machine|server|VM)\b|\blogin\s+node\b",
    re.IGNORECASE,
)


_NO_GPU_SEEN = gpu_hardware(S.ERROR, A.HARDWARE_INSPECTION, 0.5)


def _gpus_expected(m: re.Match[str]) -> Verdict | None:
    """A GPU the node lost, unless the line says the node has none (a login node)."""
    return None if _NO_GPUS_HERE.search(m.string) else _NO_GPU_SEEN


RULES: tuple[Rule, ...] = (
    rule(
        "driver.persistenced_failed",
        # the daemon's own words and systemd's for its unit
        r"\bnvidia-persistenced failed to initiali[sz]e\b|"
        + unit_failed("nvidia-persistenced", "NVIDIA Persistence Daemon"),
        ("nvidia-persistenced", "persistence daemon"),
        "NVIDIA's persistence daemon did not start (its log says why: a permission, a driver "
        "that did not load): the node's setup. A GPU fault beside it in the same input is the "
        "incident (it outranks this warning).",
        verdict(C.APPLICATION, INFRA, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.4),
    ),
    rule(
        "driver.module_unsigned",
        # a kernel under Secure Boot (or lockdown) refusing a module its keys did not sign: the
        # GPU driver, nvidia-peermem, a DKMS build
        r"\bcould not insert '?[\w-]+'?: Key was rejected by service\b"
        r"|\bLoading of unsigned module is rejected\b"
        r"|\bLockdown: \S+: unsigned module loading is restricted\b",
        ("key was rejected", "unsigned module"),
        "The kernel refused to load a module not signed by a key it trusts (Secure Boot or "
        "lockdown): sign the module with an enrolled key (MOK) or disable Secure Boot; the "
        "node's setup, not the GPU or the network.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "driver.module_symbols_mismatch",
        # the GPU driver's modules built for another kernel than the one running
        # (`nvidia_drm: Unknown symbol drm_client_setup (err -2)`, `nvidia: disagrees about
        # version of symbol module_layout`)
        r"\bnvidia(?:[-_](?:drm|modeset|uvm|fs))?: (?:Unknown symbol \w+|disagrees about version "
        r"of symbol \w+)"
        r"|\bcould not insert 'nvidia(?:[-_](?:drm|modeset|uvm|fs))?': (?:Unknown symbol in module"
        r"|Exec format error)",
        ("unknown symbol", "disagrees about version", "exec format error"),
        "The NVIDIA kernel modules do not fit the running kernel (an unknown symbol, a symbol of "
        "another version): the driver was built for another kernel; rebuild or reinstall it "
        "for this one. The node's software setup, not the GPU.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.55),
    ),
    rule(
        "driver.module_headers_missing",
        # a module to build for the running kernel without its headers: AWS's EFA installer,
        # DKMS, NVIDIA's installer (`kernel headers were not detected and are required to build
        # the efa kernel module`, `Your kernel headers for kernel 5.4.0 cannot be found`,
        # `Unable to find the kernel source tree for the currently running kernel`)
        r"\bkernel headers were not detected and are required to build\b"
        r"|\bkernel headers for kernel \S+ cannot be found\b"
        r"|\bkernel headers for this kernel do(?:es)? not seem to be installed\b"
        r"|\bERROR: Unable to find the kernel source tree for the currently running kernel\b",
        ("kernel headers", "kernel source tree"),
        "A driver module (the GPU's, EFA's, a DKMS package's) cannot be built because the "
        "running kernel's headers are not installed: install the headers of that kernel (or "
        "the image that ships them); the node's software setup, not the device.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "driver.setup_refused",
        # NVIDIA's driver container that cannot replace a driver in use (GPU Operator), the
        # vGPU manager on a board it does not support, mig-parted's failed configuration
        r"\bCould not unload NVIDIA driver kernel modules, driver is in use\b"
        r"|\b(?:vmiop_log|nvidia-vgpu-mgr)\b[^\n]*\bvGPU is supported only on VGX capable boards\b"
        r"|\binit_device_instance failed for inst \d+ with error \d+ \(vGPU validation of the GPU "
        r"failed\)"
        r"|\bError applying MIG configuration\b",
        ("could not unload nvidia", "vgx capable", "vgpu validation", "applying mig configuration"),
        "The GPU's software setup on the node failed: the driver container cannot unload a "
        "driver that something holds (a driver installed on the host as well, a process on the "
        "GPU), the vGPU manager refuses a board that is not vGPU-capable, or mig-parted could "
        "not apply its MIG layout (a hook or a process holding the GPU). The node's setup, not "
        "a failed GPU.",
        verdict(C.APPLICATION, INFRA, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.55),
        flags=re.IGNORECASE,
    ),
    rule(
        "driver.nv_status",
        r"\[(?P<name>NV_ERR_[A-Z_]+)\]\s*\(0x(?P<code>[0-9A-Fa-f]{8})\)"
        r"|\(status == NV_OK\) \|\| \(status == (?P<name2>NV_ERR_[A-Z_]+)\)"
        r"|(?:rpcSendMessage failed with status|GspRm\w+ failed:.*\bstatus=)\s*"
        r"0x(?P<code2>[0-9A-Fa-f]{8})",
        ("nv_err_", "rpcsendmessage failed", "gsprm"),
        "An NVIDIA driver status (nvstatuscodes.h) printed without an Xid: the table in "
        "diagnosis/explain/nv_status.py gives its meaning and action; statuses that only say a "
        "call was invalid give no finding.",
        judge=_status_verdict_any,
    ),
    rule(
        "driver.fsp_timeout",
        r"NVRM: \w*kfsp\w*: FSP command timed out|NVRM: .*FSP .*timed out",
        ("fsp command timed out", "fsp"),
        "The GPU's FSP security processor stopped answering: nvidia-smi fails next; reset.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.65),
    ),
    rule(
        "nvml.gpu_lost",
        r"Unable to (?:determine|detect) the device handle for GPU ?(?P<pci>[0-9A-Fa-f]{3,8}:"
        r"[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)?"
        + NVML_REFUSED
        + r"|NVMLError_GpuIsLost|\b(?:NVML_)?ERROR_GPU_IS_LOST\b|\bGPU is lost\b"
        # the status's name in other bindings (NiceHashMiner's C#: `failed with code: GPUIsLost`)
        r"|\b(?:status|code|return|returned|error):?\s+(?i:GpuIsLost)\b"
        # Rust's nvml-wrapper (`NvmlError::GpuLost`, unwrapped: `Err` value: GpuLost`)
        r"|\bNvmlError::GpuLost\b|\bErr`? value: GpuLost\b"
        r"|nvmlDevice\w+\(\)(?: failed)?: (?:Unknown Error|GPU is lost)"
        # the device plugin's wording (k8s-device-plugin: `error getting device handle for
        # index '0': Unknown Error`)
        r"|error getting device handle for index '?\d+'?: (?:Unknown Error|GPU is lost)"
        # NVML's status by its number (nvml.h: NVML_ERROR_GPU_IS_LOST = 15), as miners print it
        # (`NVML: can't get GPU #0, error code 15`)
        r"|\bNVML\b[^\n]{0,60}?\berror(?: code)?:? 15\b"
        # T-Rex's NVML queries (`Can't get fan speed, error code 15`)
        r"|\bCan't get [^,\n]{1,30}, error code 15\b",
        (
            *("device handle", "gpuislost", "gpu_is_lost", "gpu is lost", "nvmldevice", "gpulost"),
            "error code 15",
            "error 15",
            "error: 15",
        ),
        "nvidia-smi/NVML cannot reach the GPU (the user-visible side of Xid 79/GPU lost).",
        gpu_hardware(S.CRITICAL, A.REBOOT_NODE, 0.8),
    ),
    rule(
        "nvml.unknown_error",
        # pynvml's exception for NVML_ERROR_UNKNOWN, raised from a device call
        r"\bpynvml\.NVMLError_Unknown\b|\bNVMLError_Unknown: Unknown Error\b"
        # DCGM's and dcgm-exporter's words for NVML failing to start on the same error
        r"|\bCannot init NVML library; err: Unknown Error\b"
        # a device query that failed with NVML's code 999 as miners and monitors print it
        # (`NVML: can't get fan speed for GPU #4, error code 999`, `unable to get fan speed -
        # Unknown Error (999)`)
        r"|(?:\bNVML\b|\bnvmlDevice\w+)[^\n]{0,60}?\berror(?:\s+code)?\s*:?\s*999\b"
        r"(?![^\n]*\b(?:means|is\s+returned|indicates|stands\s+for)\b)"
        r"|\bunable to get [\w ]{1,30} - Unknown Error \(999\)",
        ("nvmlerror_unknown", "cannot init nvml", "999"),
        "An NVML device call failed with NVML_ERROR_UNKNOWN (pynvml's `NVMLError_Unknown`): "
        "the driver could not reach the GPU; low confidence, a container that lost its device "
        "nodes reads the same.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.5),
    ),
    rule(
        "nvml.smi_err_field",
        # nvidia-smi's table prints ERR! for a field NVML could not read (fan, temperature,
        # performance state, power)
        r"^\|\s*(?P<fan>ERR!|\d+%|N/A)\s+(?P<temp>ERR!|\d+C|N/A)\s+(?P<perf>ERR!|P\d+)\s+"
        r"(?:ERR!|\d+W|N/A)",
        ("err!",),
        "nvidia-smi's table shows ERR! for a GPU's fan, temperature or performance state: "
        "NVML could not read the device, as on a GPU in a bad state (a fallen-off or failing "
        "card); check its Xids and reset it.",
        judge=_smi_err,
        flags=re.MULTILINE,
    ),
    rule(
        "nvml.smi_gpu_row",
        # nvidia-smi's table: a GPU's row whose last column (volatile uncorrected ECC) reads ERR!
        # or whose state reads `[GPU requires reset]`
        r"^\|\s*\d+\s+\S.*\|\s*[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s+\w+\s*\|\s*"
        r"(?:ERR!|\[GPU requires reset\])\s*\|",
        ("err!", "requires reset"),
        "nvidia-smi's table shows a GPU whose uncorrected-ECC count cannot be read (ERR!) or that "
        "needs a reset (`[GPU requires reset]`): the GPU is in a bad state; drain and reset it.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.55),
        flags=re.MULTILINE,
    ),
    rule(
        "nvml.field_unknown_error",
        # nvidia-smi -q prints a field it could not read as `Unknown Error` (NVML_ERROR_UNKNOWN);
        # fields a GPU lacks read `N/A` or `Not Supported`
        r"^\s+[A-Z][\w ()/.-]{1,40}?\s+:\s+Unknown Error\s*$",
        ("unknown error",),
        "nvidia-smi -q could not read a GPU's field (`Product Brand : Unknown Error`): NVML "
        "failed on the device, as it does on a GPU in a bad state; reset it or reboot.",
        gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.6),
    ),
    rule(
        "nvml.no_gpu",
        # nvidia-smi's own messages when NVML sees no GPU, or cannot start for a reason it
        # does not know (not `Driver/library version mismatch`: an install half-upgraded)
        r"\b(?i:No devices were found)\b|\bFailed to initialize NVML: Unknown Error\b"
        r"|^\W*(?:Error: )?Failed to initialize NVML\s*$",
        ("no devices were found", "failed to initialize nvml"),
        "nvidia-smi or NVML finds no GPU on the node (`No devices were found`, `Failed to "
        "initialize NVML: Unknown Error`): the GPUs fell off the bus or the driver lost them; "
        "on a container the device nodes may be missing instead (debatable: low confidence). "
        "A node said to have no GPUs (a login node) expects it.",
        judge=_gpus_expected,
    ),
    rule(
        "nvml.reset_required",
        r"NVMLError_ResetRequired|\b(?:NVML_)?ERROR_RESET_REQUIRED\b",
        ("resetrequired", "reset_required"),
        "NVML says the GPU must be reset before it can be used again (after an uncontained "
        "error or a failed recovery): drain it and reset it.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.7),
    ),
    rule(
        "nvml.no_permission",
        r"\bUnable to set \w[\w ]* for GPU \S+: Insufficient Permissions",
        ("insufficient permissions",),
        "nvidia-smi was asked to change a GPU setting without root: the caller's, not the GPU's.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.WARNING, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "nvml.version_mismatch",
        # NVML's own words, pynvml's exception, and the kernel module's (NVRM) for the same
        # half-finished upgrade: the user-space library newer or older than the loaded module
        r"\b(?i:Failed to initialize NVML|nvml error): (?i:Driver/library version mismatch)\b"
        r"|\bNVMLError_LibRmVersionMismatch\b"
        r"|\bNVRM: API mismatch: the client has the version \S+, but\b",
        ("version mismatch", "nvmlerror_", "api mismatch"),
        "NVML's library and the loaded kernel driver differ (`Driver/library version "
        "mismatch`): the driver was upgraded without its module reloaded. The node's software, "
        "not the GPU: reload the nvidia modules or reboot the node.",
        verdict(C.APPLICATION, B.INFRASTRUCTURE, K.NODE, S.ERROR, A.REBOOT_NODE, 0.6),
    ),
    rule(
        "nvml.access_denied",
        # NVML's statuses for a caller that may not open the devices (NVML_ERROR_NO_PERMISSION:
        # device nodes a container or a cgroup does not grant; NVML_ERROR_OPERATING_SYSTEM: WSL
        # or a hypervisor that blocks the GPU)
        r"\b(?:Failed to initialize NVML|Unable to determine the device handle for GPU ?\S+"
        r"|nvml error|nvmlDevice\w+\(\)(?: failed)?): (?:Insufficient Permissions|GPU access "
        r"blocked by the operating system|The operating system has blocked the request)\b",
        # (not pynvml's `NVMLError_NoPermission` alone: one query refused, such as a power
        # limit's, while the GPU works: rules_driver's nvml.not_supported)
        ("insufficient permissions", "blocked by the operating system"),
        "NVML may not open the GPUs (`Insufficient Permissions`, `GPU access blocked by the "
        "operating system`): the process's device nodes or cgroup, a container's or a VM's "
        "setup, not a failed GPU.",
        verdict(C.APPLICATION, B.APPLICATION, K.NODE, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        "nvml.library_missing",
        # NVML's library absent where a program looks for it (a container started without the
        # NVIDIA runtime, the device plugin's hint), or the kernel driver not loaded at all (a
        # kernel upgraded without its DKMS module rebuilt)
        # (not `Detected non-NVML platform: could not load NVML library`: a node without GPUs)
        r"\bFailed to initialize NVML: could not load NVML library\b"
        r"|\bNVMLError_(?:LibraryNotFound|DriverNotLoaded)\b"
        # nvidia-container-cli's (`initialization error: nvml error: driver not loaded`; its
        # driver RPC that failed: `initialization error: driver error: failed to process
        # request`)
        r"|\b(?i:nvml error): (?i:driver not loaded)\b"
        r"|\bnvidia-container-cli(?:\.real)?: initialization error: driver error:"
        # the device plugin's and DCGM's spelling of NVML's status
        r"|\b(?i:Failed to initialize NVML: (?:NVML_)?ERROR_"
        r"(?:DRIVER_NOT_LOADED|LIBRARY_NOT_FOUND))\b"
        r"|\bCannot init NVML library; err: (?:NVML_)?ERROR_"
        r"(?:LIBRARY_NOT_FOUND|DRIVER_NOT_LOADED)\b"
        # (the loader's own words in any program's message, but a node without GPUs)
        r"|^(?![^\n]*\bnon-NVML platform\b)[^\n]*?"
        r"\blibnvidia-ml\.so(?:\.1)?: cannot open shared object file\b"
        r"|\bNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\b"
        # nvidia-smi without the library, NVML's own status for a driver not loaded
        r"|\bNVIDIA-SMI couldn't find libnvidia-ml\.so library\b"
        r"|\b(?:Failed to initialize NVML|Failed to query for the number of GPUs|nvmlInit\w*"
        r"(?:\(\))?(?: failed)?): Driver Not Loaded\b",
        (
            *("could not load nvml", "nvmlerror_", "couldn't communicate", "libnvidia-ml.so"),
            *("cannot init nvml", "nvml error: driver not loaded", "failed to initialize nvml"),
            *("couldn't find libnvidia-ml", "driver not loaded", "driver error:"),
        ),
        "NVML cannot be used on the node: its library is missing where the program runs (a "
        "container without the NVIDIA runtime) or the kernel driver is not loaded (a kernel "
        "upgraded without the driver's module rebuilt). The node's software, not the GPU.",
        verdict(C.APPLICATION, B.INFRASTRUCTURE, K.NODE, S.ERROR, A.CAPTURE_DIAGNOSTICS, 0.45),
    ),
    rule(
        DCGM_CONNECTED,
        # dcgmi's discovery after the engine started, the exporter's or dcgmi's connection
        r"^\s*\d+ GPUs? found\.?\s*$|\bSuccessfully connected to (?:the )?host ?engine\b"
        r"|\bConnected to (?:remote )?host ?engine\b",
        ("gpus found", "gpu found", "host engine", "hostengine"),
        "A DCGM client reached its host engine (or the engine started): a failure to connect "
        "earlier in the same input ended (EXPLAINED_BY).",
        verdict(C.BENIGN, B.INFRASTRUCTURE, K.NODE, S.INFO, A.NONE, 0.4),
        flags=re.IGNORECASE,
    ),
    rule(
        "dcgm.hostengine_unreachable",
        # dcgm-exporter and dcgmi against a host engine they cannot reach (DCGM's
        # DCGM_ST_CONNECTION_NOT_VALID, `Unable to connect to host engine`)
        r"\bError connecting to nv-hostengine\b|\bHost engine connection invalid/disconnected\b"
        r"|\bUnable to (?:establish a )?connect(?:ion)? to (?:the )?host ?engine\b"
        # dcgmi's own words (`Error: unable to establish a connection to the specified host`)
        r"|\bunable to establish a connection to the specified host\b",
        ("hostengine", "host engine", "specified host"),
        "A DCGM client (dcgm-exporter, dcgmi) cannot reach DCGM's host engine: nv-hostengine "
        "is not running, or the address or socket it was given is wrong. The node's monitoring "
        "software, not the GPU; the GPUs' health is unknown until it connects. A later line "
        "of the same input that connects (DCGM_CONNECTED) ends it.",
        verdict(C.APPLICATION, B.INFRASTRUCTURE, K.NODE, S.WARNING, A.CAPTURE_DIAGNOSTICS, 0.45),
        flags=re.IGNORECASE,
    ),
    rule(
        "nvml.not_supported",
        # the exception that ended a program (a traceback's last line), not a monitor's warning
        # that names it and goes on
        r"^\s*(?:pynvml\.(?:nvml\.)?)?NVMLError_(?:NotSupported|FunctionNotFound): ",
        ("nvmlerror_",),
        "A program asked NVML for something this GPU or driver does not offer (pynvml's "
        "`NVMLError_NotSupported`, a function the library lacks) and failed on it: the caller's "
        "to handle, not a fault of the GPU.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.45),
        flags=re.MULTILINE,
    ),
    rule(
        "nvml.container_cli",
        r"nvidia-container-cli: (?:initialization|detection) error: nvml error: "
        r"(?:unknown error|gpu is lost)",
        ("nvml error",),
        "The container runtime's hook could not query a GPU through NVML (`unknown error`, `gpu "
        "is lost`): a GPU on the node is in a bad state; pods asking for GPUs cannot start.",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.6),
        flags=re.IGNORECASE,
    ),
    rule(
        "gpu.lost_in_words",
        r"\b(?:has|have|had)\s+lost\s+(?:a|one|two|three|four|\d+)\s+(?:of\s+(?:its|their|the)\s+)?"
        r"GPUs?\b|\bGPUs?\s+(?:has\s+|have\s+)?(?:gone|went)\s+missing\b"
        r"|\b(?:a|one)\s+GPU\s+(?:fell|dropped)\s+off\s+the\s+bus\b|\bfatal\s+GPU\s+loss\b(?!\s+(?:rate|statistic))",
        ("lost", "missing", "off the bus", "gpu loss"),
        "A person says a node lost a GPU (it went missing, fell off the bus): the GPU or its "
        "slot failed; reboot or reseat, then inspect.",
        judge=unless_named_only(gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.5)),
        flags=re.IGNORECASE,
    ),
    rule(
        INFOROM_RULE,
        r"infoROM is corrupted",
        ("inforom is corrupted",),
        "nvidia-smi warns that the GPU's infoROM is corrupted: error counters and retired pages "
        "cannot be trusted; inspect the board.",
        verdict(C.GPU_DEGRADED, INFRA, K.GPU, S.WARNING, A.HARDWARE_INSPECTION, 0.7),
    ),
    rule(
        "driver.rm_init_failed",
        r"RmInitAdapter failed!|rm_init_adapter failed|NVRM: \w+: Cannot initialize GSP"
        r"|NVRM: \w+: failed to wait for GFW[ _](?:boot|BOOT)",
        (
            "rminitadapter failed",
            "rm_init_adapter failed",
            "cannot initialize gsp",
            "failed to wait for gfw",
        ),
        "The driver could not initialise the GPU (RmInitAdapter): the GPU is absent to CUDA "
        "until the cause (GSP firmware, power, a fallen-off board) is fixed; reboot, then "
        "inspect.",
        gpu_hardware(S.ERROR, A.REBOOT_NODE, 0.65),
    ),
    rule(
        "cuda.devices_unavailable",
        r"CUDA-capable device\(s\) is/are busy or unavailable|cudaErrorDevicesUnavailable",
        ("cuda-capable device(s)", "cudaerrordevicesunavailable"),
        "CUDA sees the GPU but cannot use it: in exclusive mode it is taken, otherwise the "
        "driver needs a reset (NV_ERR_RESET_REQUIRED, sichek#51, dra-driver#982).",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.65),
    ),
)


EXPLAINED_BY: dict[str, frozenset[str]] = {
    "dcgm.hostengine_unreachable": frozenset({DCGM_CONNECTED}),
    "python.exception": frozenset({INFOROM_RULE}),
}
"""A DCGM client that failed to reach its host engine in an input where a client connects (the
engine was started); a Python exception no rule names (`RuntimeError: No CUDA GPUs are
available`) in an input where nvidia-smi warns of a corrupted infoROM: the GPU is the
incident."""
