"""Message classes added in the third corpus round (issue 21): each as a whole class.

PCIe AER in both kernel spellings and failed recovery, the module loader's symbol errors for
the peer-memory module, cgroup v1 OOM report lines, ibstatus port states, signals reported by
Open MPI and SIGTERM, NVLink without an Xid (nvidia-smi, NCCL), DCGM thermal and performance
messages, generic step-time slowdowns, one slow device among its peers, mdadm/mdstat and SCSI
resets. Every line is a real one from the corpus (tests/fixtures/explain/corpus); the comment
names its source.
"""

from __future__ import annotations

import pytest

from diagnosis.explain import explain
from diagnosis.explain.peers import MIN_PEERS, slow_peer
from diagnosis.model import Category, ComponentKind, Severity

# pop-os/pop#3363 (Linux >= 6.x spelling) and GSConnect#1052 (older spelling)
AER_CORRECTABLE = (
    "Sep 19 16:18:02 bubz kernel: [68183.615790] pcieport 0000:00:03.1: AER: Correctable error "
    "message received from 0000:00:00.0"
)
AER_CORRECTED = (
    "фев 12 00:48:02 kernel: pcieport 0000:00:1c.5: AER: Corrected error received: 0000:00:1c.5"
)
# cBio/cbio-cluster#342: a healthy stretch, then the job slows down threefold
HEALTHY_STEPS = [
    "2015-11-21 05:54:18,834: Iteration took 32.709 s.",
    "2015-11-21 05:54:51,243: Iteration took 32.403 s.",
    "2015-11-21 05:55:24,073: Iteration took 32.824 s.",
    "2015-11-21 05:55:55,827: Iteration took 31.747 s.",
    "2015-11-21 05:56:26,363: Iteration took 30.530 s.",
    "2015-11-21 05:56:58,877: Iteration took 32.507 s.",
    "2015-11-21 05:57:31,882: Iteration took 32.999 s.",
    "2015-11-21 05:58:02,966: Iteration took 31.077 s.",
]
SLOW_STEPS = [
    "2015-11-21 05:59:51,511: Iteration took 108.539 s.",
    "2015-11-21 06:01:33,997: Iteration took 102.479 s.",
]
# NVIDIA/DCGM#122: ubergemm on a DGX A100 whose GPU 0 runs ~3x slower
GEMM = [
    "GEMM [I] (ADAPTER#0)  Ending with 6698.442948608 GFlops",
    "GEMM [I] (ADAPTER#2)  Ending with 19239.381499904 GFlops",
    "GEMM [I] (ADAPTER#1)  Ending with 19148.107153408 GFlops",
    "GEMM [I] (ADAPTER#3)  Ending with 19256.40617984 GFlops",
    "GEMM [I] (ADAPTER#4)  Ending with 19190.677241856 GFlops",
    "GEMM [I] (ADAPTER#5)  Ending with 19096.020189184 GFlops",
]


def _first(text: str) -> tuple[Category, str | None]:
    findings = explain(text)
    return (findings[0].category, findings[0].rule) if findings else (Category.UNKNOWN, None)


@pytest.mark.parametrize("line", [AER_CORRECTABLE, AER_CORRECTED])
def test_corrected_aer_in_both_kernel_spellings_is_a_host_warning(line: str) -> None:
    (finding,) = explain(line)
    assert (finding.category, finding.severity) == (Category.HOST_HARDWARE, Severity.WARNING)
    assert finding.rule == "host.pcie_error"


@pytest.mark.parametrize(
    "line",
    [
        # minisforum-docs/MS-02-Ultra#10: the driver has no AER handler
        "Sep 22 09:59:09 pve kernel: xhci_hcd 0000:97:00.0: AER: can't recover "
        "(no error_detected callback)",
        # rwth-i6/returnn#1500: the Root Port reset did not bring the device back
        "[  +0.000041] pcieport 0000:00:03.0: AER: device recovery failed",
    ],
)
def test_failed_aer_recovery_is_a_host_error(line: str) -> None:
    (finding,) = explain(line)
    assert (finding.category, finding.severity) == (Category.HOST_HARDWARE, Severity.ERROR)


