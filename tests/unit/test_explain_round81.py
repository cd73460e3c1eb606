"""Classes of the eighty-first round (fresh_154 to fresh_156), scored blind at 30c018d: replies
that call what is seen normal (`Looks like that is [normal.](...)`) or give a bottleneck as what
caps a figure they expect (the two development false alarms), Dell's UEFI0080 PCIe link below its
speed, Slurm's `Kill task failed` quoted, HPE iLO's Server Critical Fault, a hang said of the code
or after its last line, stops in Chinese and Japanese (`不跑了`, `進まない`), the fabric said
faulty in Chinese, mlx5 DevX's failed QP transition, mlx5's completion syndromes by name, UCX's
fatal endpoint timeout, a verb the device does not support (the job's set-up), NCCL with no
algorithm left to run a collective."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_154", "0000", Category.HOST_HARDWARE, "monitor.pcie_downgraded"),
        ("fresh_154", "0004", Category.HANG, "slurm.unkillable_step"),
        ("fresh_154", "0011", Category.HOST_HARDWARE, "host.bmc_critical_fault"),
        ("fresh_155", "0001", Category.HANG, "stalled.said"),
        ("fresh_155", "0003", Category.HANG, "stalled.said_elsewhere"),
        ("fresh_155", "0004", Category.HANG, "stalled.said_elsewhere"),
        ("fresh_155", "0027", Category.BENIGN, "slowdown.said_normal"),
        ("fresh_156", "0000", Category.NETWORK, "said.rdma_port"),
        ("fresh_156", "0007", Category.NETWORK, "rdma.qp_transition_failed"),
        ("fresh_156", "0011", Category.NETWORK, "rdma.completion_error"),
        ("fresh_156", "0017", Category.APPLICATION, "nccl.no_algorithm"),
        ("fresh_156", "0021", Category.APPLICATION, "rdma.verbs_failed"),
        ("fresh_156", "0023", Category.BENIGN, "slowdown.said_normal"),
        ("fresh_156", "0024", Category.NETWORK, "rdma.transport_timeout"),
        ("fresh_156", "0025", Category.NETWORK, "rdma.transport_timeout"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "UEFI0080: PCIe link width is not optimal for Bus:65 D:0 F:0. Expected link width is "
            "x16 but actual link width is x4.",
            Category.HOST_HARDWARE,
        ),
        ("sinfo -R shows 'Kill task failed' for gpu-07", Category.HANG),
        (
            "Server Critical Fault (Service Information: Runtime Fault, Processor 2, CPU Power "
            "Regulator (02h))",
            Category.HOST_HARDWARE,
        ),
        ("My code hangs after this line and never prints the next step.", Category.HANG),
        ("训练跑了两个小时就不跑了，也不报错", Category.HANG),
        (
            "UCX  ERROR ibv_create_ah(dlid=1 sl=0 port=1) for UD mlx5 connect on mlx5_0 failed: "
            "Connection timed out",
            Category.NETWORK,
        ),
        (
            "rc_iface.c:492 UCX ERROR ibv_create_srq() failed: Operation not supported",
            Category.APPLICATION,
        ),
        ("requester QP completed with RNR_RETRY_EXC_ERR and moved to ERR", Category.NETWORK),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "I tried running the code on a rented A100 and it stopped in the middle of the 64th epoch.",
        "Most of the time the bottleneck is the dataloader, as you need to decode JPEGs.",
        "NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/CUMEM",
    ]
)

test_the_development_floors_hold = round_tests(
    [
        # (for the slurm and straggler development floors this round took under 0.85)
        ("fresh_154", "0007", Category.APPLICATION, "said.nvml_missing"),
        ("fresh_138", "0003", Category.STRAGGLER, "straggler.slowness_in_words"),
    ]
)
