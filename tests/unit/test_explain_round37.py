"""Classes of the thirty-seventh round's development misses (fresh_47*), each read as a class:
a ConnectX firmware command that failed, a port whose training state machine failed, IMEX not
ready, an NVML call that failed with NVML_ERROR_UNKNOWN, ERR! in nvidia-smi's table, mount.nfs
that cannot get a resource, an ENOMEM of the RDMA stack, and a progress line whose time or time
left changes from line to line."""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first


@pytest.mark.parametrize(
    ("batch", "number", "category", "rule"),
    [
        ("fresh_47b", "0005", Category.NETWORK, "nic.mlx5_cmd_failed"),
        ("fresh_47b", "0010", Category.NETWORK, "nic.port_training_failed"),
        ("fresh_47b", "0002", Category.NETWORK, "fabric.imex_unhealthy"),
        ("fresh_47b", "0004", Category.NETWORK, "rdma.verbs_failed"),
        ("fresh_47c", "0008", Category.GPU_HARDWARE, "nvml.unknown_error"),
        ("fresh_47c", "0009", Category.GPU_HARDWARE, "nvml.smi_err_field"),
        ("fresh_47c", "0014", Category.HOST_STORAGE, "storage.nfs"),
        ("fresh_47", "0000", Category.STRAGGLER, "training.step_slowdown"),
    ],
)
def test_each_class_of_the_round_is_read(
    batch: str, number: str, category: Category, rule: str
) -> None:
    assert first(corpus_text(batch, number))[:2] == (category, rule)


@pytest.mark.parametrize(
    "text",
    [
        # a healthy nvidia-smi row, and one whose sensors a GPU lacks
        "| 30%   45C    P8    20W / 250W |      0MiB / 11019MiB |      0%      Default |",
        "| N/A   45C    P0    N/A /  N/A |      0MiB / 11019MiB |      0%      Default |",
        # a power reading alone that fails: a known transient of some virtual machines
        "| N/A   29C    P0   ERR! / 250W |    593MiB / 16160MiB |      0%      Default |",
        # a host's own ENOMEM stays the host's
        "OSError: [Errno 12] Cannot allocate memory",
    ],
)
def test_healthy_rows_and_a_host_s_own_enomem_are_not_read_as_these_classes(text: str) -> None:
    found = alarms(text)
    assert "nvml.smi_err_field" not in found
    if "Errno 12" in text:
        assert first(text)[:2] == (Category.HOST_MEMORY, "host.memory_error")
    else:
        assert found == []


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (corpus_text("fresh_47", "0005"), "straggler.slowness_in_words"),
        ("training speed down after 2 hours on the new nodes", "straggler.slowness_in_words"),
        (corpus_text("fresh_47", "0006"), "straggler.others_idle"),
        ("one slow GPU keeps running while the others sit idle", "straggler.others_idle"),
    ],
)
def test_a_speed_down_and_members_idle_behind_one_are_read(text: str, rule: str) -> None:
    assert first(text)[:2] == (Category.STRAGGLER, rule)


@pytest.mark.parametrize(
    "text",
    [
        "we need to speed down the fans",
        "the GPUs sit idle waiting for data",
        "all workers are idle",
    ],
)
def test_other_speeds_down_and_idle_members_without_one_behind_are_silent(text: str) -> None:
    assert alarms(text) == []
