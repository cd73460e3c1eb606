"""Classes of the seventy-third round (fresh_130 to fresh_132), scored blind at 8b6ac2d: CUDA's
`system not yet initialized` in the runtime's own words and filed as the node's setup (Fabric
Manager), nvidia-peermem not loaded or not registered with the IB core, NVIDIA's persistence
daemon that did not start, nccl-tests' benchmark said stuck, apex's loss scale halved below 1,
Slurm's `Reason=Low RealMemory`, a build said to lack a feature, the Ceph cluster's own health
report, a panic asked for by a storage layer (Lustre's LBUG, a ZFS pool's failmode), the NFS
client's bad sequence-id without a server name; a figure that `falls within the expected range`
is no fall, and a Ceph health check said to flap is no link's flapping."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_130", "0006", Category.APPLICATION, "fabric.cuda_not_ready"),
        ("fresh_130", "0012", Category.NETWORK, "fabric.peermem_missing"),
        ("fresh_130", "0013", Category.NETWORK, "fabric.peermem_missing"),
        ("fresh_130", "0018", Category.APPLICATION, "fabric.cuda_not_ready"),
        ("fresh_130", "0022", Category.APPLICATION, "driver.persistenced_failed"),
        ("fresh_130", "0023", Category.APPLICATION, "driver.persistenced_failed"),
        ("fresh_131", "0010", Category.HANG, "stalled.said"),
        ("fresh_131", "0020", Category.NUMERICAL, "training.loss_scale_stuck"),
        ("fresh_132", "0011", Category.APPLICATION, "slurm.node_config_mismatch"),
        ("fresh_132", "0012", Category.APPLICATION, "said.built_without"),
        ("fresh_132", "0014", Category.HOST_STORAGE, "netfs.ceph_unhealthy"),
        ("fresh_132", "0024", Category.HOST_STORAGE, "netfs.data_lost"),
        ("fresh_132", "0025", Category.HOST_STORAGE, "storage.zpool_degraded"),
        ("fresh_132", "0026", Category.HOST_STORAGE, "storage.nfs"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("llama_init: failed to initialize CUDA: system not yet initialized", Category.APPLICATION),
        (
            "cat: /sys/kernel/mm/memory_peers/nv_mem/version: No such file or directory",
            Category.NETWORK,
        ),
        ("After every reboot nvidia_peermem is not listed in lsmod.", Category.NETWORK),
        (
            "Jan 02 10:00:01 gpu3 systemd[1]: Failed to start nvidia-persistenced.service - "
            "NVIDIA Persistence Daemon.",
            Category.APPLICATION,
        ),
        ("broadcast_perf hangs at size 4194304 on two nodes.", Category.HANG),
        (
            "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to "
            "0.000244140625",
            Category.NUMERICAL,
        ),
        ("   NodeName=gpu07 State=DRAIN Reason=Low RealMemory", Category.APPLICATION),
        ("AssertionError: Torch not compiled with CUDA enabled", Category.APPLICATION),
        ("Our Open MPI was built without CUDA support, so the job fails.", Category.APPLICATION),
        (
            "2024-03-01 cluster [WRN] Health check failed: 12 slow ops, oldest one blocked for "
            "212 sec, osd.4 has slow ops (SLOW_OPS)",
            Category.HOST_STORAGE,
        ),
        (
            "health: HEALTH_ERR; 3 osds down; 128 pgs stale; 40 requests are blocked > 32 sec",
            Category.HOST_STORAGE,
        ),
        (
            "[  88.1] Kernel panic - not syncing: Pool 'tank' has encountered an uncorrectable "
            "I/O failure and the failure mode property for this pool is set to panic.",
            Category.HOST_STORAGE,
        ),
        (
            "[  92.1] LustreError: 99:0:(file.c:10:ll_file_release()) LBUG\n"
            "[  92.2] Kernel panic - not syncing: LBUG",
            Category.HOST_STORAGE,
        ),
        (
            "[7.1] NFS: v4 server returned a bad sequence-id error on an unconfirmed sequence "
            "ffff8817c8fbee20!",
            Category.HOST_STORAGE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        # the cluster's health checks counted at zero, or healthy
        "cluster [INF] Health check update: 0 slow ops, oldest one blocked for 41 sec",
        "health: HEALTH_OK",
        # a measured rate said to be within range, then a capture that disagrees
        'The "BW average[MB/sec]" value was 11728.47, which falls within the expected range. '
        "However, the capture shows a peak of 2 GB/s, significantly different from 11728.47 MB/s.",
        # a health check that flaps is no link
        "Our Ceph keeps flapping HEALTH_WARN on the slow-op alert: one transient slow op on a "
        "cheap SSD parks the cluster in WARN for a day. No client impact.",
        # a build said to have what it needs
        "This wheel was built with CUDA 12.1 support and runs fine.",
        # the persistence daemon that started
        "Jan 02 10:00:01 gpu3 nvidia-persistenced[1405]: Started (1405)",
    ]
)
