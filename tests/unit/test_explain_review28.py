"""A review that tried to break this session's readers (tests/fixtures/explain_review/
review28.json): a helper read the change (listings of members' figures, tables over time,
dated step lines, a before and an after, a climb, the new sentence rules, Open MPI's prefix,
the collective mismatch, the crash handler, the RDMA stack's EIO) and wrote 50 texts that broke
them and 10 that held. 0/50 broke nothing before the fixes; 33/50 are read right now: a size of
work beside a step time (a sequence length, a batch size, an evaluation set: progress.workload),
a download's or a dataset pass's progress, a climb whose every reading is 5 % slower than the
last, captions and metric names of no member's work (a round trip, a compile, an evaluation, a
wait, a counter, a clock's offset, a size), sweeps over members, German thousands, hosts named
by their addresses, Kubeflow's `worker-N` pods, Horovod's unit before its figure and its
mismatch, one-offs and fine gaps in the member sentences, retracted or caused bottlenecks,
factors expected or paid for with memory, NCCL's /dev/shm that cannot grow, aws-ofi-nccl's
EIO. What is still missed or still alarms is listed by its reason.
"""

from __future__ import annotations

from tests.explain_helpers import review, review_tests

_REVIEW = review("review28")
_LIMITS_BY_REASON = {
    "a caption that explains the slow member (half the GPUs, older GPUs): the readers do not "
    "read captions' reasons": ("r28-003", "r28-012"),
    "waits per rank, where the rank that waits least is the slow one": ("r28-007",),
    "a CSV of epoch times (commas part the cells)": ("r28-018",),
    "evaluation added to an epoch from a row on (a column that starts being filled)": ("r28-019",),
    "evaluation after every second dated line: intervals that alternate": ("r28-022",),
    "two readings 1.86 times apart (a before and an after needs twice)": ("r28-027",),
    "older general rules read the sentence the new ones now leave (figures.speed_changed, "
    "straggler.slowness_in_words)": ("r28-030", "r28-033", "r28-035", "r28-039", "r28-041"),
    "errors a second compared between two nodes: no rule reads a link's error rate in words": (
        "r28-031",
    ),
    "a bottleneck with its own cause in words (an NFS server's iowait, HW Slowdown): left "
    "silent, no rule reads the cause from the sentence": ("r28-037", "r28-038"),
    "two ranks' watchdog timeouts at one sequence number with other operations": ("r28-047",),
}
KNOWN_LIMITS = {i for ids in _LIMITS_BY_REASON.values() for i in ids}

test_each_text_is_read_as_labelled, test_the_known_limits_are_still_what_they_were = review_tests(
    _REVIEW, KNOWN_LIMITS
)
