"""NVLink failures without an Xid and crash frames inside NCCL, read from their producers'
format strings (issue 21, "whole families, not lines").

The lines are built from the formats in the sources named per case (open-gpu-kernel-modules,
glibc, gdb, c10, backward-cpp): the format with its arguments filled in, nothing else. The
negative controls are the notices and frames of the same sources that report no fault.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

NVLINK_FAULTS = [
    # kernel_nvlinkcorelibtrain.c (NV_PRINTF LEVEL_ERROR, prefixed `NVRM: <function>: `)
    "NVRM: knvlinkCoreShutdownDeviceLinks_IMPL: Unable to turn off links for the GPU0",
    "NVRM: knvlinkCoreResetDeviceLinks_IMPL: Unable to reset link(s) for GPU3",
    "NVRM: _knvlinkActivateDiscoveredConns: Failed to activate link5 on GPU1!!!",
    "NVRM: _knvlinkActivateDiscoveredSysmemConn: FAILED TO TRAIN CPU/SYSMEM LINKS TO ACTIVE "
    "on GPU0!!!",
    "NVRM: _knvlinkExitSleep: Unable to wakeup the linkmask 0x3f of GPU2 from SLEEP",
    "NVRM: knvlinkEnterExitSleep_IMPL: GPU1: Link4 is not connected. Returning",
    # kernel_nvlinkcorelibcallback.c
    "NVRM: knvlinkCoreSetDlLinkModeCallback: Error calling and polling for Init Optimize "
    "status! link 0x4",
    "NVRM: knvlinkCoreGetDlLinkModeCallback: Error getting current link state!",
    # kernel_nvlinkstate.c
    "NVRM: knvlinkStateLoad_IMPL: Failed to add GPU device to nvlink core",
    # nvlink_linux.c (`nvidia-nvlink: `), with a dmesg time stamp
    "[   12.345678] nvidia-nvlink: Failed to initialize driver : -22",
    "nvidia-nvlink: NVLink: Assertion failed!",
    # nvlink_training.c (debug builds print it through nvlink_print)
    "nvidia-nvlink: GPU0: Unable to set link state to ACTIVE for link GPU0:link3",
]

NVLINK_NOTICES = [
    "NVRM: knvlinkEnterExitSleep_IMPL: NVLink L2 is not supported. Returning",
    "NVRM: knvlinkEnterExitSleep_IMPL: Skipping L2 entry/exit since fabric is externally managed",
    "NVRM: knvlinkEnterExitSleep_IMPL: GPU0: Links sharing PLL should enter/exit L2 together. "
    "Returning",
    "NVRM: knvlinkCheckTrainingIsComplete_IMPL: Input mask contains a GPU on which NVLink is "
    "disabled.",
    "nvidia-nvlink: Nvlink Core is being initialized, major device number 506",
    "nvidia-nvlink: nvlink driver open",
    "nvidia-nvlink: GPU0: Successfully able to set link state to ACTIVE for link GPU0:link3",
]


@pytest.mark.parametrize("line", NVLINK_FAULTS)
def test_the_drivers_nvlink_errors_are_nvlink_faults(line: str) -> None:
    found = first(line)
    assert found is not None and found[:2] == (Category.GPU_HARDWARE, "nvlink.driver_error"), found


@pytest.mark.parametrize("line", NVLINK_NOTICES)
def test_the_drivers_nvlink_notices_stay_silent(line: str) -> None:
    assert alarms(line) == [], line


NCCL_CRASH_FRAMES = [
    # gdb's print_frame: no symbol, so the shared object is named
    "#0  0x00007f2c4e87a1b3 in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2",
    # gdb with NCCL's symbols: the frame names its source file
    "#3  0x00007ff58be01168 in initOnceFunc () at misc/ibvwrap.cc:94",
    "#5  0x00007f2c4e8a0000 in ncclIbConnect (dev=0) at transport/net_ib.cc:812",
    "#2  0x00007f00 in persistentThread (arg=0x0) at /build/nccl/src/proxy.cc:1620",
    # c10's get_backtrace frame inside libnccl (a C++ frame the traceback skipper would drop)
    "frame #2: <unknown function> + 0x7a1b3 (0x7f2c4e87a1b3 in "
    "/usr/lib/x86_64-linux-gnu/libnccl.so.2)",
    # backward-cpp's frame without sources
    '#3    Object "/usr/lib/x86_64-linux-gnu/libnccl.so.2", at 0x7f2c4e85d0fe, in ncclCommInitRank',
]

OTHER_FRAMES = [
    "#4  0x0000555555 in Proxy::run (this=0x0) at source/common/proxy.cc:150",  # not NCCL's
    "#1  0x00007f2c in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "frame #3: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f1c in "
    "/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so)",
    '#2    Object "/usr/lib/x86_64-linux-gnu/libc.so.6", at 0x7f2c4e85d0fe, in raise',
]


@pytest.mark.parametrize("line", NCCL_CRASH_FRAMES)
def test_a_crash_frame_inside_nccl_is_a_nccl_crash(line: str) -> None:
    found = first(line)
    assert found is not None and found[:2] == (Category.APPLICATION, "process.nccl_segfault"), found


@pytest.mark.parametrize("line", OTHER_FRAMES)
def test_frames_of_other_libraries_are_not_nccl_crashes(line: str) -> None:
    found = first(line)
    assert found is None or found[1] != "process.nccl_segfault", found
