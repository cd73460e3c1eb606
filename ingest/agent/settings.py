"""Settings of the node agent (`trainguard agent`), read from TG_AGENT_* environment variables."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ingest.schema import CLUSTER_PATTERN, DEFAULT_CLUSTER

KERNEL_LOG_MODES: tuple[str, ...] = ("auto", "dmesg", "journal", "off")
"""Named kernel-log sources; any other value of `kernel_log` is a file path."""

MAX_LINE_BYTES = 16 * 1024
"""Default cap on one log line: longer lines are cut here, the rest up to the newline dropped."""


def _string_list(value: object) -> object:
    """Accept a JSON list or a comma-separated string for list settings given as env vars."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        return json.loads(text)
    return [part.strip() for part in text.split(",") if part.strip()]


StringList = Annotated[list[str], NoDecode]


class AgentSettings(BaseSettings):
    """What one node agent samples and tails, and how often."""

    model_config = SettingsConfigDict(env_prefix="TG_AGENT_", extra="ignore")

    node: str = Field(
        default_factory=socket.gethostname, min_length=1, description="Node name on every event."
    )
    cluster: str = Field(
        DEFAULT_CLUSTER,
        validation_alias="TG_CLUSTER",
        pattern=CLUSTER_PATTERN,
        description="Cluster on every event (TG_CLUSTER; node names are unique within it).",
    )
    interval_s: float = Field(1.0, gt=0, le=3600, description="GPU and host scrape interval, s.")
    kernel_log: str = Field(
        "auto",
        description=(
            "Kernel log source: auto (dmesg if /dev/kmsg is readable, else journalctl, else "
            "/var/log/kern.log), dmesg, journal, off, or an absolute file path."
        ),
    )
    train_logs: StringList = Field(
        default_factory=list, description="Training log files or globs (JSON list or a,b,c)."
    )
    host_root: Path = Field(Path("/"), description="Root under which /proc and /sys are read.")
    disk_mounts: StringList = Field(
        default_factory=lambda: ["/"], description="Mount points reported as disks."
    )
    net_interfaces: StringList = Field(
        default_factory=list,
        description="Ethernet interface globs to report; empty = interfaces backed by a device.",
    )
    logs_from_start: bool = Field(
        False, description="Read logs present at start-up from the beginning instead of the end."
    )
    log_poll_s: float = Field(0.2, gt=0, le=60, description="How often log sources are polled, s.")
    max_line_bytes: int = Field(
        MAX_LINE_BYTES, ge=256, le=1024 * 1024, description="Longest log line kept, bytes."
    )
    gpu_pcie_throughput: bool = Field(
        True, description="Read PCIe throughput (NVML samples it for ~20 ms per counter)."
    )
    nvml_retry_s: float = Field(
        300.0, gt=0, description="Retry nvmlInit this often after it failed (no driver yet)."
    )
    metrics_port: int | None = Field(None, ge=1, le=65535, description="Serve /metrics here.")
    metrics_host: str = Field(
        "127.0.0.1", description="Listen address of /metrics (0.0.0.0: every interface)."
    )

    @field_validator("train_logs", "disk_mounts", "net_interfaces", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _string_list(value)

    @field_validator("kernel_log")
    @classmethod
    def _kernel_log_mode_or_path(cls, value: str) -> str:
        if value in KERNEL_LOG_MODES or Path(value).is_absolute():
            return value
        raise ValueError(
            f"TG_AGENT_KERNEL_LOG must be one of {', '.join(KERNEL_LOG_MODES)} or an absolute "
            f"path, got {value!r}"
        )

    @field_validator("disk_mounts")
    @classmethod
    def _absolute_mounts(cls, value: list[str]) -> list[str]:
        for mount in value:
            if not mount.startswith("/"):
                raise ValueError(f"TG_AGENT_DISK_MOUNTS entry {mount!r} is not an absolute path")
        return value
