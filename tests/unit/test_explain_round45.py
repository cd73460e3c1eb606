"""Classes of the forty-fifth round's development misses (fresh_55, 56, 57), each read as a
class: a rate named by its unit that drops from about one figure to another, times said to be
increasing, the kubelet's volume mount that timed out, AER's first-reporting agent, librdmacm's
failed bind, the container toolkit's driver not loaded, and a narrow PCIe link that is the
host's unless the input names a GPU."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first, round_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_55", "0001", Category.STRAGGLER, "slowdown.rate_fell"),
        ("fresh_55", "0012", Category.STRAGGLER, "straggler.slowness_in_words"),
        ("fresh_56", "0003", Category.HOST_STORAGE, "k8s.volume_mount_timeout"),
        ("fresh_56", "0012", Category.NETWORK, "rdma.no_device"),
        ("fresh_56", "0022", Category.HOST_HARDWARE, "host.pcie_error"),
        ("fresh_56", "0026", Category.HOST_HARDWARE, "monitor.pcie_downgraded"),
        ("fresh_57", "0013", Category.APPLICATION, "nvml.library_missing"),
    ]
)


@pytest.mark.parametrize(
    ("text", "category", "rule"),
    [
        (
            "Warning  FailedMount  2m  kubelet  Unable to attach or mount volumes: "
            "unmounted volumes=[data], unattached volumes=[data kube-api-access-x]: timed out "
            "waiting for the condition",
            Category.HOST_STORAGE,
            "k8s.volume_mount_timeout",
        ),
        (
            "My it/s drops from around 7.5 to 2 after a few hours.",
            Category.STRAGGLER,
            "slowdown.rate_fell",
        ),
        ("We see growing step times over the run.", Category.STRAGGLER, None),
        (
            "Over the past days I have noticed a significant decrease in the hash rate.",
            Category.STRAGGLER,
            "straggler.slowness_in_words",
        ),
        ("每个epoch的训练时间会激增", Category.STRAGGLER, "straggler.slowness_in_chinese"),
        (
            "lspci on gpu-t-08 says GPU 5 is at x4 instead of x16:\n"
            "  LnkSta: Speed 16GT/s, Width x4 (downgraded)",
            Category.GPU_DEGRADED,
            "monitor.pcie_downgraded",
        ),
    ],
)
def test_the_classes_in_other_words(text: str, category: Category, rule: str | None) -> None:
    found = first(text)
    assert found is not None and found[0] is category, text
    assert rule is None or found[1] == rule


@pytest.mark.parametrize(
    "text",
    [
        # a dip that ended: it recovered to its rate
        "it/s dropped from 3.1 to 1.2 while the backup ran and recovered to 3.1 it/s at 03:25.",
        # a drop the speaker caused
        "FPS dropped from 144 to 90 when I turned on ray tracing in the benchmark.",
        # the times of another quantity, and a dataset's load time said expected
        "The loss shows increasing times between improvements.",
        "Increasing load times of the dataset are expected as it grows.",
        # no fall, a question about a setting; a surge of visits, not of a time
        "There is no drop in throughput.",
        "Is there a decrease in speed if I use fp32?",
        "访问量激增，服务器时间很紧",
        # the kubelet mounted the volume
        'Normal  SuccessfulMountVolume  kubelet  MountVolume.SetUp succeeded for volume "nfs"',
        # AER enabled at boot, a link at full width
        "pcieport 0000:00:01.1: AER: enabled with IRQ 25",
        "\tLnkSta:\tSpeed 16GT/s, Width x16",
    ],
)
def test_look_alikes_stay_silent(text: str) -> None:
    assert alarms(text) == [], text
