"""Classes of the seventy-fifth round (fresh_136 to fresh_138), scored blind at 76f9775: a floppy
drive's I/O errors (a VM's empty virtual drive probed at boot) are no disk's, NCCL's missing
verbs library is its notice that it uses sockets, NCCL's bind on a port in use is the job's
set-up, Go's lower-case errno strings (`input/output error`, `read-only file system`), etcd's
slow write-ahead-log sync, NCCL's `corrupted comm object detected`, fairseq's minimum loss scale
with its figure, a stop said after a figure that `keeps going up` (no training that kept
going), a slowdown the speaker calls unexpected even with a setting of theirs, and retired
pages said pending."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_137", "0006", Category.HOST_STORAGE, "host.io_error"),
        ("fresh_137", "0009", Category.HOST_STORAGE, "storage.slow_fsync"),
        ("fresh_137", "0012", Category.HOST_STORAGE, "host.io_error"),
        ("fresh_138", "0001", Category.NUMERICAL, "training.loss_scale_min"),
        ("fresh_138", "0009", Category.APPLICATION, "dist.port_in_use"),
        ("fresh_138", "0010", Category.HANG, "stalled.said"),
        ("fresh_138", "0016", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_138", "0023", Category.APPLICATION, "nccl.invalid_usage"),
        ("fresh_138", "0025", Category.BENIGN, "nccl.benign_warn"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("[ 5.1] blk_update_request: I/O error, dev sda, sector 2048", Category.HOST_STORAGE),
        (
            "2024-01-02 10:00:00.1 W | etcdserver: wal: sync duration of 2.5s, expected less "
            "than 1s",
            Category.HOST_STORAGE,
        ),
        (
            "gpu1:9:12 [0] include/socket.h:347 NCCL WARN Call to bind failed : Address already "
            "in use",
            Category.APPLICATION,
        ),
        ("error: open /data/ckpt/shard-3: input/output error", Category.HOST_STORAGE),
        ("FloatingPointError: Minimum loss scale reached (0.0001).", Category.NUMERICAL),
        (
            "GPU memory usage keeps going up and then the training just hangs for 2 hours.",
            Category.HANG,
        ),
        (
            "Our job shows an unexpectedly slow-down when using 4 nodes with FSDP.",
            Category.STRAGGLER,
        ),
        (
            "nvidia-smi shows pages with ECC errors pending retirement on GPU 2.",
            Category.GPU_DEGRADED,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "[ 124.9] blk_update_request: I/O error, dev fd0, sector 0 op 0x0:(READ) flags 0x0\n"
        "[ 125.0] floppy: error 10 while reading block 0",
        "print_req_error: I/O error, dev fd0, sector 0",
        "node1:11:11 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "node1:11:11 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>",
        "The training kept going and the loss keeps going down.",
    ]
)
