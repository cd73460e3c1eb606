"""Classes of the seventy-sixth round (fresh_139 to fresh_141), scored blind at b5468c2: the
kubelet that cannot reach its API server, systemd-networkd's `lost carrier`, TensorRT's and
TensorRT-LLM's out-of-memory words (a builder's `Error Code 2: OutOfMemory`, a CUDA check cut by
a terminal), a grad norm said `always NaN`, a library that refuses another version (a TensorRT
engine's version tag, UCX's API version); and the false alarms' classes: a bottleneck a reply
gives as what the work needs, a latency that rises with the throughput, a slowness said with a
setting's value (`with G=8`) or after the change that causes it (`as batch_size increases`).
The round took three development families under 0.85, mended by classes of their development
records: a BMC's threshold sensor event without an assertion column (rules_bmc, split out of
rules_host), a run that `hangs after certain number of batches`, `卡住不动`; and seven hung
tasks relabelled `host.hardware` as the corpus files every hung task."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_140", "0001", Category.NETWORK, "k8s.apiserver_unreachable"),
        ("fresh_140", "0007", Category.NETWORK, "nic.carrier_lost"),
        ("fresh_139", "0022", Category.HOST_HARDWARE, "host.bmc_threshold"),
        ("fresh_141", "0000", Category.GPU_OOM, "cuda.oom"),
        ("fresh_141", "0001", Category.GPU_OOM, "cuda.oom"),
        ("fresh_141", "0003", Category.BENIGN, "slowdown.said_normal"),
        ("fresh_141", "0006", Category.NUMERICAL, "said.nonfinite"),
        ("fresh_141", "0008", Category.HANG, "stalled.at_a_place"),
        ("fresh_62", "0019", Category.HANG, "stalled.said_elsewhere"),
        ("fresh_141", "0013", Category.APPLICATION, "software.version_mismatch"),
        ("fresh_141", "0019", Category.BENIGN, "slowdown.said_normal"),
        ("fresh_141", "0023", Category.APPLICATION, "software.version_mismatch"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            'E0101 10:00:00.1 1 kubelet_node_status.go:540] "Error updating node status, will '
            'retry" err="error getting node: Get https://api:6443/x: dial tcp 10.0.0.1:6443: i/o '
            'timeout"',
            Category.NETWORK,
        ),
        ("Jan 1 10:00:00 gpu7 systemd-networkd[812]: eth2: Lost carrier", Category.NETWORK),
        (
            "[TRT] [E] 2: [globWriter.cpp::makeResizableGpuMemory::423] Error Code 2: OutOfMemory",
            Category.GPU_OOM,
        ),
        ("The gradients are always NaN after step 10.", Category.NUMERICAL),
        ("UCP API version is incompatible: required >= 1.18, actual 1.15.0", Category.APPLICATION),
        ("Voltage #0x31 | Lower Critical going low", Category.HOST_HARDWARE),
        ("The job froze after about 3k steps with no error.", Category.HANG),
        # the run's own time before a slowness is no change of the work
        (
            "I have observed that as epochs increase, the iterations/s on the tqdm bar decrease "
            "significantly by a factor of about 2-5.",
            Category.STRAGGLER,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "Latency increases but throughput also increases.",
        "Yes, decoding is the main bottleneck here, as for each request you need to generate "
        "many tokens.",
        "As the batch size increases, inference time also increases, and throughput goes up.",
        "Training is slower with num_generations=8, which is expected.",
        "Temperature #0x10 | Upper Non-critical going high | Deasserted",
    ]
)
