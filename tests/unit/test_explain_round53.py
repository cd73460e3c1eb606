"""Classes of the fifty-third round's development misses (fresh_74, fresh_75, fresh_76), each
read as a class: a GPU report's narrow link (`x4 lanes negotiated (GPU max x16)`), a narrow link
said in words (`degraded link (x8 instead of x16)`, the host's under a NIC's lspci header), old
kernels' AER spelling (`serverity=`), verbs and librdmacm finding no device, Open MPI's
completion banner wrapped after its status, and a fail-slow detector's own verdict."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_74", "0000", Category.GPU_DEGRADED, "monitor.pcie_downgraded"),
        ("fresh_74", "0001", Category.GPU_DEGRADED, "monitor.pcie_downgraded"),
        ("fresh_74", "0009", Category.HOST_HARDWARE, "host.pcie_error"),
        ("fresh_74", "0014", Category.HOST_HARDWARE, "monitor.pcie_downgraded"),
        ("fresh_75", "0005", Category.NETWORK, "rdma.no_device"),
        ("fresh_75", "0007", Category.NETWORK, "rdma.no_device"),
        ("fresh_75", "0009", Category.NETWORK, "rdma.error_completion_dump"),
        ("fresh_76", "0001", Category.STRAGGLER, "straggler.fail_slow_said"),
    ]
)


test_look_alikes_stay_silent = silence_tests(
    [
        # a link at its full width said in words, a wider link than the slot's
        "the card runs x16 instead of x8 now that it sits in the top slot",
        "PCIe: x16 lanes negotiated (GPU max x16, Gen up to 4)",
        # a detector that found nothing, or is only named
        "We added a fail-slow detector to the job; it found no fail-slow node this week.",
        "Greyhound is a fail-slow detection system.",
        # an RDMA device found
        "rdma_client: start\nrdma_client: end 0",
    ]
)


test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("GPU 3 is running on a narrow link (x4 instead of x16)", Category.GPU_DEGRADED),
        ("rdma_resolve_addr: No such device", Category.NETWORK),
        ("fail-slow detected on rank 3 (1.4x its peers)", Category.STRAGGLER),
    ]
)
