"""Classes of the sixty-third round (fresh_101, fresh_102), each read as a class: a mount whose
daemon went away (`transport endpoint is not connected` on a path), docker's devicemapper thin
pool nearly full, a filesystem said to turn read-only or a drive said broken, a job stuck on bad
I/O, a volume said 95 % full, a stuck NFS mount on a node a pod was scheduled to (a pod
`scheduled` is no planned work), a figure far below a published one; and an ENOSPC that is a
kernel table's, not a disk's (a memory cgroup's ids, inotify's watches)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_101", "0009", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_102", "0004", Category.HOST_STORAGE, "netfs.data_lost"),
        ("fresh_102", "0005", Category.HOST_STORAGE, "netfs.data_lost"),
        ("fresh_102", "0015", Category.HOST_STORAGE, "said.netfs_hung"),
        ("fresh_102", "0016", Category.HOST_STORAGE, "said.disk_trouble"),
        ("fresh_102", "0021", Category.HOST_STORAGE, "storage.thin_pool_full"),
        ("fresh_102", "0023", Category.HOST_STORAGE, "said.disk_trouble"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "ls: cannot access '/mnt/s3': Transport endpoint is not connected",
            Category.HOST_STORAGE,
        ),
        ("The scratch volume is about 97% full on node-3.", Category.HOST_STORAGE),
        ("After the crash the root filesystem was remounted read-only.", Category.HOST_STORAGE),
        ("The ranks hang because of a slow NFS on the login node.", Category.HOST_STORAGE),
        (
            "We get 120 TFLOPs/s per GPU, much lower than the 400 reported in the README.",
            Category.STRAGGLER,
        ),
        # a socket's ENOTCONN names no path: the program's error, not a mount's
        ("OSError: [Errno 107] Transport endpoint is not connected", Category.APPLICATION),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "slurmstepd: error: unable to add task[pid=4242] to memory cg '(null)': No space left "
        "on device (memory cgroup CSS IDs exhausted; the job ran fine)",
        "inotify_add_watch(/data) failed: No space left on device",
        "The pod is scheduled on node-5 and the NFS mount works fine.",
    ]
)
