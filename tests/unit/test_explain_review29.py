"""The weak families as their producers print them, written blind (tests/fixtures/explain_review/
review29.json, 2026-12-06): 110 texts of NVLink, RDMA, crashes in NCCL, torch.distributed,
machine checks, NFS and NVML, 29 of them healthy look-alikes, by a writer who read the producers'
sources and none of the rules. Read 90/110 before any rule was written for it (2 false alarms:
a planned cable swap, a healthy nccl-tests run beside last week's segfault tickets); 99/110
now: ibdiagnet's unexpected link width, a PFC pause storm, a module event ended by the port's
link up, DeepSpeed's launcher exit code, autofs's and mountd's NFS mount failures, DCGM's
`Only N NvLinks are up` inside its JSON, Horovod's stall inspector, and a segfault named as
tickets, not as a crash. What is still missed is listed by its reason.
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review29")
_LIMITS_BY_REASON = {
    "NVLink error counters by the thousand: read as a degraded link (gpu.degraded, as rising "
    "counters are); the review files gpu.hardware": ("r29-001", "r29-008"),
    "NVLink link counts that only a comparison tells (NV17 against NV18 in the topology)": (
        "r29-013",
    ),
    "an InfiniBand port at a rate below its adapter's (NDR at 200, HDR at 25 Gbps a lane): "
    "the readers know no adapter's rated speed": ("r29-021", "r29-022"),
    "a port that flaps (down and up again and again): each line alone is routine": ("r29-034",),
    "a store client refused for half an hour: refused connections are read as a start-up race": (
        "r29-057",
    ),
    "a store or a rendezvous that timed out waiting for ranks: read as the network (the "
    "corpus files it so), a hang by this set's label; a barrier's world-size timeout read as "
    "the program's": ("r29-058", "r29-061", "r29-065"),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
