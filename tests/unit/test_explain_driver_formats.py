"""NVLink failures without an Xid and crash frames inside NCCL, read from their producers'
format strings (issue 21, "whole families, not lines").

The lines are built from the formats in the sources named per case (open-gpu-kernel-modules,
glibc, gdb, c10, backward-cpp): the format with its arguments filled in, nothing else. The
negative controls are the notices and frames of the same sources that report no fault.
"""

from __future__ import annotations

import pytest

from diagnosis.explain.engine import explain
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


CRASH = 'Thread 87 "python" received signal SIGSEGV, Segmentation fault.\n'
"""gdb's stop line: the crash that makes a debugger's frames the crash's place."""

NCCL_CRASH_FRAMES = [
    # crash handlers' frames: a crash on their own
    "/usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x7a1b3)[0x7f2c4e87a1b3]",  # glibc
    '#3    Object "/usr/lib/x86_64-linux-gnu/libnccl.so.2", at 0x7f2c4e85d0fe, in ncclCommInitRank',
    "           Signal: 11 (SEGV)\n"  # systemd-coredump (coredumpctl info)
    "                #0  0x00007f3b9a11b2c3 n/a (libnccl.so.2 + 0x8a1b3)",
    # a debugger's or a trace's frames, with the crash in the same input
    CRASH + "#0  0x00007f2c4e87a1b3 in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2",
    CRASH
    + "0x00007fffe1b2c3d4 in ncclProxyProgress () from /usr/lib/x86_64-linux-gnu/libnccl.so.2",
    "GDB stacktrace of the segv:\n#3  0x00007ff58be01168 in initOnceFunc () at misc/ibvwrap.cc:94",
    CRASH + "#5  0x00007f2c4e8a0000 in ncclIbConnect (dev=0) at transport/net_ib.cc:812",
    CRASH + "#2  0x00007f00 in persistentThread (arg=0x0) at /build/nccl/src/proxy.cc:1620",
    "SIGSEGV(11), PID: 4711, Thread 4790: \nframe #2: <unknown function> + 0x7a1b3 "
    "(0x7f2c4e87a1b3 in /usr/lib/x86_64-linux-gnu/libnccl.so.2)",
    "* thread #87, name = 'python', stop reason = signal SIGSEGV: invalid address\n"
    "  * frame #0: 0x00007fffe1b2c3d4 libnccl.so.2`ncclProxyProgress + 52",
    "Segmentation fault (core dumped)\nStack trace (most recent call last) in thread 48213:\n"
    '#2    Source "src/transport/net_ib.cc", line 1204, in ncclIbTest',
]

OTHER_FRAMES = [
    "#4  0x0000555555 in Proxy::run (this=0x0) at source/common/proxy.cc:150",  # not NCCL's
    "#1  0x00007f2c in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "frame #3: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f1c in "
    "/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so)",
    '#2    Object "/usr/lib/x86_64-linux-gnu/libc.so.6", at 0x7f2c4e85d0fe, in raise',
]

HUNG_STACKS = [
    # `thread apply all bt` on a job stuck in a collective: no signal, no crash
    'Thread 3 (Thread 0x7f1d2dfff640 (LWP 4021) "python"):\n'
    "#0  0x00007f1e4c2d3a2f in __GI___poll (fds=0x7f1d2dffe9a0, nfds=1, timeout=500) at "
    "../sysdeps/unix/sysv/linux/poll.c:29\n"
    "#1  0x00007f1d9a4c5b21 in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
    "#2  0x00007f1e4c25ab43 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442",
    "#1  0x00007f1d9a4c5b21 in ncclProxyProgress (proxyState_=0x55d5c2000000) at proxy.cc:880",
    # a hung nccl-tests run: its own sources are under a path that names NCCL
    'Thread 1 (Thread 0x7f2a1c4e5000 (LWP 12345) "all_reduce_perf"):\n'
    "#0  0x00007f2a1b2c3d4e in cudaStreamQuery () from /usr/local/cuda/lib64/libcudart.so.12\n"
    "#2  0x000055d5c1a2b5d6 in completeColl (args=0x7ffd8f000000) at "
    "/workspace/nccl-tests/src/common.cu:411",
    # a watchdog timeout's c10 trace passing through libnccl: a hang, not a crash in NCCL
    "[rank3]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=2201, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600046 milliseconds before timing out.\n"
    "frame #1: <unknown function> + 0x1b2c3 (0x7f3b9a11b2c3 in "
    "/usr/lib/x86_64-linux-gnu/libnccl.so.2)",
]


@pytest.mark.parametrize("text", NCCL_CRASH_FRAMES)
def test_a_crash_frame_inside_nccl_is_a_nccl_crash(text: str) -> None:
    rules = [f.rule for f in explain(text)]
    assert {"process.nccl_segfault", "process.nccl_frame"} & set(rules), rules
    found = first(text)
    assert found is not None and found[0] == Category.APPLICATION, found


@pytest.mark.parametrize("line", OTHER_FRAMES)
def test_frames_of_other_libraries_are_not_nccl_crashes(line: str) -> None:
    found = first(line)
    assert found is None or found[1] not in {"process.nccl_segfault", "process.nccl_frame"}


@pytest.mark.parametrize("text", HUNG_STACKS)
def test_a_hung_processs_stack_through_nccl_is_no_crash(text: str) -> None:
    rules = {f.rule for f in explain(text)}
    assert not rules & {"process.nccl_segfault", "process.nccl_frame"}, rules


def test_current_drivers_gpu_prefix_and_error_counters() -> None:
    prefixed = (
        "Jul 09 10:42:47 pool0-0082 kernel: NVRM: GPU0 knvlinkDiscoverPostRxDetLinks_GH100: "
        "Getting peer0's postRxDetLinkMask failed!"
    )
    found = first(prefixed)
    assert found is not None and found[1] == "nvlink.driver_error", found
    counters = "NVRM: knvlinkGetErrorCounters: link 3: replay error count 0, recovery error count 0"
    assert alarms(counters) == []