@pytest.mark.parametrize(
    "line",
    [
        # NVIDIA/gpu-operator#2868, Mellanox/nv_peer_memory#8 and #59
        "[Tue Sep  8 17:16:02 2026] nvidia_peermem: disagrees about version of symbol "
        "ib_register_peer_memory_client",
        "[  366.264587] nv_peer_mem: Unknown symbol nvidia_p2p_get_pages (err -22)",
        "insmod: ERROR: could not insert module nv_peer_mem.ko: Invalid parameters",
    ],
)
def test_peer_memory_module_that_does_not_load_is_the_nic_path(line: str) -> None:
    (finding,) = explain(line)
    assert (finding.category, finding.component) == (Category.NETWORK, ComponentKind.NIC)


def test_cgroup_v1_oom_report_lines_are_the_oom_killer_and_confirm_sigkill() -> None:
    # aws/amazon-ecs-agent#4508: mm/memcontrol.c's report lines without a 'Killed process'
    usage = "[Wed Feb 19 06:41:03 2025] memory: usage 1048576kB, limit 1048576kB, failcnt 34667727"
    assert _first(usage) == (Category.HOST_MEMORY, "host.oom_killer")
    # with a torchrun SIGKILL report in the same input the reading is confirmed
    # ColossalAI-Chat (corpus): torchrun's report of the same kind of death
    sigkill = (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 "
        "(pid: 812917) of binary: /data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/python"
    )
    findings = {f.rule: f for f in explain(sigkill + "\n" + usage)}
    assert findings["process.sigkill"].confidence >= 0.85


def test_ibstatus_port_down_is_a_network_warning() -> None:
    # NVIDIA/nccl#1935: ibstatus output of a disabled HCA port
    text = (
        "Infiniband device 'mlx5_11' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:58a2:"
        "e103:0022:ce5c\n\tbase lid:\t 0xffff\n\tsm lid:\t\t 0x0\n\tstate:\t\t 1: DOWN\n"
        "\tphys state:\t 3: Disabled"
    )
    assert _first(text) == (Category.NETWORK, "rdma.port_down")


def test_signals_reported_by_open_mpi_and_sigterm() -> None:
    # NVIDIA/nccl#1419 (prterun); pytorch/pytorch#4871: a DataLoader worker stopped from outside
    segv = (
        "prterun noticed that process rank 48 with PID 613162 on node gpu-node07 exited on "
        "signal 11 (Segmentation fault)."
    )
    assert _first(segv) == (Category.APPLICATION, "process.segfault")
    term = "RuntimeError: DataLoader worker (pid 710) is killed by signal: Terminated."
    assert _first(term) == (Category.UNKNOWN, "process.sigterm")


@pytest.mark.parametrize(
    "line",
    [
        # Azure/azhpc-diagnostics#73 (nvidia-smi nvlink -s) and NVIDIA/nccl#2329 (NCCL's check)
        "         Link 3: <inactive>",
        "P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case "
        "given their connectivity, and is probably due to a hardware issue. If you still want "
        "to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
    ],
)
def test_nvlink_down_without_an_xid_is_the_gpu(line: str) -> None:
    assert _first(line) == (Category.GPU_HARDWARE, "nvlink.links_down")


def test_p2p_off_on_gpus_without_nvlink_is_silent() -> None:
    # NVIDIA/TensorRT-LLM#2225: RTX 4090s have no P2P; NCCL says so at INFO
    line = (
        "bcc-qianfan-gpu4090-offline-1:89404:89404 [2] NCCL INFO P2P is disabled between "
        "connected GPUs 6 and 7. You can repress this message with NCCL_IGNORE_DISABLED_P2P=1."
    )
    assert explain(line) == []


