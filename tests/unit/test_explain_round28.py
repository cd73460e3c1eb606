"""Classes added after the twenty-seventh and twenty-eighth corpus rounds (issue 21), written
from their development records: the Kubernetes evictions, the CephFS reconnect denied, errno 107
of a FUSE mount and the libceph session re-established (fresh_37, read by the catalogue rules),
nvidia-container-cli's NVML errors, a person saying a node lost a GPU, and ibqueryerrors'
counters printed with their human-readable value (fresh_38).

The positive texts are records of the development part of the corpus, read by id (the comment
names the source). The negative controls are the records edited as the comment says, or lines
written here.
"""

from __future__ import annotations

from functools import partial

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, first

_r37 = partial(corpus_text, "fresh_37")
_r38 = partial(corpus_text, "fresh_38")

CEPH_DENIED = _r37("0000")  # teuthology: ceph: mds0 reconnect denied
FUSE_107 = _r37("0002")  # airflow: OSError: [Errno 107] ... on a gcsfuse path
K8S_EVICTED = _r37("0005")  # KubeFATE: Evicted, The node was low on resource: memory
CONTAINER_NVML = _r38("0002")  # volcano-vgpu: nvidia-container-cli: detection error: nvml error
IB_ERRORS = _r38("0004")  # infiniband-exporter: ibqueryerrors on an HDR switch
LOST_A_GPU = _r38("0010")  # cbio-cluster: gpu-2-5 has lost a GPU


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (CEPH_DENIED, Category.HOST_STORAGE),
        (FUSE_107, Category.HOST_STORAGE),
        (K8S_EVICTED, Category.HOST_MEMORY),
        (CONTAINER_NVML, Category.GPU_HARDWARE),
        (IB_ERRORS, Category.NETWORK),
        (LOST_A_GPU, Category.GPU_HARDWARE),
        ("The node has lost two of its GPUs after the last reboot.", Category.GPU_HARDWARE),
    ],
)
def test_each_class_finds_its_record(text: str, category: Category) -> None:
    found = first(text)
    assert found is not None and found[0] == category, found


@pytest.mark.parametrize(
    "text",
    [
        _r37("0001"),  # libceph: session lost, hunting, then established
        _r37("0012"),  # NodeNotReady, then the kubelet restarts with healthy conditions
        _r37("0013"),  # dcgmi diag -j with every test skipped
        _r38("0013"),  # iblinkinfo, every link active
        IB_ERRORS.replace("19817 (19.353K)", "0 (0.000)")
        .replace("37 (37.000)", "0 (0.000)")
        .replace("8 (8.000)", "0 (0.000)")
        .replace("PortLocalPhysicalErrors == 8", "PortLocalPhysicalErrors == 0"),
        "We have not lost a GPU since the firmware update.",
    ],
)
def test_the_same_texts_saying_otherwise_stay_silent(text: str) -> None:
    assert alarms(text) == [], text


def test_a_driver_not_loaded_is_not_read_as_a_failed_gpu() -> None:
    found = first(CONTAINER_NVML.replace("unknown error: unknown", "driver not loaded: unknown"))
    assert found is None or found[0] != Category.GPU_HARDWARE
