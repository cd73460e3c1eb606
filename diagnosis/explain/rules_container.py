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

Guarantees: every pattern is anchored on the producer's wording; the runtime's start-up notices
(`Auto-detected mode as 'legacy'`, `dxcore initialization failed`), the validator's retries and
the device plugin's `No devices found. Waiting indefinitely.` stay silent.
"""

from __future__ import annotations

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
