"""Diagnosis vocabulary shared by the explainer, the detectors, localization and incidents."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Category(StrEnum):
    """What kind of problem a finding is (fixed vocabulary, also used by the API)."""

    GPU_HARDWARE = "gpu.hardware"
    GPU_DEGRADED = "gpu.degraded"
    GPU_PREDICTED = "gpu.predicted"  # not failed yet: the failure predictor's alert
    GPU_APPLICATION = "gpu.application"
    GPU_OOM = "gpu.oom"
    NETWORK = "network"
    HANG = "hang"
    STRAGGLER = "straggler"
    NUMERICAL = "numerical"
    HOST_MEMORY = "host.memory"
    HOST_STORAGE = "host.storage"
    HOST_HARDWARE = "host.hardware"
    APPLICATION = "application"
    BENIGN = "benign"
    UNKNOWN = "unknown"


class Blame(StrEnum):
    """Who has to act: the infrastructure (operators) or the application (job owners)."""

    INFRASTRUCTURE = "infrastructure"
    APPLICATION = "application"
    UNKNOWN = "unknown"


class ComponentKind(StrEnum):
    """The level a finding or suspect points at."""

    GPU = "gpu"
    NODE = "node"
    NIC = "nic"
    SWITCH = "switch"
    JOB = "job"


class Severity(StrEnum):
    """How urgent a finding is."""

    CRITICAL = "critical"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Action(StrEnum):
    """The recommended next step (the action engine maps these to its ladders)."""

    NONE = "none"
    MONITOR = "monitor"
    RESTART_JOB = "restart_job"
    RESET_GPU = "reset_gpu"
    REBOOT_NODE = "reboot_node"
    ISOLATE_GPU = "isolate_gpu"
    ISOLATE_NODE = "isolate_node"
    HARDWARE_INSPECTION = "hardware_inspection"
    CHECK_NETWORK = "check_network"
    FIX_APPLICATION = "fix_application"
    FREE_DISK = "free_disk"
    CAPTURE_DIAGNOSTICS = "capture_diagnostics"


class IncidentStatus(StrEnum):
    """Where an incident is in its lifecycle: open -> mitigating -> resolved, or false alarm."""

    OPEN = "open"
    MITIGATING = "mitigating"
    RESOLVED = "resolved"
    FALSE_ALARM = "false_alarm"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Finding(_Frozen):
    """One recognised symptom in logs or telemetry, with its evidence."""

    category: Category
    blame: Blame
    component: ComponentKind | None = Field(None, description="Level the finding points at.")
    xid: int | None = Field(None, description="NVIDIA Xid code, when the evidence is an Xid.")
    severity: Severity
    action: Action = Field(description="Recommended next step.")
    line: str = Field(description="The evidence (first line of a multi-line match).")
    confidence: float = Field(ge=0, le=1)
    rule: str = Field(description="Id of the rule that matched.")
    node: str | None = Field(None, description="Node, when known.")
    gpu: int | None = Field(None, description="GPU index, when known.")
    pci_bus_id: str | None = Field(None, description="PCI bus id from the evidence, when present.")
    rank: int | None = Field(None, description="Global rank, when known.")


class Suspect(_Frozen):
    """A ranked candidate root cause produced by localization."""

    component: ComponentKind
    score: float = Field(ge=0, le=1, description="Share of the evidence pointing here.")
    node: str | None = None
    gpu: int | None = None
    nic: str | None = None
    switch: str | None = None
    rank: int | None = None
    explanation: str = Field(description="Why, in one or two sentences an on-call engineer reads.")
