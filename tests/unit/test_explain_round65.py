"""Classes of the sixty-fifth round (fresh_106 to fresh_108), each read as a class: fp16 loss
scaling collapsed to zero or at fairseq's minimum, a speed said to have regressed, CUDA's runtime
error out of memory in any spelling, the host's RAM said to OOM, POWER firmware's PCIe links that
would not train, Fabric Manager rejecting its configuration, a device plugin that finds no GPU;
and two false alarms fixed as classes: a total estimated from a step's time is no step time, and
a text that calls corrected errors harmless ends their warnings."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_106", "0004", Category.NUMERICAL, "training.loss_scale_stuck"),
        ("fresh_106", "0015", Category.NUMERICAL, "training.loss_scale_min"),
        ("fresh_107", "0003", Category.STRAGGLER, "told.speed_regressed"),
        ("fresh_107", "0006", Category.GPU_OOM, "cuda.oom"),
        ("fresh_107", "0019", Category.HOST_MEMORY, "said.killed_by_system"),
        ("fresh_108", "0004", Category.HOST_HARDWARE, "host.phb_link_unstable"),
        ("fresh_108", "0005", Category.BENIGN, "said.harmless"),
        ("fresh_108", "0012", Category.APPLICATION, "fabric.fm_config_invalid"),
        ("fresh_108", "0018", Category.APPLICATION, "k8s.plugin_no_devices"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        (
            "[deepspeed] OVERFLOW! Rank 3 Skipping step. Attempted loss scale: 0, reducing to 0",
            Category.NUMERICAL,
        ),
        ("Training speed regressed by 20% after the driver update.", Category.STRAGGLER),
        ("RuntimeError: CUDA runtime error: out of memory at alloc.cu:88", Category.GPU_OOM),
        ("The preprocessing step causes host memory OOM on every node.", Category.HOST_MEMORY),
        # the plugin's notice where the text says the node has GPUs (alone it stays silent:
        # test_explain_container_formats)
        (
            "I0925 19:53:51.423171 1 main.go:381] No devices found. Waiting indefinitely.\n"
            "nvidia-smi on the host shows all 8 GPUs.",
            Category.APPLICATION,
        ),
        # a question is no statement that the errors are harmless
        (
            "pcieport 0000:00:1c.0: AER: Corrected error received: 0000:01:00.0\n"
            "Is your hardware healthy?",
            Category.HOST_HARDWARE,
        ),
        # a real fault beside a statement that corrected errors are harmless stays
        (
            "These corrected AER messages are harmless.\n"
            "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0",
            Category.HOST_HARDWARE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "This PR shows no throughput regression in the data loader benchmark.",
        "Iteration time ~0.9 s\n8B tokens -> 8k iterations -> 8k * 0.9 sec = 1.8 hours",
        "pcieport 0000:00:1c.0: AER: Corrected error received: 0000:01:00.0\n"
        "These messages are harmless and can be safely ignored.",
    ]
)
