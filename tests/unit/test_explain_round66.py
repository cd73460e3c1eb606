"""Classes of the sixty-sixth round (fresh_109 to fresh_111), each read as a class: a
collective's bandwidth said below its link's, GPUs said idle between steps, a GPU said to
throttle (unless the text times the job's slowdown it caused), Paddle's TCP store whose peer
dropped, cuBLAS's kernel that failed to execute; and two false alarms fixed as classes: a reply
that setups' step times are not to be compared, and a text that says hung tasks are not fatal."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_109", "0000", Category.STRAGGLER, "told.below_link_bandwidth"),
        ("fresh_109", "0002", Category.STRAGGLER, "told.below_link_bandwidth"),
        ("fresh_109", "0018", Category.GPU_DEGRADED, "said.gpu_throttling"),
        ("fresh_109", "0022", Category.BENIGN, "training.step_time"),
        ("fresh_110", "0009", Category.NETWORK, "dist.store_peer_dropped"),
        ("fresh_110", "0018", Category.GPU_APPLICATION, "cuda.launch_failure"),
        ("fresh_111", "0018", Category.STRAGGLER, "told.gpus_idle_between_steps"),
        ("fresh_111", "0022", Category.BENIGN, "said.harmless"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "all_reduce busbw only reaches 45 GB/s, far below the line rate of 400G.",
            Category.STRAGGLER,
        ),
        ("Between the steps the GPUs sit idle between batches for seconds.", Category.STRAGGLER),
        ("GPU 3 keeps throttling during the run.", Category.GPU_DEGRADED),
        # the job's slowdown timed: a straggler, whatever caused it
        (
            "The GPUs start throttling, and the time per iteration goes from ~7 s to ~15 s.",
            Category.STRAGGLER,
        ),
        ("TCP recv error. Details: Connection reset by peer.", Category.NETWORK),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "The busbw is above the link speed because of the tree algorithm.",
        "busbw is 190, theoretical busbw should be 200.",
        "If the GPU is idle between steps, increase num_workers.",
        "Is the GPU throttling?",
    ]
)
