"""Classes of the fifty-first round's development misses (fresh_68, fresh_69, fresh_70), each
read as a class: an NFS server not responding with a colon after its name, ENOLCK, an ext4
journal that cannot be loaded, a queue pair that would not reach RTR or RTS, an RDMA completion
error under NVMe over fabrics, NVML's GPU-lost status in other bindings, nvidia-smi's `no
devices were found` quoted in a sentence, one card idle (or far less busy) beside the other, a
speed over successive runs of the same work, a time per image that went from minutes to an
hour; and the reply that explains a slowdown by the first steps skipping work."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_69", "0004", Category.HOST_STORAGE, "storage.nfs"),
        ("fresh_69", "0005", Category.HOST_STORAGE, "host.io_error"),
        ("fresh_69", "0018", Category.HOST_STORAGE, "storage.fs_error"),
        ("fresh_69", "0020", Category.NETWORK, "rdma.qp_transition_failed"),
        ("fresh_69", "0021", Category.NETWORK, "rdma.error_completion_dump"),
        ("fresh_70", "0000", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_70", "0005", Category.STRAGGLER, "slowdown.step_time_rose"),
        ("fresh_70", "0007", Category.STRAGGLER, "figures.speed_changed"),
        ("fresh_70", "0008", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_70", "0009", Category.STRAGGLER, "straggler.one_member_idle"),
        ("fresh_70", "0019", Category.GPU_HARDWARE, "nvml.gpu_lost"),
        ("fresh_70", "0021", Category.GPU_HARDWARE, "nvml.no_gpu"),
    ]
)


def test_a_reply_that_the_first_steps_skip_work_explains_the_slowdown() -> None:
    assert alarms(corpus_text("fresh_70", "0017")) == []


test_look_alikes_stay_silent = silence_tests(
    [
        # a speed steady over successive runs, the second member beside the first
        "the 1st call runs at 315 fps, the 2nd at 310, the 3rd at 320",
        "epoch 1: 3.1 it/s, epoch 2: 3.2 it/s, epoch 3: 3.1 it/s",
        "The 1st GPU runs at 300 img/s and the 2nd at 310 img/s",
        # one GPU by the speaker's choice, or working after all
        "only one GPU works after the driver update",
        "1 gpu is at 100% the other at 95%",
        # a pause of a minute that ended, a rate given per minute
        "There was a pause of about a minute while the disk synced, after that the iteration "
        "rate was back to the normal 3.1 it/s.",
        # a journal replayed, an NFS server back
        "EXT4-fs (nvme1n1): recovery complete",
        "nfs server fs01: OK",
    ]
)


test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("epoch 1: 31 s, epoch 2: 27 s, epoch 3: 45 s", Category.STRAGGLER),
        ("It took 3 min per image. Now it takes more than 1 hour per image", Category.STRAGGLER),
        ("Error: [Errno 37] No locks available", Category.HOST_STORAGE),
        ("NVML get temp failed with code: GPUIsLost", Category.GPU_HARDWARE),
    ]
)
