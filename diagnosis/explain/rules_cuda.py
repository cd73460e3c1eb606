"""CUDA's errors as programs print them: the runtime's and the driver API's words, the
frameworks' out-of-memory errors (PyTorch, TensorFlow and XLA, PaddlePaddle, TensorRT, HAMi's vGPU
allocator, Apple Metal), illegal addresses, device-side asserts, launch failures and timeouts.

Split from rules_gpu (the driver's and the tools' own lines), which it follows in precedence:
rules.all_rules places these after the numerical rules, as before the split.
"""

from __future__ import annotations

import re

from diagnosis.explain.rules import Rule, gpu_hardware, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA, APP = B.INFRASTRUCTURE, B.APPLICATION

_CUDA = "(?:CUDA error|(?i:cuda runtime error)(?: \\(\\d+\\))?|Cuda failure \\d*)\\W*"

RULES: tuple[Rule, ...] = (
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
        r"|(?<![A-Za-z0-9])GPU ?\d+ ?上出现内存不足|无法在 ?GPU ?\d+ ?上分配"
        r"|CUBLAS_STATUS_ALLOC_FAILED"
        # TensorFlow's and XLA's (JAX) words for the same (not the allocator's own warning, which
        # TensorFlow recovers from: `The caller indicates that this is not a failure`)
        r"|\bOOM when allocating tensor\b[^\n]*\bGPU[_:]\d+"
        r"|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate\b"
        # older TensorFlow, which names no device (a CPU it names is host memory), and its
        # allocator's last word; XLA's replica that ran out (`Execution of replica 0 failed:
        # Resource exhausted: Out of memory ...`, wrapped after `Out`)
        r"|\b(?:Resource exhausted|ResourceExhaustedError): OOM when allocating tensor with shape\b"
        r"(?![^\n]*\b(?:CPU|cpu)[_:]\d)"
        r"|\bbfc_allocator\.cc:\d+\][^\n]{0,40}?\b[Rr]an out of memory trying to allocate\b"
        r"(?![^\n]*\bnot a failure\b)(?![^\n]*\bAllocator \(cpu)"
        r"|\bExecution of replica \d+ failed: Resource exhausted\b"
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
            *("resource exhausted",),
            *("free memory", "outofmemory", "could not be allocated", "cudaerrormemoryallocation"),
            *(
                "vgpu error",
                "hami-core error",
                "上出现内存不足",
                "上分配",
                "failed to allocate request",
            ),
            "out_of_memory",
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
        # Cycles' device queue (`Illegal address in CUDA queue copy_from_device (...)`)
        r"|\bIllegal address in CUDA queue\b"
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
