"""Process settings, one class per concern, read from TG_* environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ingest.event_time import DEFAULT_MAX_AGE_S, DEFAULT_MAX_LEAD_S, EventTimePolicy


class StoreSettings(BaseSettings):
    """Where telemetry is stored: a ClickHouse server, or chdb in-process (embedded)."""

    model_config = SettingsConfigDict(env_prefix="TG_CLICKHOUSE_", extra="ignore")

    mode: Literal["server", "embedded"] = Field("embedded", description="server or embedded.")
    host: str = Field("127.0.0.1", description="ClickHouse server host.")
    port: int = Field(9000, ge=1, le=65535, description="Native protocol port.")
    database: str = Field("trainguard", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    user: str = Field("default")
    password: SecretStr = Field(SecretStr(""), description="Never logged.")
    path: Path = Field(Path(".tg/chdb"), description="Data directory of the embedded store.")
    retention_days: int | None = Field(None, ge=1, description="Keep this many days.")
    connections: int = Field(
        1, ge=1, le=64, description="Server connections (queries at once); the API uses more."
    )


class BusSettings(BaseSettings):
    """The event bus: Kafka, or the in-process bus (embedded)."""

    model_config = SettingsConfigDict(env_prefix="TG_KAFKA_", extra="ignore")

    mode: Literal["kafka", "embedded"] = Field("embedded", description="kafka or embedded.")
    bootstrap: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers.")
    topic_prefix: str = Field("tg.", pattern=r"^[A-Za-z0-9._-]*$")
    partitions: int = Field(4, ge=1, le=1024, description="Partitions of new topics.")
    max_message_bytes: int = Field(
        1_048_588,
        ge=1024,
        description=(
            "Largest record batch the broker takes (its message.max.bytes); used only when "
            "the broker's and the topics' limits cannot be read through the admin API."
        ),
    )

    @model_validator(mode="after")
    def _bootstrap_has_port(self) -> BusSettings:
        for server in self.bootstrap.split(","):
            host, _, port = server.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"TG_KAFKA_BOOTSTRAP entry {server!r} is not host:port")
        return self


class SinkProcessSettings(BaseSettings):
    """The sink process: consumer group, batching, retries and its metrics port."""

    model_config = SettingsConfigDict(env_prefix="TG_SINK_", extra="ignore")

    group: str = Field("trainguard-sink", min_length=1)
    instance_id: str | None = Field(
        None,
        description="Static group membership id (e.g. the pod name): fast takeover on restart.",
    )
    session_timeout_s: float = Field(15.0, ge=6, le=300, description="Kafka group session timeout.")
    batch_records: int = Field(20_000, ge=1, le=500_000)
    batch_seconds: float = Field(1.0, gt=0, le=60)
    retry_max_s: float = Field(30.0, gt=0)
    metrics_port: int | None = Field(None, ge=1, le=65535, description="Serve /metrics here.")


class EventTimeSettings(BaseSettings):
    """Event-time admission shared by the sink and the diagnosis worker (ingest/event_time.py)."""

    model_config = SettingsConfigDict(env_prefix="TG_EVENT_", extra="ignore")

    max_lead_s: float = Field(
        DEFAULT_MAX_LEAD_S,
        ge=0,
        description="Refuse events this far ahead of the receiving clock (0: no bound).",
    )
    max_age_s: float = Field(
        DEFAULT_MAX_AGE_S,
        ge=0,
        description="Refuse events this far behind the receiving clock (0: no bound).",
    )

    def policy(self) -> EventTimePolicy:
        """Return the admission policy these settings describe."""
        return EventTimePolicy(max_lead_s=self.max_lead_s or None, max_age_s=self.max_age_s or None)


class DiagnoseSettings(BaseSettings):
    """The streaming diagnosis worker (`trainguard diagnose` without a directory)."""

    model_config = SettingsConfigDict(env_prefix="TG_DIAGNOSE_", extra="ignore")

    group: str = Field("trainguard-diagnose", min_length=1)
    instance_id: str | None = Field(None, description="Static group membership id.")
    fabric: Path | None = Field(
        None, description="inventory.json with the NIC-to-switch cabling (optional)."
    )
    lateness_s: float = Field(2.0, ge=0, le=60, description="Event-time reordering allowance.")
    publish_interval_s: float = Field(
        5.0, ge=0, le=600, description="Least wall time between revisions of one incident."
    )
    metrics_port: int | None = Field(None, ge=1, le=65535, description="Serve /metrics here.")


class ApiSettings(BaseSettings):
    """The REST API process (`trainguard api`)."""

    model_config = SettingsConfigDict(env_prefix="TG_API_", extra="ignore")

    host: str = Field("127.0.0.1", description="Listen address (loopback by default).")
    port: int = Field(8700, ge=1, le=65535)
    cache_s: float = Field(5.0, ge=0, le=300, description="Age of fleet snapshots served.")
    workers: int = Field(1, ge=1, le=64, description="Server processes (each with its caches).")
    store_connections: int = Field(
        8, ge=1, le=64, description="ClickHouse connections per worker (queries at once)."
    )
    token_cache_s: float = Field(
        30.0, ge=0, le=3600, description="Longest a verified token is trusted without a re-read."
    )
    token_check_s: float = Field(
        2.0,
        ge=0.1,
        le=60,
        description="How often a running API checks the store for revocations of the tokens "
        "it trusts (the longest a revoked token keeps working).",
    )
    max_body_bytes: int = Field(
        1 << 20, ge=1024, le=1 << 30, description="Largest request body (bigger: 413)."
    )
    max_url_bytes: int = Field(
        16 << 10, ge=1024, le=1 << 20, description="Longest path and query (longer: 414)."
    )
    max_header_bytes: int = Field(
        64 << 10, ge=4096, le=1 << 20, description="Largest request head (bigger: 431)."
    )
    risk_horizon_h: int = Field(
        48, ge=1, le=720, description="Failure-risk horizon shown (`predict score` writes it)."
    )
    generation_file: Path | None = Field(
        None,
        description=(
            "File through which the workers count writes, so a write in one drops the "
            "cached lists of all (`trainguard api` picks one for its workers)."
        ),
    )


class WebhookSettings(BaseSettings):
    """How webhook secrets and URLs are sealed at rest (every process that reads them)."""

    model_config = SettingsConfigDict(env_prefix="TG_WEBHOOK_", extra="ignore")

    key: SecretStr | None = Field(
        None, description="Fernet key sealing stored webhook URLs and secrets. Never logged."
    )
    key_file: Path = Field(
        Path(".tg/webhook.key"),
        description="Where the key is read from when TG_WEBHOOK_KEY is unset (created, 0600, "
        "on first use: give the API and the action engine the same file).",
    )


def local_services_env(repo: Path) -> dict[str, str]:
    """Return the exports `deploy/services.sh start` wrote (TG_SERVICES_DIR/env), if any."""
    path = Path(os.environ.get("TG_SERVICES_DIR", repo / "deploy" / ".local")) / "env"
    values: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("export ") and "=" in line:
                key, _, value = line.removeprefix("export ").partition("=")
                values[key] = value
    return values


class ActSettings(BaseSettings):
    """The action engine process (`trainguard act`)."""

    model_config = SettingsConfigDict(env_prefix="TG_ACT_", extra="ignore")

    mode: Literal["dry_run", "approve", "auto"] = Field("dry_run", description="Start safe.")
    group: str = Field("trainguard-act", min_length=1, description="Kafka consumer group.")
    policy: Path | None = Field(None, description="Policy YAML (default: the shipped one).")
    executor: Literal["slurm", "kubernetes", "local"] = Field(
        "slurm", description="Node/job backend (local: the embedded demo's in-memory stand-in)."
    )
    slurm_conf: Path | None = Field(None, description="slurm.conf (TG_ACT_SLURM_CONF).")
    fabric: Path | None = Field(
        None, description="Fabric inventory JSON (node -> leaf switches) for switch isolation."
    )
    kube_host: str | None = Field(None, description="Kubernetes API server URL.")
    kube_token: SecretStr | None = Field(None, description="Bearer token. Never logged.")
    kube_namespace: str = Field("training", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    fleet_nodes: int = Field(1000, ge=1, description="Fleet size the breaker share is of.")
    breaker_share: float = Field(0.05, gt=0, le=1)
    breaker_max_nodes: int | None = Field(None, ge=1)
    breaker_window_s: float = Field(3600.0, gt=0)
    incident_ttl_s: float = Field(3600.0, gt=0)
    operator_url: str | None = Field(None, description="Endpoint for diagnostics/notify/...")
    operator_secret: SecretStr = Field(SecretStr(""), description="HMAC key. Never logged.")
    webhook_hosts: list[str] = Field(default_factory=list, description="Webhook allowlist.")
    poll_s: float = Field(1.0, gt=0, le=60)
    recheck_s: float = Field(
        10.0, gt=0, le=3600, description="How often waiting steps (a job's checkpoint) are checked."
    )
    capacity: Literal["batch", "lyra"] = Field(
        "batch",
        description="Replacement capacity: the batch scheduler places the requeued job, or the "
        "Lyra scheduler over TG_ACT_INVENTORY (warm standbys, loaned inference servers).",
    )
    inventory: Path | None = Field(
        None, description="Servers the Lyra scheduler manages (JSON: training, standby, inference)."
    )

    @model_validator(mode="after")
    def _backend_configured(self) -> ActSettings:
        if self.executor == "kubernetes" and not self.kube_host:
            raise ValueError("TG_ACT_EXECUTOR=kubernetes needs TG_ACT_KUBE_HOST")
        if self.operator_url and not self.operator_secret.get_secret_value():
            raise ValueError("TG_ACT_OPERATOR_URL needs TG_ACT_OPERATOR_SECRET")
        return self