def test_dcgm_thermal_event_is_degraded_and_low_gflops_is_a_straggler() -> None:
    # NVIDIA/DCGM#270 and NVIDIA/DCGM#122
    thermal = (
        "ERROR [1514002:1514004] [[Health]] Detected a WARNING in health system Thermal: "
        "'Detected clocks event due to thermal violation in GPU 2. Verify that the cooling on "
        "this machine is functional"
    )
    (finding,) = explain(thermal)
    assert (finding.category, finding.gpu) == (Category.GPU_DEGRADED, 2)
    slow = "GPU 5 Detected 511.70 GFLOPs for GPU 5 which is below the threshold 1480.77"
    (finding,) = explain(slow)
    assert (finding.category, finding.component, finding.gpu) == (
        Category.STRAGGLER,
        ComponentKind.GPU,
        5,
    )


def test_generic_step_times_alarm_on_a_sustained_slowdown_only() -> None:
    assert {f.category for f in explain("\n".join(HEALTHY_STEPS))} == {Category.BENIGN}
    findings = explain("\n".join(HEALTHY_STEPS + SLOW_STEPS))
    assert findings[0].category == Category.STRAGGLER
    assert findings[0].rule == "training.step_slowdown"
    assert "108.539" in findings[0].line
    # one slow step (a checkpoint, an eval) is not a slowdown
    assert {f.category for f in explain("\n".join(HEALTHY_STEPS + SLOW_STEPS[:1]))} == {
        Category.BENIGN
    }


def test_a_nan_loss_on_a_step_time_line_stays_numerical() -> None:
    # deepspeedai/DeepSpeed#1773
    assert _first("steps: 228 loss: nan iter time (s): 34.890 samples/sec: 73.373")[0] == (
        Category.NUMERICAL
    )


def test_one_device_far_below_its_peers_is_a_straggler() -> None:
    findings = explain("\n".join(GEMM))
    assert (findings[0].category, findings[0].rule) == (Category.STRAGGLER, "peers.slow_device")
    assert "ADAPTER#0" in findings[0].line
    # the healthy devices alone, and too few devices, never alarm
    assert explain("\n".join(GEMM[1:])) == []
    assert explain("\n".join(GEMM[: MIN_PEERS - 1])) == []


def test_slow_peer_needs_distinct_devices_and_a_real_gap() -> None:
    assert slow_peer([("0", 10.0), ("0", 10.0), ("0", 10.0), ("0", 1.0)]) is None
    assert slow_peer([("0", 10.0), ("1", 9.0), ("2", 8.0), ("3", 7.5)]) is None
    assert slow_peer([("0", 10.0), ("1", 9.0), ("2", 8.0), ("3", 2.0)]) == 3


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # neilbrown/mdadm#26: a 22-device RAID10 with two members missing
        (
            "      32231485440 blocks super 1.2 4096K chunks 2 near-copies [22/20] "
            "[UUUUUUUUUUUUUUUUU_U_UU]",
            Category.HOST_STORAGE,
        ),
        # SlyBase/homeassistant-openmediavault#93: mdadm --detail with a removed slot
        (
            "    Number   Major   Minor   RaidDevice State\n"
            "       0       8       16        0      active sync   /dev/sdb\n"
            "       1       8       32        1      active sync   /dev/sdc\n"
            "       -       0        0        2      removed",
            Category.HOST_STORAGE,
        ),
        # canonical/probert#125: a healthy mirror
        ("md127 : active raid1 sdc1[0] sdc2[1]\n      52395008 blocks super 1.2 [2/2] [UU]", None),
        # openzfs/zfs#4713: a SCSI disk reset
        ("[ 6621.896780] sd 12:0:15:0: Power-on or device reset occurred", Category.HOST_STORAGE),
    ],
)
def test_md_and_scsi_states(text: str, category: Category | None) -> None:
    findings = explain(text)
    if category is None:
        assert findings == []
    else:
        assert findings[0].category == category
