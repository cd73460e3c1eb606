"""Classes of the fifty-sixth round (fresh_82, fresh_83, fresh_84) and of review40's faults told
in words: a GPU said to vanish, an NFS mount said to hang or block, Open MPI's path migration
with no port left, IPoIB that cannot attach to its multicast group; and, silent, their healthy
neighbours."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_84", "0002", Category.GPU_HARDWARE, "said.gpu_lost"),
        ("fresh_84", "0008", Category.GPU_HARDWARE, "said.gpu_lost"),
        ("fresh_83", "0017", Category.HOST_STORAGE, "said.netfs_hung"),
        ("fresh_83", "0005", Category.NETWORK, "ib.async_port_error"),
        ("fresh_83", "0008", Category.NETWORK, "ib.async_port_error"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("Since this morning GPU 6 on node-14 vanished from nvidia-smi.", Category.GPU_HARDWARE),
        (
            "The checkpoint NFS share is stuck again on rack B, df never returns.",
            Category.HOST_STORAGE,
        ),
        ("Our NFS clients hang in D state whenever the backup runs.", Category.HOST_STORAGE),
        ("NVLink 5 on GPU 2 stays inactive after the reseat.", Category.GPU_HARDWARE),
        ("NVLink replay errors on GPU 3 keep rising during the all-reduce.", Category.GPU_DEGRADED),
        ("GPU 7 has a row remap pending since the ECC event.", Category.GPU_DEGRADED),
        ("ib0: failed to attach to multicast group, ret = -22", Category.NETWORK),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Heads-up: the NFS server will go down tonight for patching, /home will hang then.",
        "The NFS mount hung last week until we replaced the switch optic; fine since.",
        "Is 'No devices were found' expected here? That node has no GPUs.",
        "GPU 0 shows PCIe Gen 1 instead of Gen 4 while it sits idle: ASPM power saving.",
        "ib0: sendonly multicast join failed for ff12:401b:ffff::1, status -22",
        "NCCL_IB_DISABLE=1 on purpose for this debug run, so the all-reduce over sockets is slow.",
    ]
)
