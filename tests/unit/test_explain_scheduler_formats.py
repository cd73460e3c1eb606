"""Schedulers, network filesystems, DCGM and InfiniBand tools read from their sources'
catalogues (issue 21, "whole families, not lines").

The lines are the producers' format strings with their arguments filled in (SchedMD/slurm's
slurmstepd, srun and slurmctld; kubernetes' kubelet events and eviction messages;
NVIDIA/k8s-device-plugin; lustre-release, BeeGFS, the kernel's ceph and libceph, errno 107 of a
FUSE mount; NVIDIA/DCGM's dcgm_errors.h; infiniband-diags, OpenSM, NCCL's net_ib, ethtool -S;
UCX's uct and ucp, Open MPI's openib help text).
The negative controls are the same producers' benign lines, several of them worded like faults.
"""

from __future__ import annotations

import pytest

from diagnosis.explain import explain
from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

FAULTS = [
    # Slurm: a node lost, a memory error, an unkillable step, memory limits, the time limit
    ("srun: error: Node failure on gpu-node-17", C.HOST_HARDWARE, "slurm.node_failure"),
    (
        "slurmstepd: error: *** STEP 4711.0 ON gpu-node-03 CANCELLED AT 2024-05-01T10:00:00 "
        "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
        C.HOST_HARDWARE,
        "slurm.node_failure",
    ),
    (
        "[2024-05-01T10:00:00.123] Killing JobId=4711 on failed node gpu-node-17",
        C.HOST_HARDWARE,
        "slurm.node_failure",
    ),
    (
        "[2024-05-01T10:00:00.123] error: Nodes gpu-node-[17-18] not responding, setting DOWN",
        C.HOST_HARDWARE,
        "slurm.node_failure",
    ),
    (
        "slurmstepd: error: *** JOB 4711 ON gpu-node-03 UNCORRECTABLE MEMORY ERROR AT "
        "2024-05-01T10:00:00 ***",
        C.HOST_HARDWARE,
        "slurm.memory_error",
    ),
    (
        "slurmstepd: error: *** JOB 4711 STEPD TERMINATED ON gpu-node-03 AT 2024-05-01T10:00:00 "
        "DUE TO JOB NOT ENDING WITH SIGNALS ***",
        C.HANG,
        "slurm.unkillable_step",
    ),
    (
        "   NodeName=gpu-node-03 Arch=x86_64 State=DRAIN Reason=Kill task failed "
        "[slurm@2024-05-01T10:00:00]",
        C.HANG,
        "slurm.unkillable_step",
    ),
    (
        "slurmstepd: error: StepId=4711.0 exceeded memory limit (52428800 > 41943040), being "
        "killed",
        C.HOST_MEMORY,
        "slurm.memory_limit",
    ),
    ("srun: error: gpu-node-03: task 5: Out Of Memory", C.HOST_MEMORY, "slurm.memory_limit"),
    (
        "slurmstepd: error: *** JOB 4711 ON gpu-node-03 CANCELLED AT 2024-05-01T10:00:00 DUE TO "
        "TIME LIMIT ***",
        C.BENIGN,
        "slurm.time_limit",
    ),
    (
        "srun: error: gpu-node-03: tasks 0-7: Exited with exit code 1",
        C.APPLICATION,
        "slurm.task_exit",
    ),
    # a task killed by a signal, in srun's and slurmctld's words: the signal rules
    ("srun: error: gpu-node-03: task 3: Killed", C.HOST_MEMORY, "slurm.task_killed"),
    (
        "[2024-05-01T10:00:00.123] _job_complete: JobId=4711 WTERMSIG 9",
        C.HOST_MEMORY,
        "process.sigkill",
    ),
    (
        "srun: error: gpu-node-03: task 2: Segmentation fault (core dumped)",
        C.APPLICATION,
        "process.segfault",
    ),
    # Kubernetes: evictions, a node gone dark, GPUs lost after scheduling, a crash loop
    (
        "  Warning  Evicted  2m  kubelet  The node was low on resource: memory. Threshold "
        "quantity: 100Mi, available: 51200Ki. Container trainer was using 61Gi, request is 8Gi, "
        "has larger consumption of memory.",
        C.HOST_MEMORY,
        "k8s.evicted",
    ),
    (
        "4m  Warning  Evicted  pod/trainer-0  The node had condition: [MemoryPressure].",
        C.HOST_MEMORY,
        "k8s.evicted",
    ),
    (
        "  Warning  Evicted  3m  kubelet  The node was low on resource: ephemeral-storage. "
        "Container trainer was using 120Gi, request is 0, has larger consumption of "
        "ephemeral-storage.",
        C.HOST_STORAGE,
        "k8s.evicted",
    ),
    (
        "  Warning  EvictionThresholdMet  1m  kubelet  Attempting to reclaim memory; "
        "NodeHasInsufficientMemory",
        C.HOST_MEMORY,
        "k8s.evicted",
    ),
    (
        "  Normal  NodeNotReady  5m  node-controller  Node gpu-node-03 status is now: "
        "NodeNotReady\n  Ready  Unknown  NodeStatusUnknown  Kubelet stopped posting node status.",
        C.UNKNOWN,  # (the cause is not said: the corpus files it `unknown`, round 84)
        "k8s.node_lost",
    ),
    (
        "  Warning  UnexpectedAdmissionError  10s  kubelet  Allocate failed due to requested "
        "number of devices unavailable for nvidia.com/gpu. Requested: 8, Available: 7, which is "
        "unexpected",
        C.GPU_HARDWARE,
        "k8s.gpu_admission",
    ),
    (
        "  Warning  BackOff  1m (x25 over 6m)  kubelet  Back-off restarting failed container "
        "trainer in pod trainer-0_ml(5d1c)",
        C.APPLICATION,
        "k8s.crash_loop",
    ),
    # NVIDIA's device plugin: the Xid takes the catalogue's verdict
    (
        "I0115 10:23:45.123456       1 health.go:281] XidCriticalError: Xid=79 on "
        "Device=GPU-6b0a2c3e-1f2d-4c55-9a77-0c1d2e3f4a5b; marking device as unhealthy.",
        C.GPU_HARDWARE,
        "k8s.device_plugin_xid",
    ),
    (
        "I0115 10:23:45.123512       1 server.go:288] 'nvidia.com/gpu' device marked unhealthy: "
        "GPU-6b0a2c3e-1f2d-4c55-9a77-0c1d2e3f4a5b",
        C.GPU_HARDWARE,
        "k8s.device_unhealthy",
    ),
    # Lustre, Spectrum Scale, BeeGFS, CephFS, FUSE
    (
        "LustreError: 167-0: scratch-OST0004-osc-ffff88103e5c2000: This client was evicted by "
        "scratch-OST0004; in progress operations using this service will fail.",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "Lustre: 2345:0:(llite_lib.c:2745:ll_dirty_page_discard_warn()) scratch: dirty page "
        "discard: 10.0.0.5@o2ib:/scratch/fid: [0x200000401:0x1:0x0]/ckpt.pt may get corrupted "
        "(rc -108)",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "Mon May  1 10:00:00.123 2024: [E] Node 10.0.0.7 (gpu-node-07) is being expelled due to "
        "expired lease.",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "[12345.678] ceph: mds0 reconnect denied",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "(1) 10:00:00 Worker1 [NodeConn (acquire stream)] >> Connect failed on all available "
        "routes: storage01 [ID: 3]",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "OSError: [Errno 107] Transport endpoint is not connected: '/mnt/gcs/shard-00012.tar'",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "ls: cannot access '/mnt/data': Transport endpoint is not connected",
        C.HOST_STORAGE,
        "netfs.data_lost",
    ),
    (
        "Lustre: scratch-OST0004-osc-ffff88103e5c2000: Connection to scratch-OST0004 (at "
        "10.0.0.5@o2ib) was lost; in progress operations using this service will wait for "
        "recovery to complete",
        C.HOST_STORAGE,
        "netfs.server_wait",
    ),
    (
        "LustreError: 11-0: scratch-OST0004-osc-ffff88103e5c2000: operation ost_read to node "
        "10.0.0.5@o2ib failed: rc = -107",
        C.HOST_STORAGE,
        "netfs.server_wait",
    ),
    (
        "LNetError: 2345:0:(o2iblnd_cb.c:3372:kiblnd_check_conns()) Timed out RDMA with "
        "10.0.0.5@o2ib (52): c: 0, oc: 0, rc: 8",
        C.NETWORK,
        "netfs.lnet_error",
    ),
    # DCGM: memory, degradation, NVLink thresholds, NvSwitch, Xid
    (
        "|                           | Detected 2 volatile double-bit ECC error(s) in GPU 3.    |",
        C.GPU_HARDWARE,
        "dcgm.gpu_memory",
    ),
    (
        "| Warning                   | Found 12 faulty memory elements on GPU 3 Run   |",
        C.GPU_HARDWARE,
        "dcgm.gpu_memory",
    ),
    (
        "GPU 2 had uncorrectable memory errors and row remapping failed. Run a field diagnostic "
        "on the GPU.",
        C.GPU_HARDWARE,
        "dcgm.gpu_memory",
    ),
    (
        "|  | PCIe system:  Warning - Detected more than 8 PCIe replays per minute for GPU 1 : 12",
        C.GPU_DEGRADED,
        "dcgm.gpu_degraded",
    ),
    (
        "There were thermal violations totaling 12.5 seconds for GPU 5",
        C.GPU_DEGRADED,
        "dcgm.gpu_degraded",
    ),
    (
        "Detected 42 data_crc NvLink errors on GPU 0's NVLink (should be 0) Run a field "
        "diagnostic on the GPU.",
        C.GPU_HARDWARE,
        "dcgm.nvlink",
    ),
    ("Detected fatal errors on NvSwitch 2 link 17", C.NETWORK, "dcgm.nvswitch"),
    ("Detected XID 79 for GPU 4", C.GPU_HARDWARE, "dcgm.xid"),
    # InfiniBand tools, the subnet manager, NCCL's async events, ethtool's PHY counters
    (
        "   GUID 0x0002c903000e0b72 port 12: [SymbolErrorCounter == 65535] "
        "[LinkErrorRecoveryCounter == 255]",
        C.NETWORK,
        "ib.error_counters",
    ),
    ("LinkDownedCounter:...............3", C.NETWORK, "ib.error_counters"),
    ("     rx_crc_errors_phy: 18231", C.NETWORK, "ib.error_counters"),
    (
        "          0x7cfe900300a0f3a0     12    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)"
        '==>       7    5[  ] "gpu-node-07 HCA-1" ( Could be 53.125 Gbps)',
        C.NETWORK,
        "ib.degraded_link",
    ),
    ("Jan 10 10:00:00 sm01 OpenSM[1234]: SM port is down", C.NETWORK, "ib.sm_port_down"),
    # UCX, Open MPI over verbs, a memlock limit
    (
        "[1712345678.123456] [gpu-node-3:12345:0]        ud_ep.c:278  UCX  ERROR UD endpoint "
        "0x1b4e7e0 to <no debug data>: unhandled timeout error",
        C.NETWORK,
        "rdma.transport_timeout",
    ),
    (
        "ucp_ep.c:1510 UCX  ERROR Error on ep 0x7f2 (status Endpoint timeout) will not be handled "
        "since no error callback is installed",
        C.NETWORK,
        "rdma.transport_timeout",
    ),
    (
        "The InfiniBand retry count between two MPI processes has been\nexceeded.",
        C.NETWORK,
        "rdma.transport_timeout",
    ),
    (
        "[gpu-node-3:12345:0:12345] ib_md.c:349  UCX  ERROR ibv_reg_mr(address=0x7f, "
        "length=4194304, access=0xf) failed: Cannot allocate memory : Please set max locked "
        "memory (ulimit -l) to 'unlimited' (current: 65536 kbytes)",
        C.NETWORK,
        "rdma.memlock",
    ),
    (
        "gpu-node-01:1234:1300 [0] NCCL INFO NET/IB : mlx5_0:1 Got non-fatal async event: port "
        "error(10)",
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
    # Slurm: a user's cancellation, a preemption, a requeue, the abort wait, cleanup
    "slurmstepd: error: *** JOB 4711 ON gpu-node-03 CANCELLED AT 2024-05-01T10:00:00 ***",
    "slurmstepd: error: *** JOB 4711 ON gpu-node-03 CANCELLED AT 2024-05-01T10:00:00 DUE TO "
    "PREEMPTION ***",
    "slurmstepd: error: *** JOB 4711 ON gpu-node-03 CANCELLED AT 2024-05-01T10:00:00 DUE TO JOB "
    "REQUEUE ***",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    "srun: forcing job termination",
    "srun: error: gpu-node-03: tasks 0-7: Exited with exit code 0",
    "slurmstepd: StepId=4711.0 hit memory limit at least once during execution. This may or may "
    "not result in some failure.",
    "[2024-05-01T10:00:00.123] Node gpu-node-17 now responding",
    # Kubernetes: healthy conditions, routine events
    "  Normal  NodeHasSufficientMemory  22m  kubelet  Node gpu-node-03 status is now: "
    "NodeHasSufficientMemory",
    "  Normal  NodeHasNoDiskPressure  22m  kubelet  Node gpu-node-03 status is now: "
    "NodeHasNoDiskPressure",
    "  MemoryPressure   False   KubeletHasSufficientMemory   kubelet has sufficient memory "
    "available",
    "  Normal  Killing  4m  kubelet  Stopping container trainer",
    '  Normal  Pulled  2m  kubelet  Container image "nvcr.io/nvidia/pytorch:24.01-py3" already '
    "present on machine",
    "I0115 10:23:40.000000       1 health.go:120] Ignoring the following XIDs for health checks: "
    "[13 31 43 45 68 109]",
    # filesystems reconnecting, mounting, a socket's errno 107
    "Lustre: scratch-OST0004-osc-ffff88103e5c2000: Connection restored to scratch-OST0004 (at "
    "10.0.0.5@o2ib)",
    "[65324.056564] libceph: mon2 (1)10.0.0.247:6789 session lost, hunting for new mon",
    "[65324.058645] libceph: mon1 (1)10.0.0.249:6789 session established",
    "[12345.678] ceph: mds0 reconnect success",
    # DCGM passing rows and its own failures
    "Successfully ran diagnostic for group.",
    "| Overall Health            | Healthy                                                  |",
    "| GPU Memory                | Pass - All                                     |",
    "| Warning                   | There was an internal error during the test:   |",
    "| Warning                   | GPU 0GPU 0's NvLink link 0 is currently down   |",
    # InfiniBand tools at zero, summaries, congestion
    "SymbolErrorCounter:..............0",
    "PortXmitWait:....................123456",
    "## Summary: 24 nodes checked, 0 bad nodes found",
    "     rx_discards_phy: 120",
    "gpu-node-01:1234:1300 [0] NCCL INFO NET/IB : mlx5_0:1 Got async event : port active",
]


@pytest.mark.parametrize("line", BENIGN)
def test_benign_lines_of_the_same_producers_stay_silent(line: str) -> None:
    assert alarms(line) == [], line


def test_a_wait_said_once_that_recovered_is_benign_and_a_repeated_one_is_not() -> None:
    text = (
        "Lustre: scratch-OST0004-osc-ffff88103e5c2000: Connection to scratch-OST0004 (at "
        "10.0.0.5@o2ib) was lost; in progress operations using this service will wait for "
        "recovery to complete\n"
        "Lustre: scratch-OST0004-osc-ffff88103e5c2000: Connection restored to scratch-OST0004 "
        "(at 10.0.0.5@o2ib)"
    )
    assert alarms(text) == []
    assert first(text) is None  # the recovery line gives no finding of its own
    flapping = "\n".join([text, text.replace("scratch-OST0004-osc", "scratch-OST0005-osc")])
    found = first(flapping)
    assert found is not None and found[:2] == (Category.HOST_STORAGE, "netfs.server_wait")


def test_errno_107_of_a_socket_is_not_read_as_storage() -> None:
    found = first("OSError: [Errno 107] Transport endpoint is not connected")
    assert found is None or found[0] != Category.HOST_STORAGE


def test_the_device_plugin_xid_takes_the_catalogue_verdict() -> None:
    app = explain("XidCriticalError: Xid=13 on Device=GPU-1; marking device as unhealthy.")
    lost = explain("XidCriticalError: Xid=79 on Device=GPU-1; marking device as unhealthy.")
    assert app[0].category != lost[0].category
    assert lost[0].category == Category.GPU_HARDWARE


def test_a_task_exit_code_ranks_below_the_cause_printed_before_it() -> None:
    text = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "srun: error: gpu-node-03: task 0: Exited with exit code 1"
    )
    assert explain(text)[0].rule != "slurm.task_exit"
