"""NCCL's own warnings and notices, read from its sources' catalogue (issue 21, "whole families,
not lines"): NVIDIA/nccl's net_ib (four generations of the completion error, async events),
ibvwrap, socket and net_socket, proxy, shmutils, checks.h's CUDA failures, plugin loading.

The lines are the format strings with their arguments filled in; the negative controls are the
same library's notices, retries and fallbacks, several printed at WARN.
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

FAULTS = [
    (
        "node17:48211:48390 [3] transport/net_ib/p2p.cc:612"
        " (ncclIbLogCompletionWithError) NCCL WARN NET/IB: Got completion from peer"
        " 10.12.3.41<52344> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0)"
        " vendor_err=129  hca mlx5_3",
        C.NETWORK,
        "rdma.completion_error",
    ),
    (
        "node17:48211:48390 [3] NCCL WARN NET/IB : Got completion with error 12, opcode"
        " 0, len 0, vendor err 129",
        C.NETWORK,
        "nccl.ib_completion_error",
    ),
    (
        "node02:1201:1299 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection"
        " closed by remote peer node05<45074>",
        C.NETWORK,
        "nccl.connection_closed",
    ),
    (
        "node02:1201:1201 [1] misc/shmutils.cc:80 NCCL WARN Error: failed to extend"
        " /dev/shm/nccl-Ab12Cd to 9637892 bytes, error: No space left on device (28)",
        C.HOST_MEMORY,
        "host.shm_full",
    ),
    (
        "node02:1201:1201 [1] misc/shmutils.cc:133 NCCL WARN Error while creating"
        " shared memory segment /dev/shm/nccl-Ab12Cd (size 9637888), error: No space"
        " left on device (28)",
        C.HOST_MEMORY,
        "host.shm_full",
    ),
    (
        "node02:1201:1201 [1] include/shm.h:28 NCCL WARN Error while creating shared"
        " memory segment /dev/shm/nccl-Ab12Cd (size 9637888)",
        C.HOST_MEMORY,
        "host.shm_full",
    ),
    (
        "node02:1201:1201 [4] transport/net_ib/common.cc:98 NCCL WARN NET/IB : mlx5_2:1"
        " async fatal event: local catastrophic error",
        C.NETWORK,
        "nccl.ib_fatal",
    ),
    (
        "node02:1201:1201 [4] transport/net_ib/common.cc:98 NCCL WARN NET/IB : mlx5_2:1"
        " async fatal event on QP (0x55d0): QP fatal error",
        C.NETWORK,
        "nccl.ib_fatal",
    ),
    (
        "node02:1201:1201 [4] NCCL WARN communicator encountered a fatal error"
        " (detected in ncclIbIsend)",
        C.NETWORK,
        "nccl.ib_fatal",
    ),
    (
        "node02:1201:1201 [4] NCCL WARN NET/IB : Unable to open device mlx5_2",
        C.NETWORK,
        "nccl.ib_device_skipped",
    ),
    (
        "node02:1201:1201 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed"
        " with error Cannot allocate memory",
        C.NETWORK,
        "rdma.memlock",
    ),
    (
        "node02:1201:1201 [0] misc/ibvwrap.cc:201 NCCL WARN Call to ibv_modify_qp"
        " failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next"
        " state RTR, local GID index 3, local GID ::ffff:10.0.0.2, remote GID"
        " ::ffff:10.0.0.9",
        C.NETWORK,
        "rdma.verbs_failed",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN ncclOsSocketStartConnect: connect to"
        " 10.0.0.1<29500> returned Connection refused, exceeded error retry count after"
        " 35 attempts",
        C.NETWORK,
        "nccl.socket_gave_up",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN ncclOsSocketProgressOpt: Call to recv from"
        " 10.0.0.7<53211> failed : Connection reset by peer",
        C.NETWORK,
        "nccl.socket_gave_up",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN Net : Call to recv from 10.0.0.7<53211> failed"
        " : Connection timed out",
        C.NETWORK,
        "nccl.socket_gave_up",
    ),
    (
        "node02:1201:1201 [0] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found",
        C.NETWORK,
        "nccl.no_interface",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN Failed to initialize any NET plugin",
        C.NETWORK,
        "nccl.no_interface",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN Cuda failure 'out of memory'",
        C.GPU_OOM,
        "cuda.oom",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN Cuda failure 'uncorrectable ECC error encountered'",
        C.GPU_HARDWARE,
        "cuda.ecc",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN Cuda failure 2 'out of memory'",
        C.GPU_OOM,
        "cuda.oom",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN [Proxy Service 3] Failed to execute operation"
        " Connect from rank 12, retcode 6",
        C.NETWORK,
        "nccl.warn",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN NET/IB : req 3/8 tag 7 peer 10.0.0.8<4312>"
        " collective mismatch error, local size 4096 remote size 8192",
        C.APPLICATION,
        "nccl.size_mismatch",
    ),
    (
        "node02:1201:1201 [0] NCCL WARN NET/IB : Got async event : port error",
        C.NETWORK,
        "ib.async_port_error",
    ),
]


@pytest.mark.parametrize(("line", "category", "rule"), FAULTS)
def test_each_catalogued_fault_is_read(line: str, category: Category, rule: str) -> None:
    found = first(line)
    assert found is not None, line
    assert (found[0], found[1]) == (category, rule)


BENIGN = [
    "node02:1201:1250 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so),"
    " using internal implementation",
    "node02:1201:1250 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so libnccl-net-ofi.so",
    "node02:1201:1250 [0] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so",
    "node02:1201:1250 [0] NCCL INFO NET/IB : No device found.",
    "node02:1201:1250 [0] NCCL INFO Failed to open libibverbs.so[.1]",
    "node02:1201:1250 [0] NCCL INFO NET/IB : Failed to open mlx5dv symbols. Advance"
    " features like CX-8 Direct-NIC will be disabled.",
    "node02:1201:1250 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0"
    " 'mlx5_0' (no module)",
    "node02:1201:1250 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'",
    "node02:1201:1250 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 3 / HCA 1 (distance 6 > 4)",
    "node02:1201:1250 [3] transport/net_ib.cc:94 NCCL WARN Could not find real path"
    " of mlx5_0 (/sys/class/infiniband/mlx5_0/device)",
    "node02:1201:1250 [0] NCCL INFO Topology detection : could not read"
    " /sys/devices/system/node/node0/cpumap, ignoring",
    "node02:1201:1250 [0] NCCL INFO Call to ibv_modify_qp failed with 110"
    " Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR,"
    " retrying 1/35 after 100 msec of sleep",
    "node02:1201:1250 [0] NCCL INFO ncclOsSocketStartConnect: connect to"
    " 10.0.0.1<29500> returned Connection refused, retrying (3/34) after sleep for"
    " 300 msec",
    "node02:1201:1250 [0] NCCL INFO Call to accept returned Resource temporarily"
    " unavailable, retrying",
    "node02:1201:1250 [0] NCCL INFO Call to ibv_query_ece skipped, internal_name doesn't exist",
    "node02:1201:1250 [0] NCCL INFO socketFinalizeAccept: didn't receive a valid"
    " magic from 10.0.0.9<51234>",
    "node02:1201:1250 [0] NCCL INFO [Service thread] Connection closed by localRank 3",
    "node02:1201:1250 [0] NCCL INFO ncclOsSocketProgressOpt: abort called",
    "node02:1201:1250 [4] transport/net_ib/common.cc:131 (ncclIbAsyncThreadMain)"
    " NCCL WARN NET/IB : mlx5_2:1 Got non-fatal async event: port active(9)",
    "node02:1201:1250 [4] transport/net_ib/common.cc:131 NCCL WARN NET/IB :"
    " mlx5_2:1 Got non-fatal async event: SM change(12)",
    "node02:1201:1250 [4] transport/net_ib.cc:131 NCCL WARN NET/IB : Got async event : port active",
    "node02:1201:1250 [0] transport/net_socket.cc:412 NCCL WARN NET/Socket : send"
    " side and recv side have different number of sockets: 4 vs 2, making send side"
    " equal to recv side",
    "node02:1201:1250 [0] transport/net_socket.cc:180 NCCL WARN NET/Socket :"
    " NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to 16",
    "node02:1201:1250 [0] NCCL INFO Stack size limit (unlimited) is unsafe; will"
    " use 8192KB for newly launched threads",
    "node02:1201:1250 [0] NCCL INFO Using network Socket",
    "node02:1201:1250 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
    "node02:1201:1250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0/GDRDMA",
    "node02:1201:1250 [0] NCCL INFO Allocated 9637888 bytes of shared memory in"
    " /dev/shm/nccl-Ab12Cd",
    "node02:1201:1250 [0] NCCL INFO External network plugin libnccl-net-ofi.so is unsupported",
    "node02:1201:1250 [0] NCCL INFO Failed to initialize NET plugin IB",
    "node02:1201:1250 [0] NCCL INFO transport/net.cc:1362 -> 6",
]


@pytest.mark.parametrize("line", BENIGN)
def test_notices_retries_and_fallbacks_stay_silent(line: str) -> None:
    assert alarms(line) == [], line
