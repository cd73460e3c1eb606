"""CUDA errors as PyTorch prints them in training stderr.

- ``CUDA error: <cudaGetErrorString>`` plus PyTorch's fixed suffix: the PyTorch 2.x suffix
  (public_lines cuda-illegal-address-torch2, ending in ``TORCH_USE_CUDA_DSA``) or the 1.x one
  with its missing space, ``API call,so`` (real_logs cuda-illegal-address).
- Error strings: real_logs cuda-ecc (``uncorrectable ECC error encountered``), cuda-illegal-address,
  cuda-device-assert; ``unspecified launch failure`` and ``uncorrectable NVLink error detected
  during the execution`` from public reports (a training note; NVIDIA/srt-slurm#307).
- Device-side assertions: one line per failing thread (public_lines cuda-device-assert-torch2).
- CUDA OOM: the CUDACachingAllocator message with its ``format_size`` units
  (real_logs cuda-oom; the full tail from public_lines cuda-oom-full).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

CUDA_ERROR_TEXT: Mapping[str, str] = {
    "ecc": "uncorrectable ECC error encountered",
    "illegal_address": "an illegal memory access was encountered",
    "device_assert": "device-side assert triggered",
    "launch_failure": "unspecified launch failure",
    "nvlink": "uncorrectable NVLink error detected during the execution",
}

_SUFFIX_TORCH2 = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
)
_SUFFIX_TORCH1 = (
    "CUDA kernel errors might be asynchronously reported at some other API call,so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
)
_OOM_TAIL = (
    "If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
    "for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)


def cuda_error_lines(
    kind: str,
    exc_type: str = "RuntimeError",
    style: Literal["torch2", "torch1"] = "torch2",
) -> list[str]:
    """Return the exception line and suffix for a CUDA error (`exc_type` 2.8+: AcceleratorError)."""
    suffix = _SUFFIX_TORCH2 if style == "torch2" else _SUFFIX_TORCH1
    return [f"{exc_type}: CUDA error: {CUDA_ERROR_TEXT[kind]}", *suffix]


def device_assert_lines(
    threads: Sequence[int],
    block: tuple[int, int, int] = (0, 0, 0),
    source: str = "../aten/src/ATen/native/cuda/Loss.cu:250",
    kernel: str = "nll_loss_forward_reduce_cuda_kernel_2d",
    assertion: str = "t >= 0 && t < n_classes",
) -> list[str]:
    """Return the device-side assertion lines (one per thread) then the CUDA error."""
    where = f"block: [{block[0]},{block[1]},{block[2]}]"
    lines = [
        f"{source}: {kernel}: {where}, thread: [{t},0,0] Assertion `{assertion}` failed."
        for t in threads
    ]
    return [*lines, *cuda_error_lines("device_assert")]


def format_size(size: int) -> str:
    """Return a byte count as PyTorch's allocator prints it (``55.88 GiB``, ``4.62 MiB``)."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1024**2:
        return f"{size / 1024:.2f} KiB"
    if size <= 1024**3:
        return f"{size / 1024**2:.2f} MiB"
    return f"{size / 1024**3:.2f} GiB"


def cuda_oom_line(
    requested: int,
    gpu: int,
    total: int,
    free: int,
    process_in_use: int,
    allocated: int,
    reserved_unallocated: int,
    other_processes: Sequence[tuple[int, int]] = (),
    exc_type: str = "torch.OutOfMemoryError",
) -> str:
    """Return the CUDA OOM message; sizes in bytes, `other_processes` as (pid, bytes in use)."""
    others = "".join(
        f"Process {pid} has {format_size(used)} memory in use. " for pid, used in other_processes
    )
    return (
        f"{exc_type}: CUDA out of memory. Tried to allocate {format_size(requested)}. "
        f"GPU {gpu} has a total capacity of {format_size(total)} of which {format_size(free)} "
        f"is free. {others}Including non-PyTorch memory, this process has "
        f"{format_size(process_in_use)} memory in use. Of the allocated memory "
        f"{format_size(allocated)} is allocated by PyTorch, and "
        f"{format_size(reserved_unallocated)} is reserved by PyTorch but unallocated. {_OOM_TAIL}"
    )
