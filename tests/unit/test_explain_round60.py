"""Classes of the sixtieth round (fresh_92 to fresh_94), each read as a class: more GPUs or nodes
and a slower step (diagnosis/explain/scaling.py), nvidia-smi that fails inside a container after
hours or a reload (the runtime's device cgroup, not a lost GPU), a local disk said to hang, fail
or fill, numpy's short write, a port left in PORT_INIT, NCCL said to fall back to sockets, a hang
told with NCCL's own warning (the warning's rule reads it), a filesystem the kernel has no client
for, a Slurm SPANK plugin's error; and a slowness given as what a cause may bring (`so it can be
slower`), which is no event."""

from __future__ import annotations

from diagnosis.explain.scaling import SCALING_RATIO
from diagnosis.model import Category
from tests.explain_helpers import first, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_92", "0012", Category.STRAGGLER, "slowdown.more_devices_slower"),
        ("fresh_92", "0013", Category.STRAGGLER, "slowdown.more_devices_slower"),
        ("fresh_92", "0018", Category.NETWORK, "slowness.cause_named"),
        ("fresh_93", "0001", Category.APPLICATION, "container.gpus_lost_over_time"),
        ("fresh_93", "0007", Category.APPLICATION, "container.gpus_lost_over_time"),
        ("fresh_94", "0007", Category.APPLICATION, "netfs.client_missing"),
        ("fresh_94", "0014", Category.HOST_STORAGE, "host.save_failed"),
        ("fresh_94", "0015", Category.HOST_STORAGE, "said.disk_trouble"),
        ("fresh_94", "0016", Category.NETWORK, "nccl.ib_completion_error"),
        ("fresh_94", "0018", Category.HOST_STORAGE, "said.disk_trouble"),
        ("fresh_94", "0019", Category.APPLICATION, "slurm.spank_plugin_error"),
        ("fresh_94", "0023", Category.NETWORK, "rdma.port_down"),
        ("fresh_94", "0024", Category.HOST_STORAGE, "said.disk_trouble"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("On a single GPU an epoch takes 10 min; on 4 GPUs it takes 45 min.", Category.STRAGGLER),
        (
            "With 2 nodes the throughput is 1200 tokens/s, with 1 node 3000 tokens/s.",
            Category.STRAGGLER,
        ),
        (
            "Single node: 2.1 s/step\nTwo nodes: 2.3 s/step\nFour nodes: 7.9 s/step",
            Category.STRAGGLER,
        ),
        (
            "Inside the pod nvidia-smi worked, but after 2 days it says Failed to initialize "
            "NVML: Unknown Error",
            Category.APPLICATION,
        ),
        (
            "After running systemctl daemon-reload, nvidia-smi in every container fails.",
            Category.APPLICATION,
        ),
        ("The jbd2 and kworker tasks are stuck in D state on /dev/nvme1n1.", Category.HOST_STORAGE),
        ("The checkpoint volume was completely full when the job saved.", Category.HOST_STORAGE),
        (
            "Our RAID controller reported a drive failure on node-12 last night.",
            Category.HOST_STORAGE,
        ),
        ("OSError: 4000000 requested and 1024 written", Category.HOST_STORAGE),
        ("        state:                  PORT_INIT (2)", Category.NETWORK),
        ("mount: /lustre: unknown filesystem type 'lustre'.", Category.APPLICATION),
        (
            "slurmd[1234]: error: spank: required plugin pyxis.so: init() failed with rc=-1",
            Category.APPLICATION,
        ),
        (
            "allreduce is 6x slower because NCCL falls back to sockets instead of RoCE",
            Category.NETWORK,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "1 GPU: 0.35 s/it, 8 GPUs: 0.41 s/it",
        "2 nodes x 8 GPUs: 450 samples/s\n1 node x 8 GPUs: 400 samples/s",
        "With 4 GPUs an epoch takes 5 min, with 1 GPU it takes 18 min.",
        "Training on 8 GPUs takes 1.2 s/it compared to 1 GPU at 0.3 s/it because the global "
        "batch is 8x larger.",
        "For multi-GPU training there is extra overhead, so it can be slower per iteration "
        "compared to training on one device only.",
        "If the disk is full, the checkpoint fails; make sure the volume is not full.",
        "Tasks were stuck in D state on the NFS mount until we replaced the switch.",
    ]
)


def test_more_devices_must_cost_the_whole_ratio() -> None:
    """Just under SCALING_RATIO on more GPUs is the cost of synchronising; at it, a straggler."""
    under = f"1 GPU: 1.0 s/it\n2 GPUs: {SCALING_RATIO * 0.95:.2f} s/it"
    at = f"1 GPU: 1.0 s/it\n2 GPUs: {SCALING_RATIO * 1.05:.2f} s/it"
    assert first(under) is None
    found = first(at)
    assert found is not None and found[:2] == (Category.STRAGGLER, "slowdown.more_devices_slower")
