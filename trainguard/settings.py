"""Process settings, one class per concern, read from TG_* environment variables."""

from __future__ import annotations

import difflib
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ingest.event_time import DEFAULT_MAX_AGE_S, DEFAULT_MAX_LEAD_S, EventTimePolicy
from ingest.schema import CLUSTER_PATTERN, DEFAULT_CLUSTER

# where a process serves /metrics: off unless a port is set, loopback unless told otherwise
LOOPBACK = "127.0.0.1"
MetricsPort = Annotated[int | None, Field(ge=1, le=65535, description="Serve /metrics here.")]
MetricsHost = Annotated[
    str, Field(description="Listen address of /metrics (0.0.0.0: every interface).")
]


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
    cluster: str = Field(
        "",
        pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$",
        description=(
            "Server mode: the ClickHouse cluster (<remote_servers> name) the tables are spread "
            "over, Replicated + Distributed; empty: one server (docs/storage-cluster.md)."
        ),
    )
    insert_quorum: int = Field(
        2,
        ge=0,
        le=16,
        description=(
            "Cluster mode: replicas of a shard that must hold an insert before it returns; "
            "set it to the replicas per shard for exactly-once across replicas (0: one)."
        ),
    )


class BusSettings(BaseSettings):
    """The event bus: Kafka, or the in-process bus (embedded)."""

    model_config = SettingsConfigDict(env_prefix="TG_KAFKA_", extra="ignore")

    mode: Literal["kafka", "embedded"] = Field("embedded", description="kafka or embedded.")
    bootstrap: str = Field("127.0.0.1:9092", description="Kafka bootstrap servers.")
    topic_prefix: str = Field("tg.", pattern=r"^[A-Za-z0-9._-]*$")
    partitions: int = Field(
        4, ge=1, le=1024, description="Partitions of every topic when topic_plan is flat."
    )
    topic_plan: Literal["flat", "sized"] = Field(
        "flat",
        description=(
            "Topic sizes `trainguard topics create` uses: flat (every topic `partitions` "
            "partitions, dev) or sized (the production sizing table, ingest/topics.py)."
        ),
    )
    replication_factor: int = Field(
        1, ge=1, le=16, description="Replication factor of the topics (3 on a cluster)."
    )
    min_insync_replicas: int = Field(
        2,
        ge=1,
        le=16,
        description="Topics' min.insync.replicas (capped at replication_factor: 1 on one broker).",
    )
    acks: Literal["all", "1", "0"] = Field(
        "all", description="Producer acks; `all` also makes producers idempotent."
    )
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
    fast_decode: bool = Field(
        True,
        description="Decode GPU scrapes with msgspec (ingest/fast_decode.py: pydantic's values, "
        "about 5x faster); false: every record through pydantic (the benchmark's baseline).",
    )
    metrics_port: MetricsPort = None
    metrics_host: MetricsHost = LOOPBACK


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


class ClusterSettings(BaseSettings):
    """Which cluster a sink or diagnosis worker serves (for events that name none)."""

    model_config = SettingsConfigDict(env_prefix="TG_", extra="ignore")

    cluster: str = Field(
        DEFAULT_CLUSTER,
        pattern=CLUSTER_PATTERN,
        description="Cluster of events without a `cluster` field (TG_CLUSTER); one installation "
        "serves several clusters when each agent sets its own.",
    )


