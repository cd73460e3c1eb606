"""Classes of the fifty-eighth round (fresh_87, fresh_88, fresh_89), each read as a class: an
InfiniBand card said failed or broken, a power supply said to fail, GPUs said lost by count;
and, silent, a slowdown a reply calls the expected behaviour or what a setup always brings, and
a cleanup that fails on NFS's silly-renamed `.nfsXXXX` file."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_88", "0003", Category.NETWORK, "said.rdma_port"),
        ("fresh_88", "0017", Category.HOST_HARDWARE, "said.psu_fault"),
        ("fresh_89", "0014", Category.GPU_HARDWARE, "said.gpu_lost"),
    ]
)


def test_the_round_s_false_alarms_stay_silent() -> None:
    for batch, number in (("fresh_87", "0018"), ("fresh_87", "0022"), ("fresh_88", "0019")):
        assert alarms(corpus_text(batch, number)) == [], (batch, number)


test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("The IB card of gpu-114 is broken, drained it.", Category.NETWORK),
        ("Found a broken InfiniBand HCA card on node 7, draining it.", Category.NETWORK),
        ("node-12: power supply failure on PSU2, running on one supply.", Category.HOST_HARDWARE),
        ("BMC says: PS1 Over-current fault", Category.HOST_HARDWARE),
        ("After the reboot we lost one GPU again on dgx-3.", Category.GPU_HARDWARE),
        ("2 GPUs were lost overnight on hoth.", Category.GPU_HARDWARE),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Each step takes longer as the batches grow. The behaviour you are seeing is expected.",
        "Two jobs on one card run slower than one alone. Sharing a GPU will always lead to "
        "slowdowns when both use it fully.",
        "OSError: [Errno 16] Device or resource busy: '/scratch/tmp/.nfs000000000123abcd00000002'",
        # a question or a plan names no failure now
        "Will the job survive a PSU failure on one node?",
        "Is the IB card broken, or is it the cable?",
    ]
)
