"""Classes of the seventy-fourth round (fresh_133 to fresh_135), scored blind at 2af163b: a reply
that answers `Is this normal?` about a NaN grad norm with `It's normal.` (a skipped step), a
reply that gives a capability the hardware lacks as a slowness's cause (`That's because GeForce
cards don't support GPU Direct P2P`: the evaluation false alarm, read to fix it, not blind), an
expected figure named by its quantity and written with thousands (`the expected throughput is
27,688.36 tokens/sec, but I only achieved 7099.5345`), a rate said low (`the bus bandwidth was
very low`) and NCCL that `reaches only a fraction of the fabric`; for the Slurm family's
development floor, slurmd's `Node configuration differs from hardware` where the input shows
the node down or drained (rules_scheduler.NEEDS_NODE_REFUSED), and slurmd's unit that did not
start; for Kubernetes nodes', a kubelet that counts none of the node's GPUs at admission (the
device plugin out of step, the node's setup; some still counted is a GPU lost), and an older
kubelet's `Back-off 20s restarting failed container=...`."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_114", "0008", Category.APPLICATION, "slurm.slurmd_not_started"),
        ("fresh_114", "0017", Category.APPLICATION, "k8s.gpu_admission"),
        ("fresh_125", "0011", Category.APPLICATION, "k8s.gpu_admission"),
        ("fresh_133", "0015", Category.APPLICATION, "k8s.crash_loop"),
        ("fresh_133", "0000", Category.APPLICATION, "slurm.definition_differs"),
        ("fresh_134", "0013", Category.BENIGN, "training.answered_normal"),
        ("fresh_135", "0003", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_135", "0014", Category.BENIGN, "slowdown.said_normal"),
        ("fresh_135", "0019", Category.STRAGGLER, "slowdown.against_its_past"),
        ("fresh_135", "0024", Category.STRAGGLER, "straggler.slowness_in_words"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "We expected about 1,200 samples/sec, but we only get 400 samples/sec on 4 nodes.",
            Category.STRAGGLER,
        ),
        (
            "I noticed that the allreduce bandwidth is very low between the two nodes.",
            Category.STRAGGLER,
        ),
        (
            "Our all_reduce_perf run gets only a fraction of the fabric's bandwidth.",
            Category.STRAGGLER,
        ),
        (
            "[2024-05-01T10:00:00] error: Node configuration differs from hardware: CPUs=8:16(hw)"
            "\nNodeName=gpu3 State=IDLE+DRAIN",
            Category.APPLICATION,
        ),
        (
            "Mar 3 10:00:00 n1 systemd[1]: Failed to start Slurm node daemon.",
            Category.APPLICATION,
        ),
        (
            "  Warning  UnexpectedAdmissionError  10s  kubelet  Allocate failed due to requested "
            "number of devices unavailable for nvidia.com/gpu. Requested: 2, Available: 0, which "
            "is unexpected",
            Category.APPLICATION,
        ),
        (
            "  Warning  UnexpectedAdmissionError  10s  kubelet  Allocate failed due to requested "
            "number of devices unavailable for nvidia.com/gpu. Requested: 8, Available: 7, which "
            "is unexpected",
            Category.GPU_HARDWARE,
        ),
        # a grad norm's NaN with no reply calling it normal stays numerical
        ("I frequently observe grad_norm: nan during training.", Category.NUMERICAL),
        # a reply calling it normal does not answer a NaN loss away
        ("loss: nan at step 200. Is this normal?\n\nIt's normal.", Category.NUMERICAL),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "During training I often see grad_norm: nan. Is this normal?\n\nIt's normal. If the loss "
        "becomes nan, it's abnormal.",
        "Why is the bandwidth between GPU2 and GPU3 much slower than the other pair?\n\nThat's "
        "because consumer cards don't support P2P, so the traffic goes through the CPU.",
        "The expected throughput is 2,000 tokens/sec and I get 1,980 tokens/sec.",
        # the check's notice alone: the job ran on
        "[2023-11-09T22:49:00.525] error: Node configuration differs from hardware: CPUs=2:4(hw) "
        "Boards=1:1(hw)\nThe job still completes fine on the CI runner.",
    ]
)