class DiagnoseSettings(BaseSettings):
    """The streaming diagnosis worker (`trainguard diagnose` without a directory)."""

    model_config = SettingsConfigDict(env_prefix="TG_DIAGNOSE_", extra="ignore")

    group: str = Field("trainguard-diagnose", min_length=1)
    instance_id: str | None = Field(None, description="Static group membership id.")
    fabric: Path | None = Field(
        None, description="inventory.json with the NIC-to-switch cabling (optional)."
    )
    lateness_s: float = Field(2.0, ge=0, le=60, description="Event-time reordering allowance.")
    scale_out: bool = Field(
        False,
        description="Run as one of several members of the group (docs/scale-out.md): node "
        "evidence is routed by job through the evidence topic (route group `<group>.route`). "
        "Needed for more than one member; every member of a group must set it alike.",
    )
    publish_interval_s: float = Field(
        5.0, ge=0, le=600, description="Least wall time between revisions of one incident."
    )
    fast_decode: bool = Field(
        True,
        description="Decode GPU scrapes with msgspec, as the sink does (ingest/fast_decode.py: "
        "pydantic's values, about 4x faster); false: every record through pydantic.",
    )
    metrics_port: MetricsPort = None
    metrics_host: MetricsHost = LOOPBACK
    metrics_cache_s: float = Field(
        15.0,
        ge=0,
        le=3600,
        description="Longest the fleet series (GPU states, open incidents, ETTR) are reused "
        "between scrapes before they are read from ClickHouse again.",
    )
    metrics_max_jobs: int = Field(
        500, ge=1, le=100_000, description="Most jobs with a trainguard_job_ettr series."
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
    cluster: str | None = Field(
        None,
        pattern=CLUSTER_PATTERN,
        description="The one cluster whose incidents this process acts on (TG_ACT_CLUSTER): "
        "its executors reach that cluster's Slurm or Kubernetes; unset: every cluster's.",
    )
    group: str = Field("trainguard-act", min_length=1, description="Kafka consumer group.")
    policy: Path | None = Field(None, description="Policy YAML (default: the shipped one).")
    executor: Literal["slurm", "kubernetes", "local"] = Field(
        "slurm", description="Node/job backend (local: the embedded demo's in-memory stand-in)."
    )
    slurm_conf: Path | None = Field(None, description="slurm.conf (TG_ACT_SLURM_CONF).")
    fabric: Path | None = Field(
        None, description="Fabric inventory JSON (node -> leaf switches) for switch isolation."
    )
    kube_auth: Literal["auto", "incluster", "kubeconfig", "explicit"] = Field(
        "auto",
        description="Kubernetes credentials: auto tries the pod's service account, then the "
        "kubeconfig, then TG_ACT_KUBE_HOST/TOKEN; the others use only that source.",
    )
    kube_config: Path | None = Field(
        None, description="kubeconfig file (default: KUBECONFIG, else ~/.kube/config)."
    )
    kube_context: str | None = Field(None, description="kubeconfig context (default: current).")
    kube_host: str | None = Field(None, description="Kubernetes API server URL (explicit).")
    kube_token: SecretStr | None = Field(None, description="Bearer token. Never logged.")
    kube_ca_cert: Path | None = Field(None, description="CA bundle of TG_ACT_KUBE_HOST.")
    kube_optout_label: str = Field(
        "trainguard.io/remediation",
        pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        description="Node label key; a node labelled <key>=disabled is never isolated.",
    )
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
    lease_s: float = Field(
        15.0,
        gt=0.5,
        le=600,
        description="A replica whose heartbeat is older than this is dead; its steps move on.",
    )
    heartbeat_s: float = Field(
        2.0, gt=0.05, le=120, description="How often a replica stores its heartbeat."
    )
    recheck_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="How often waiting steps (a job's next checkpoint, a restarted job's "
        "progress) are checked.",
    )
    capacity: Literal["batch", "lyra"] = Field(
        "batch",
        description="Replacement capacity: the batch scheduler places the requeued job, or the "
        "Lyra scheduler over TG_ACT_INVENTORY (warm standbys, loaned inference servers).",
    )
    inventory: Path | None = Field(
        None, description="Servers the Lyra scheduler manages (JSON: training, standby, inference)."
    )
    console_url: str | None = Field(
        None,
        pattern=r"^https?://[^\s]+$",
        description="The console's external URL: webhooks, pages and alerts link back to it.",
    )
    metrics_port: MetricsPort = None
    metrics_host: MetricsHost = LOOPBACK
    metrics_cache_s: float = Field(
        15.0,
        ge=0,
        le=3600,
        description="Longest the action and breaker series are reused between scrapes before "
        "they are read from ClickHouse again.",
    )

    @model_validator(mode="after")
    def _backend_configured(self) -> ActSettings:
        if self.executor == "kubernetes" and self.kube_auth == "explicit" and not self.kube_host:
            raise ValueError("TG_ACT_KUBE_AUTH=explicit needs TG_ACT_KUBE_HOST")
        if self.operator_url and not self.operator_secret.get_secret_value():
            raise ValueError("TG_ACT_OPERATOR_URL needs TG_ACT_OPERATOR_SECRET")
        return self


