"""Classes of the sixty-eighth round (fresh_115 to fresh_117), each read as a class: a PCIe
device said to be hot-removed (the port's Surprise Down, containment and failed recovery are the
removal's), corrected errors said to be corrected by the hardware themselves, CUDA's launch
timeout (the watchdog's Xid 8 beside it), a RAID controller's battery low in a BMC's log,
InternEvo's NaN grad norm (after Chinese words too), Slurm nodes defined with more CPUs than
they have, slurmd that dies on gres.conf, torchrun's `--standalone` with the flags of a job
across nodes, BeeGFS's client refusing its configuration, a kubelet without a CNI
configuration, and EHOSTUNREACH wherever it is printed."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_115", "0001", Category.BENIGN, "host.pcie_hot_removed"),
        ("fresh_115", "0009", Category.BENIGN, "said.harmless"),
        ("fresh_115", "0010", Category.GPU_APPLICATION, "cuda.launch_timeout"),
        ("fresh_115", "0013", Category.HOST_HARDWARE, "platform.host_warning"),
        ("fresh_115", "0020", Category.BENIGN, "host.pcie_hot_removed"),
        ("fresh_116", "0001", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_116", "0006", Category.APPLICATION, "slurm.node_config_mismatch"),
        ("fresh_116", "0007", Category.APPLICATION, "slurm.slurmd_fatal"),
        ("fresh_116", "0008", Category.APPLICATION, "slurm.node_config_mismatch"),
        ("fresh_116", "0012", Category.APPLICATION, "dist.standalone_across_nodes"),
        ("fresh_116", "0013", Category.APPLICATION, "netfs.client_missing"),
        ("fresh_116", "0019", Category.APPLICATION, "k8s.cni_not_ready"),
        ("fresh_116", "0024", Category.NETWORK, "net.no_route_to_host"),
    ]
)

_SDES = (
    "pcieport 0000:00:01.4: DPC: containment event, status:0x1f01 source:0x0000\n"
    "pcieport 0000:00:01.4: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
    "type=Transaction Layer, (Receiver ID)\n"
    "pcieport 0000:00:01.4:    [ 5] SDES (First)\n"
    "pcieport 0000:00:01.4: AER: device recovery failed"
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        # the same port's errors with no removal said are a fault
        (_SDES, Category.HOST_HARDWARE),
        ("CUDA_ERROR_LAUNCH_TIMEOUT returned by cuLaunchKernel", Category.GPU_APPLICATION),
        (
            "RuntimeError: CUDA error: the launch timed out and was terminated",
            Category.GPU_APPLICATION,
        ),
        ("Log Entry 12: The RAID controller battery is failing.", Category.HOST_HARDWARE),
        ("At step 3000 we got NaN grad norm occurs again and the run stopped.", Category.NUMERICAL),
        (
            "[2024-01-02T10:00:00.000] error: Node gpu07 has low cpu count (64 < 128)",
            Category.APPLICATION,
        ),
        ("slurmd[1234]: fatal: gres.conf duplicate records for gpu", Category.APPLICATION),
        (
            "torchrun --nnodes=2 --nproc-per-node 8 --standalone train.py\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
            Category.APPLICATION,
        ),
        (
            "kubelet[812]: E0101 kubelet.go:2095] Container runtime network not ready: "
            "NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is "
            "not ready: cni config uninitialized",
            Category.APPLICATION,
        ),
        ("ssh: connect to host node12 port 22: No route to host", Category.NETWORK),
        # another CPU's throttle and errors corrected by the hardware are not the same record's
        (
            "The errors themselves are not corrected.\npcieport 0000:00:02.0: AER: Corrected "
            "error received: 0000:00:02.0",
            Category.HOST_HARDWARE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Hot-removing the NVMe drive from slot 3 prints:\n" + _SDES,
        "During our looping hot plug test the port logged:\n" + _SDES,
        "torchrun --standalone --nnodes=1 --nproc-per-node 8 train.py",
        "The errors themselves are corrected by the hardware, but the repeated entries make "
        "the log confusing:\npcieport 0000:00:02.0: AER: Multiple Corrected error received: "
        "id=0010",
    ]
)


test_node_hangs_are_read = round_tests(
    [
        ("fresh_116", "0005", Category.HANG, "k8s.pleg_unhealthy"),
        ("fresh_116", "0018", Category.HANG, "kernel.netdev_refcount_stuck"),
    ]
)

test_node_hangs_hold_in_other_words = read_as_tests(
    [
        (
            "Ready False KubeletNotReady PLEG is not healthy: pleg was last seen active "
            "4m12.5s ago; threshold is 3m0s",
            Category.HANG,
        ),
        (
            "[81234.5] unregister_netdevice: waiting for eth0 to become free. Usage count = 1",
            Category.HANG,
        ),
    ]
)
