"""NVIDIA's container stack, read from its sources' catalogue (issue 21, "whole families, not
lines"): libnvidia-container's `nvidia-container-cli`, the toolkit's runtime and CDI
modifiers, moby's device requests, the GPU operator's validator and driver container, the
device plugin's start-up, dcgm-exporter (diagnosis/explain/rules_container.py).

The caller's mistakes are the job's; the same producers' start-up notices and retries stay
silent. The node's own driver stack is not read (rules_container's docstring says why).
"""

from __future__ import annotations

import pytest

from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category

FAULTS = [
    (
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
        "update your driver to a newer version, or use an earlier cuda container",
        "container.cuda_requirement",
    ),
    (
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda >= 9.0",
        "container.cuda_requirement",
    ),
    ("unsatisfied condition: cuda>=12.8 (cuda=12.4)", "container.cuda_requirement"),
    ("nvidia-container-cli: requirement error: invalid expression", "container.cuda_requirement"),
    ("nvidia-container-cli: device error: 3: unknown device", "container.unknown_device"),
    (
        "docker: Error response from daemon: failed to create shim task: OCI runtime create "
        "failed: runc create failed: unable to start container process: error during container "
        "init: error running hook #0: error running hook: exit status 1, stdout: , stderr: "
        "nvidia-container-cli: device error: GPU-5d2f1e4a-0c1b: unknown device: unknown.",
        "container.unknown_device",
    ),
    ("Ignoring devices specified in NVIDIA_VISIBLE_DEVICES: [all]", "container.devices_ignored"),
    (
        'failed to get required devices from OCI specification: invalid device name "gpu0" in '
        'annotation "cdi.k8s.io/nvidia"',
        "container.bad_request",
    ),
    (
        "docker: Error response from daemon: cannot set both Count and DeviceIDs on device "
        "request.",
        "container.bad_request",
    ),
    (
        "nvidia-container-cli: mount error: file creation failed: "
        "/var/lib/docker/overlay2/abc/merged/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: file "
        "exists",
        "container.bad_request",
    ),
]


@pytest.mark.parametrize(("line", "rule"), FAULTS)
def test_each_caller_mistake_is_the_job_s(line: str, rule: str) -> None:
    found = first(line)
    assert found is not None and (found[0], found[1]) == (C.APPLICATION, rule), line


BENIGN = [
    "Auto-detected mode as 'legacy'",
    "I1128 17:35:08.652188 1737 nvc.c:395] dxcore initialization failed, continuing assuming a "
    "non-WSL environment",
    "W1128 17:35:08.654012 1738 nvc.c:273] failed to set inheritable capabilities",
    "W1128 17:35:08.654149 1738 nvc.c:274] skipping kernel modules load due to failure",
    "running command chroot with args [/run/nvidia/driver nvidia-smi]\ncommand failed, retrying "
    "after 5 seconds",
    "stat: cannot stat '/run/nvidia/validations/.driver-ctr-ready': No such file or directory",
    'time="2024-05-02T10:00:00Z" level=fatal msg="Exiting due to signal [terminated] '
    'notification for pid [7]"',
    "I0925 19:53:51.423171       1 main.go:381] No devices found. Waiting indefinitely.",
    "I1106 09:17:18.873650       1 factory.go:104] Detected non-NVML platform: could not load "
    "NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
    'time=2024-05-02T10:00:00Z level=INFO msg="Not collecting DCP metrics: This request is '
    'serviced by a module of DCGM that is not currently loaded"',
    "Done, now waiting for signal",
    "cuda workload validation is successful",
    "pod nvidia-cuda-validator-abcde is curently in Pending phase",
    "GPU resources are not yet discovered by the node, retry: 3",
    "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.",
    "ERRO[0000] error waiting for container: context canceled",
    "GPUDirect RDMA is disabled, skipping MOFED driver validation...",
    "Failed to start one or more plugins. Retrying in 30s...",
]


@pytest.mark.parametrize("line", BENIGN)
def test_start_up_notices_and_retries_stay_silent(line: str) -> None:
    assert alarms(line) == [], line


def test_the_node_s_driver_stack_is_not_read_as_a_failed_gpu() -> None:
    for line in (
        "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
        "Failed to initialize NVML: Driver/library version mismatch",
        "nvidia-container-cli: initialization error: nvml error: driver not loaded",
    ):
        found = first(line)
        assert found is None or found[0] != C.GPU_HARDWARE, line