class AlertmanagerSettings(BaseSettings):
    """Where `trainguard act` sends incidents as Alertmanager alerts (off while url is unset)."""

    model_config = SettingsConfigDict(env_prefix="TG_ALERTMANAGER_", extra="ignore")

    url: str | None = Field(
        None,
        pattern=r"^https?://[^\s@]+$",
        description="Alertmanager's base URL, e.g. http://alertmanager:9093 (no user info).",
    )
    username: str | None = Field(None, description="Basic auth user (with password_file).")
    password_file: Path | None = Field(None, description="File holding the basic auth password.")
    bearer_token_file: Path | None = Field(None, description="File holding a bearer token.")
    interval_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="How often every open incident is posted again; an alert not re-posted "
        "ends 4 intervals after its last post (Prometheus' resend rule).",
    )
    resolved_retention_s: float = Field(
        900.0, ge=0, description="How long a closed incident's resolved alert is still posted."
    )
    timeout_s: float = Field(10.0, gt=0, le=300, description="HTTP timeout of one post.")

    @model_validator(mode="after")
    def _one_auth(self) -> AlertmanagerSettings:
        if self.username and self.password_file is None:
            raise ValueError("TG_ALERTMANAGER_USERNAME needs TG_ALERTMANAGER_PASSWORD_FILE")
        if self.password_file is not None and not self.username:
            raise ValueError("TG_ALERTMANAGER_PASSWORD_FILE needs TG_ALERTMANAGER_USERNAME")
        if self.username and self.bearer_token_file is not None:
            raise ValueError("set basic auth or TG_ALERTMANAGER_BEARER_TOKEN_FILE, not both")
        return self


TOOLING_VARIABLES: dict[str, str] = {
    # deploy/services.sh, deploy/dev.sh and the tests
    "TG_SERVICES_DIR": "where deploy/services.sh keeps the local services and their env file",
    "TG_PYTHON": "the Python deploy/services.sh runs its helpers with",
    "TG_VENV": "the virtual environment deploy/dev.sh creates and uses",
    "TG_KEEP_SERVICES": "1: deploy/dev.sh test leaves the services it started running",
    "TG_E2E_SCREENSHOTS": "where the browser tests save screenshots",
    # deploy/clickhouse.sh
    "TG_CLICKHOUSE_HTTP_PORT": "HTTP port of the local ClickHouse server",
    "TG_CLICKHOUSE_START_TIMEOUT": "seconds deploy/clickhouse.sh waits for the server",
    # deploy/clickhouse_cluster.sh
    "TG_CH_CLUSTER_BASE_PORT": "first port of the local ClickHouse cluster",
    "TG_CH_CLUSTER_NAME": "cluster name of the local ClickHouse cluster",
    "TG_CH_CLUSTER_START_TIMEOUT": "seconds deploy/clickhouse_cluster.sh waits for each process",
    "TG_CH_CLUSTER_PORTS": "native ports of the local ClickHouse cluster (written to its env)",
    "TG_CH_CLUSTER_ZK_PORT": "ZooKeeper port of the local ClickHouse cluster (written to its env)",
    # deploy/kafka.sh
    "TG_KAFKA_PORT": "broker port of the local Kafka",
    "TG_KAFKA_CONTROLLER_PORT": "controller port of the local Kafka",
    "TG_KAFKA_HEAP_MB": "heap of the local Kafka",
    "TG_KAFKA_VERSION": "Kafka version deploy/kafka.sh builds",
    "TG_KAFKA_START_TIMEOUT": "seconds deploy/kafka.sh waits for the broker",
    "TG_MAVEN_REPO_LOCAL": "Maven repository deploy/kafka.sh fetches Kafka into",
    "TG_KAFKA_DIR": "directory of one deploy/kafka.sh node",
    "TG_KAFKA_LIBS_ROOT": "where deploy/kafka.sh caches the Kafka jars",
    "TG_KAFKA_NODE_ID": "node.id of one deploy/kafka.sh node",
    "TG_KAFKA_QUORUM_VOTERS": "controller.quorum.voters of one deploy/kafka.sh node",
    "TG_KAFKA_CLUSTER_ID": "cluster id deploy/kafka.sh formats storage with",
    "TG_KAFKA_INTERNAL_RF": "replication of Kafka's internal topics (deploy/kafka.sh)",
    "TG_KAFKA_NO_WAIT": "1: deploy/kafka.sh start does not wait for readiness",
    "TG_KAFKA_STOP_GRACE": "seconds deploy/kafka.sh stop waits before KILL",
    # deploy/kafka_cluster.sh
    "TG_KAFKA_CLUSTER_NODES": "nodes of the local Kafka cluster",
    "TG_KAFKA_CLUSTER_PORT": "client port of node 1 of the local Kafka cluster",
    "TG_KAFKA_CLUSTER_CONTROLLER_PORT": "controller port of node 1 of the local Kafka cluster",
    "TG_KAFKA_CLUSTER_HEAP_MB": "heap of each node of the local Kafka cluster",
    # deploy/cluster.sh
    "TG_LOCAL_CLUSTER_DIR": "state dir of the loopback cluster of deploy/cluster.sh",
    "TG_LOCAL_CLUSTER_BASE_PORT": "first port of the loopback cluster of deploy/cluster.sh",
    "TG_LOCAL_CLUSTER_START_TIMEOUT": "seconds deploy/cluster.sh waits for each service",
    "TG_LOCAL_CLUSTER_DIAGNOSE_MEMBERS": "diagnose members deploy/cluster.sh starts (1-3)",
    # deploy/slurm.sh
    "TG_SLURM_CONF": "slurm.conf of the local Slurm cluster",
    "TG_SLURM_FAKE_NODES": "nodes of the local Slurm cluster",
    "TG_SLURMD_PORT": "slurmd port of the local Slurm cluster",
    "TG_SLURMCTLD_PORT": "slurmctld port of the local Slurm cluster",
    "TG_MUNGE_DIR": "munge state of the local Slurm cluster",
    # deploy/production/compose.yaml (interpolated by docker compose)
    "TG_PARTITION_SCALE": "partitions per topic, as a multiple, of the compose topic job",
}
"""TG_* variables that scripts and tests read, not a `trainguard` process.

They may be exported where `trainguard` runs (`source deploy/.local/env`), so the check
below accepts them. A new one goes here, or `trainguard` refuses to start where it is set
(tests/unit/test_env_check.py finds every TG_* name in the repository).
"""


