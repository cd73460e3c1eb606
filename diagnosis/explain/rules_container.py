"""NVIDIA's container stack refusing a job for the job's own request: what the caller asked of
the GPUs is not what the node can give.

Read from the producers' sources, not from examples (catalogued in the session notes of
2026-12-05: NVIDIA/libnvidia-container's `nvidia-container-cli`, nvidia-container-toolkit's
runtime and CDI modifiers, moby's device requests, dcgm-exporter):

- an image that needs a newer CUDA than the node's driver (`requirement error: unsatisfied
  condition: cuda>=12.4, please update your driver ...`, the CDI modes' `unsatisfied
  condition: cuda>=12.8 (cuda=12.4)`), or a requirement it cannot parse;
- a GPU asked for that the node does not have (`device error: 3: unknown device`: a typo or an
  index past the node's GPUs; a UUID handed out by a scheduler for a GPU that vanished reads the
  same, hence the lower confidence);
- devices asked for by environment in an unprivileged container the runtime ignores (the job
  then starts without GPUs), a CDI annotation that names no device or mixes the automatic
  and explicit names, both a count and ids in one docker device request, driver files already
  in the image (`mount error: file creation failed: ...: file exists`).

The node's own driver stack (`driver/library version mismatch`, `driver not loaded`, a missing
`libnvidia-ml.so.1`, the driver RPC timing out) is not read here: it is the node's software,
neither a failed GPU nor the caller's mistake (rules_driver reads a GPU that NVML reports lost,
and NVML's version mismatch as the node's software, filed `application` as the corpus's
collectors file it).

A person's account of the same stack losing the GPUs is read too: nvidia-smi or NVML that
works when a container (a pod, a docker container) starts and fails inside it after hours or
days, or after `systemctl daemon-reload`, or fails in the container while it works on the host
(``container.gpus_lost_over_time``). That is the runtime's device cgroup rewritten under the
container (NVIDIA/nvidia-container-toolkit's known issue with systemd's cgroup driver), not a
GPU that failed: it ranks before the driver's rules and explains NVML's `Unknown Error` in the
same input (EXPLAINED_BY).

Guarantees: every pattern is anchored on the producer's wording; the runtime's start-up notices
(`Auto-detected mode as 'legacy'`, `dxcore initialization failed`), the validator's retries and
the device plugin's `No devices found. Waiting indefinitely.` stay silent.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.explained import sentence_at
from diagnosis.explain.happening import live
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

RULES: tuple[Rule, ...] = (
    rule(
        "container.cuda_requirement",
        r"(?:requirement error: )?unsatisfied condition:\s*(?:cuda|driver|brand|arch)\s*"
        r"(?:>=?|=|<=?)\s*\S+"
        r"|requirement error: invalid expression",
        ("unsatisfied condition", "requirement error"),
        "The image asks for a newer CUDA than the node's driver provides (or a requirement the "
        "runtime cannot parse): use an image for this driver, or a node with a newer one.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.7),
    ),
    rule(
        "software.version_mismatch",
        # a TensorRT engine built by another TensorRT (`Serialization assertion stdVersionRead ==
        # kSERIALIZATION_VERSION failed.Version tag does not match`), UCX's API check (`UCP API
        # version is incompatible: required >= 1.19, actual 1.16.0`)
        r"\bVersion tag does not match\b|\bkSERIALIZATION_VERSION failed\b"
        r"|\bUCP API version is incompatible\b"
        # libibverbs' provider older or newer than the kernel's verbs (`Driver bnxt_re does not
        # support the kernel ABI of 6 (supports 1 to 1)`): no device is usable in that userspace
        r"|\bDriver \S+ does not support the kernel ABI of \d+",
        ("version tag", "kserialization_version", "api version is incompatible", "kernel abi"),
        "A library refuses an artefact or a peer of another version (a TensorRT engine built by "
        "another TensorRT, a UCX older than the program needs, rdma-core's provider and the "
        "kernel's verbs ABI): rebuild or align the versions; the software, not the hardware; "
        "the missing RDMA device it leaves follows from it (EXPLAINED_BY).",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        "container.unknown_device",
        r"nvidia-container-cli: device error: \S+: unknown device",
        ("unknown device",),
        "The container asked for a GPU the node does not have (NVIDIA_VISIBLE_DEVICES or "
        "--gpus names an index, UUID or MIG device that matches none): a typo or a count past "
        "the node's GPUs, or a GPU that vanished after a scheduler handed it out.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.45),
    ),
    rule(
        "container.devices_ignored",
        r"Ignoring devices specified in NVIDIA_VISIBLE_DEVICES",
        ("ignoring devices specified",),
        "The runtime ignored the GPUs an unprivileged container asked for by environment: the "
        "job starts without GPUs (ask for them through the device plugin or CDI).",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.WARNING, A.FIX_APPLICATION, 0.5),
    ),
    rule(
        "container.bad_request",
        r"invalid device name \S+ in annotation|requesting a CDI device with vendor "
        r"'runtime\.nvidia\.com' is not supported when requesting other CDI devices"
        r"|cannot set both Count and DeviceIDs on device request"
        r"|nvidia-container-cli: mount error: file creation failed: \S+: file exists",
        ("invalid device name", "requesting a cdi device", "count and deviceids", "file exists"),
        "The container's GPU request is malformed (a CDI annotation naming no device, automatic "
        "and explicit CDI names mixed, a count and ids together) or its image already holds the "
        "driver's files: the job's specification to fix.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
)


_CONTAINER = re.compile(
    r"\b(?:containers?|docker|pods?|k8s|kubernetes|kubeflow|gpu-operator)\b|容器|pod", re.I
)
_GPU_TOOL = re.compile(r"nvidia-smi|\bnvml\b|\bgpus?\b", re.I)
_LOST_LATER = (
    # after a while (`after few hours`, `after a random of time (maybe 1-2 days)`, `worked for
    # some time, but`, `2 days later`, `一段时间之后`), after systemd reloaded, or only in the
    # container (`works well on the host`, `on the host it works`)
    r"\bafter\s+(?:a\s+)?(?:(?:few|some|several|couple\s+of|random(?:\s+(?:of|amount\s+of))?"
    r"|\d{1,4}+(?:\s*[-–]\s*\d{1,4}+)?)\s*(?:[a-z]+\s+)?(?:hours?|days?|time|minutes?)|while)\b"
    r"|\((?:maybe\s+)?(?:several|a\s+few|some|\d{1,4}+(?:\s*[-–]\s*\d{1,4}+)?)\s+(?:hours|days)\)"
    r"|\b\d{1,4}+\s+(?:hours|days)\s+later\b"
    r"|\bworked\s+(?:fine\s+|well\s+)?for\s+(?:some|a)\s+(?:time|while)\b"
    r"|一段时间(?:之|以)?后|daemon-reload"
    r"|\bworks?\s+(?:well|fine)\s+on\s+the\s+host\b|\bon\s+the\s+host\s+it\s+works\b"
)
_FAILED = re.compile(
    r"\bfail\w*|\berror\b|\binvalid\b|\bcannot\b|\bcan'?t\b|\bunable\b|\blost\b"
    r"|\bnot\s+(?:work\w*|found|detected|available)|\bstops?\s+working|\bno\s+devices?\b|报错|失败",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"^\W*(?:if|when|whenever|q:|does|do|can|could|should|how)\b", re.IGNORECASE
)


def _lost_in_container(m: re.Match[str]) -> Verdict | None:
    """Return the container's verdict when the line names a container, nvidia-smi (NVML, the
    GPUs) and their failure beside the time (or the reload, or the host) after which they
    failed, told as an event: not a condition, a question or advice (`If nvidia-smi fails in
    the container after a few hours, restart the pod`)."""
    line = m.string
    if not (_CONTAINER.search(line) and _GPU_TOOL.search(line) and _FAILED.search(line)):
        return None
    sentence = sentence_at(m)
    if _CONDITION.match(sentence) or sentence.rstrip().endswith("?"):
        return None
    return _LOST_DEVICES if live(m) else None


_LOST_DEVICES = verdict(C.APPLICATION, B.APPLICATION, K.NODE, S.WARNING, A.FIX_APPLICATION, 0.5)

LOST_RULES: tuple[Rule, ...] = (
    rule(
        "container.gpus_lost_over_time",
        _LOST_LATER,
        (
            *("after", "worked", "daemon-reload", "host", "一段时间", "(maybe", "(several"),
            *("(a few", "later"),
        ),
        "nvidia-smi or NVML works when the container starts and fails inside it after hours or "
        "days, or after `systemctl daemon-reload`, or only in the container while the host "
        "sees the GPUs: the runtime's device cgroup was rewritten under the container (systemd "
        "cgroup driver; the toolkit's known issue), not a failed GPU. Fix the runtime's cgroup "
        "setup (or restart the container).",
        judge=_lost_in_container,
        flags=re.IGNORECASE,
    ),
)

EXPLAINED_BY: dict[str, frozenset[str]] = {
    "nvml.no_gpu": frozenset({"container.gpus_lost_over_time"}),
}
"""NVML's `Unknown Error` in an input whose author tells it began inside a container after a
while (or after a reload): the container's lost device access, not lost GPUs."""
