"""Classes of the eighty-eighth round (fresh_175 to fresh_177), scored blind at 9720496: NVML's
unknown error (999) as miners and monitors print it, the NVIDIA modules built for another
kernel (`nvidia_drm: Unknown symbol ...`), a GPU said to drop out, TensorFlow's out-of-memory
errors that name no device and XLA's replica that ran out, a host process killed once it held
most of the memory, ibstat's port state said `DOWN` in prose, a network or cache filesystem's
client whose reads time out or whose CSI mount fails; and a glossary that tells what usually
comes before an Xid (the evaluation false alarm, fixed as a class after reading it, so that
record is not blind)."""

from __future__ import annotations

from diagnosis.model import Category
from tests.explain_helpers import alarms, corpus_text, read_as_tests, round_tests, silence_tests

test_each_class_of_the_round_is_read = round_tests(
    [
        ("fresh_175", "0004", Category.GPU_HARDWARE, "nvml.unknown_error"),
        ("fresh_175", "0005", Category.GPU_HARDWARE, "nvml.unknown_error"),
        ("fresh_175", "0022", Category.GPU_HARDWARE, "nvml.unknown_error"),
        ("fresh_175", "0015", Category.APPLICATION, "driver.module_symbols_mismatch"),
        ("fresh_175", "0027", Category.GPU_HARDWARE, "said.gpu_lost"),
        ("fresh_176", "0014", Category.GPU_OOM, "cuda.oom"),
        ("fresh_176", "0016", Category.GPU_OOM, "cuda.oom"),
        ("fresh_176", "0018", Category.HOST_MEMORY, "said.killed_by_system"),
        ("fresh_177", "0004", Category.HOST_STORAGE, "netfs.client_failed"),
        ("fresh_177", "0005", Category.HOST_STORAGE, "netfs.client_failed"),
        ("fresh_177", "0014", Category.NETWORK, "said.rdma_port"),
    ]
)

test_the_classes_hold_in_other_words = read_as_tests(
    [
        ("WARN: NVML: can't get temperature for GPU #2, error code 999", Category.GPU_HARDWARE),
        ("GPU3: unable to get power usage - Unknown Error (999)", Category.GPU_HARDWARE),
        ("We usually see Xid 79 in dmesg on node 7 every night.", Category.GPU_HARDWARE),
        (
            "[  12.3] nvidia: disagrees about version of symbol module_layout",
            Category.APPLICATION,
        ),
        ("After an hour one of our GPUs keeps dropping out of the rig.", Category.GPU_HARDWARE),
        (
            "Resource exhausted: OOM when allocating tensor with shape[64,1024,1024]",
            Category.GPU_OOM,
        ),
        (
            "The trainer was killed after it used 120 GB of host memory.",
            Category.HOST_MEMORY,
        ),
        (
            "On gpu-b07 the HCA has port state DOWN while the other nodes are Active.",
            Category.NETWORK,
        ),
        (
            'MountVolume.SetUp failed for volume "pvc-1" : rpc error: code = Internal desc = '
            "Could not mount lustre: timed out",
            Category.HOST_STORAGE,
        ),
    ]
)

test_look_alikes_stay_silent = silence_tests(
    [
        "W tensorflow/core/common_runtime/bfc_allocator.cc:217] Allocator (GPU_0_bfc) ran out "
        "of memory trying to allocate 2.26GiB. The caller indicates that this is not a failure, "
        "but may mean that there could be performance gains if more memory were available.",
        "A rising replay count usually precedes a link failure reported as Xid 74.",
        "nvidia-peermem: module verification failed: signature and/or required key missing",
    ]
)


def test_a_resource_exhausted_tensor_on_the_cpu_is_no_gpu_oom() -> None:
    found = alarms(
        "Resource exhausted: OOM when allocating tensor with shape[256,832] on "
        "/job:localhost/replica:0/task:0/device:CPU:0"
    )
    assert all(f.category != Category.GPU_OOM for f in found)


def test_a_glossary_of_nvlink_errors_raises_no_alarm() -> None:
    # (the evaluation false alarm, fixed as a class after reading it: no longer blind)
    assert alarms(corpus_text("fresh_175", "0009")) == []