def settings_classes() -> tuple[type[BaseSettings], ...]:
    """Return every settings class read from TG_* variables, in every role."""
    from actions.webhooks.settings import WebhookSettings
    from api.settings import ApiSettings
    from ingest.agent.settings import AgentSettings
    from ui.settings import ConsoleSettings

    return (
        StoreSettings,
        BusSettings,
        SinkProcessSettings,
        EventTimeSettings,
        ClusterSettings,
        DiagnoseSettings,
        ApiSettings,
        WebhookSettings,
        ActSettings,
        AlertmanagerSettings,
        AgentSettings,
        ConsoleSettings,
    )


def env_names(cls: type[BaseSettings]) -> list[str]:
    """Return the environment variables a settings class reads (upper case, field order)."""
    prefix = str(cls.model_config.get("env_prefix") or "")
    names = []
    for name, field in cls.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, str):
            names.append(alias.upper())
        elif isinstance(alias, AliasChoices):
            names.extend(str(choice).upper() for choice in alias.choices)
        else:
            names.append(f"{prefix}{name}".upper())
    return names


def known_env_names() -> frozenset[str]:
    """Return every TG_* name the settings read or the tooling uses."""
    names = {name for cls in settings_classes() for name in env_names(cls)}
    return frozenset(names | set(TOOLING_VARIABLES))


def unknown_env_names(environ: Mapping[str, str]) -> list[str]:
    """Return the TG_* variables in `environ` that nothing reads (sorted).

    Names are compared upper-cased: the settings read them case-insensitively.
    """
    known = known_env_names()
    return sorted(
        name for name in environ if name.upper().startswith("TG_") and name.upper() not in known
    )


def unknown_env_message(unknown: Sequence[str]) -> str:
    """Return the refusal: each unknown name with its closest valid names, then all of them."""
    known = known_env_names()
    lines = []
    for name in unknown:
        close = difflib.get_close_matches(name.upper(), sorted(known), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        lines.append(f"trainguard: unknown environment variable {name}{hint}")
    lines.append("Valid TG_* variables:")
    for cls in settings_classes():
        names = env_names(cls)
        lines.extend(
            textwrap.wrap(" ".join(names), 96, initial_indent="  ", subsequent_indent="  ")
        )
    lines.append("Also accepted (read by deploy/ scripts and tests, not by trainguard):")
    lines.extend(
        textwrap.wrap(" ".join(TOOLING_VARIABLES), 96, initial_indent="  ", subsequent_indent="  ")
    )
    return "\n".join(lines)


def check_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """Return the refusal message when `environ` (default: os.environ) has an unknown TG_*."""
    unknown = unknown_env_names(os.environ if environ is None else environ)
    return unknown_env_message(unknown) if unknown else None
