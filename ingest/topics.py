"""Kafka topic administration: the topic plan, and the one place topics are created.

Services never create topics: their clients have auto-creation off, the deploy scripts'
brokers have `auto.create.topics.enable=false`, and a service started against a missing topic
fails with MissingTopics (naming the topics and `trainguard topics create`). Topics come from
an explicit admin step, `trainguard topics create` (also run by `trainguard migrate`), which
creates them from the plan below through TopicAdmin.

Guarantees:
- `TopicAdmin.create` creates only missing topics and never alters an existing one (its
  partitions, replication or configs); it returns once each new topic has a leader for every
  partition and it reads as planned from the brokers (a verify right after agrees), so a
  consumer group that joins right after gets its partitions.
- `TopicAdmin.verify` lists every difference between the plan and the cluster (missing topic,
  partition count, replication factor, a planned config with another value).
- The sized plan is the sizing table of deploy/production/README.md: tg.train, tg.nccl,
  tg.jobs and tg.diagnosis.evidence have one partition count (co-partitioned by job, which
  diagnosis scale-out relies on: docs/scale-out.md), so scaling keeps them equal.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError, TopicAlreadyExistsError

from ingest.bus import BusError, MissingTopics, TopicFamily, Topics

log = logging.getLogger(__name__)

DAY_MS = 86_400_000


@dataclass(frozen=True)
class TopicSize:
    """One row of the sizing plan (deploy/production/README.md, "Topics")."""

    suffix: str
    partitions: int
    retention_ms: int
    cleanup_policy: str
    max_message_bytes: int
    key: str


SIZING: tuple[TopicSize, ...] = (
    TopicSize(TopicFamily.METRICS.value, 24, 1 * DAY_MS, "delete", 2_097_152, "node"),
    TopicSize(TopicFamily.LOGS.value, 12, 3 * DAY_MS, "delete", 2_097_152, "node"),
    TopicSize(TopicFamily.TRAIN.value, 24, 3 * DAY_MS, "delete", 2_097_152, "job"),
    TopicSize(TopicFamily.NCCL.value, 24, 1 * DAY_MS, "delete", 8_388_608, "job"),
    TopicSize(TopicFamily.JOBS.value, 24, 30 * DAY_MS, "compact,delete", 16_777_216, "job"),
    # diagnosis scale-out: node evidence re-keyed by job, co-partitioned with train/nccl/jobs
    TopicSize("diagnosis.evidence", 24, 1 * DAY_MS, "delete", 2_097_152, "job"),
    TopicSize("incidents", 6, 30 * DAY_MS, "delete", 2_097_152, "job"),
    TopicSize("actions", 6, 90 * DAY_MS, "delete", 2_097_152, "job"),
)
"""Every topic a service reads or writes, sized for 200,000 GPUs (see the production README)."""


@dataclass(frozen=True)
class TopicSpec:
    """A topic as it must exist: partitions, replication factor and topic configs."""

    name: str
    partitions: int
    replication: int
    configs: Mapping[str, str] = field(default_factory=dict)


def plan_topics(
    topics: Topics,
    replication: int = 1,
    min_insync: int = 2,
    partitions: int | None = None,
) -> list[TopicSpec]:
    """Return the plan of every TrainGuard topic under `topics.prefix`.

    `partitions` None takes the sizing table's counts; a number gives every topic that many
    (a dev broker). `min.insync.replicas` is min(`min_insync`, `replication`): 2 of 3
    replicas must acknowledge an `acks=all` write; on one broker it is 1.
    """
    if replication < 1:
        raise ValueError(f"replication factor must be >= 1, got {replication}")
    if min_insync < 1:
        raise ValueError(f"min.insync.replicas must be >= 1, got {min_insync}")
    if partitions is not None and partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    isr = min(min_insync, replication)
    return [
        TopicSpec(
            name=f"{topics.prefix}{size.suffix}",
            partitions=size.partitions if partitions is None else partitions,
            replication=replication,
            configs={
                "retention.ms": str(size.retention_ms),
                "cleanup.policy": size.cleanup_policy,
                "max.message.bytes": str(size.max_message_bytes),
                "min.insync.replicas": str(isr),
            },
        )
        for size in SIZING
    ]


@dataclass(frozen=True)
class TopicState:
    """A topic as the cluster describes it."""

    name: str
    partitions: int
    replication: int
    min_isr_seen: int
    """The smallest in-sync replica count over its partitions (now)."""
    offline_partitions: int
    configs: Mapping[str, str]

    def __str__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.configs.items()))
        return (
            f"{self.name}: {self.partitions} partitions, replication {self.replication}, "
            f"in sync >= {self.min_isr_seen}, offline {self.offline_partitions}; {shown}"
        )


CREATE_HINT = "create them with `trainguard topics create` (also run by `trainguard migrate`)"
LISTED_TIMEOUT_S = 30.0
"""How long `create` waits for the topics it created to read as planned."""


class TopicAdmin:
    """Admin connection to one Kafka cluster (a context manager; close() releases it)."""

    def __init__(self, bootstrap: str, client_id: str = "trainguard-admin") -> None:
        """Connect; raise BusError when the cluster cannot be reached."""
        self.bootstrap = bootstrap
        try:
            self._admin = KafkaAdminClient(
                bootstrap_servers=bootstrap, client_id=client_id, request_timeout_ms=30_000
            )
        except KafkaError as exc:
            raise BusError(f"Kafka at {bootstrap} unreachable: {exc}") from exc

    def __enter__(self) -> TopicAdmin:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection."""
        self._admin.close()

    def existing(self) -> set[str]:
        """Return the names of the cluster's topics."""
        try:
            return set(self._admin.list_topics())
        except KafkaError as exc:
            raise BusError(f"cannot list topics on {self.bootstrap}: {exc}") from exc

    def brokers(self) -> int:
        """Return the number of live brokers."""
        try:
            return len(self._admin.describe_cluster()["brokers"])
        except KafkaError as exc:
            raise BusError(f"cannot describe the cluster at {self.bootstrap}: {exc}") from exc

    def missing(self, names: Iterable[str]) -> list[str]:
        """Return those of `names` that do not exist, in the order given."""
        existing = self.existing()
        return [n for n in dict.fromkeys(names) if n not in existing]

    def require(self, names: Iterable[str]) -> None:
        """Raise MissingTopics if any of `names` does not exist."""
        missing = self.missing(names)
        if missing:
            raise MissingTopics(missing, self.bootstrap, CREATE_HINT)

    def create(self, specs: Sequence[TopicSpec]) -> list[str]:
        """Create the planned topics that do not exist; return the names created.

        Existing topics are left as they are (see verify). Waits until every new topic has
        a leader for each partition.
        """
        missing = set(self.missing(s.name for s in specs))
        new = {
            s.name: {
                "num_partitions": s.partitions,
                "replication_factor": s.replication,
                "configs": dict(s.configs),
            }
            for s in specs
            if s.name in missing
        }
        if not new:
            return []
        try:
            self._admin.create_topics(new, timeout_ms=30_000, wait_for_metadata=True)
        except TopicAlreadyExistsError:
            log.info("topics created concurrently by another admin step")
            self._admin.wait_for_topics(list(new), timeout_ms=30_000)
        except KafkaError as exc:
            raise BusError(
                f"cannot create topics {sorted(new)} on {self.bootstrap}: {exc}"
            ) from exc
        self._until_settled([s for s in specs if s.name in new])
        for name in new:
            log.info("created topic %s", name)
        return list(new)

    def _until_settled(
        self, specs: Sequence[TopicSpec], timeout_s: float = LISTED_TIMEOUT_S
    ) -> None:
        """Wait until the topics just created read as planned from whichever broker answers:
        a new topic reaches the other brokers' metadata (its listing, replicas and configs) a
        moment after the controller's answer, and a verify that asks one of them first would
        find it missing or different. Raises BusError after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            problems = self.verify(specs)
            if not problems:
                return
            if time.monotonic() >= deadline:
                raise BusError(
                    f"topics created on {self.bootstrap} do not read as planned after "
                    f"{timeout_s:.0f} s: {'; '.join(problems)}"
                )
            time.sleep(0.2)

    def describe(self, names: Iterable[str]) -> list[TopicState]:
        """Describe the existing ones of `names` (partitions, replicas, ISR, topic configs)."""
        wanted = [n for n in dict.fromkeys(names) if n in self.existing()]
        if not wanted:
            return []
        try:
            meta = {t["name"]: t for t in self._admin.describe_topics(wanted)}
            described = self._admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, n, None) for n in wanted],
                config_filter="all",
            ).get("topic", {})
        except KafkaError as exc:
            raise BusError(f"cannot describe topics on {self.bootstrap}: {exc}") from exc
        states = []
        for name in wanted:
            parts = meta[name]["partitions"]
            configs = {
                str(k): str(v["value"])
                for k, v in described.get(name, {}).items()
                if v.get("value") is not None
            }
            states.append(
                TopicState(
                    name=name,
                    partitions=len(parts),
                    replication=min((len(p["replica_nodes"]) for p in parts), default=0),
                    min_isr_seen=min((len(p["isr_nodes"]) for p in parts), default=0),
                    offline_partitions=sum(1 for p in parts if p["leader_id"] < 0),
                    configs=configs,
                )
            )
        return states

    def verify(self, specs: Sequence[TopicSpec]) -> list[str]:
        """Return every difference between the plan and the cluster (empty: as planned)."""
        states = {s.name: s for s in self.describe(s.name for s in specs)}
        problems = []
        for spec in specs:
            state = states.get(spec.name)
            if state is None:
                problems.append(f"{spec.name}: missing ({CREATE_HINT})")
                continue
            if state.partitions != spec.partitions:
                problems.append(
                    f"{spec.name}: {state.partitions} partitions, planned {spec.partitions}"
                )
            if state.replication != spec.replication:
                problems.append(
                    f"{spec.name}: replication factor {state.replication}, "
                    f"planned {spec.replication}"
                )
            for key, value in spec.configs.items():
                if state.configs.get(key) != value:
                    problems.append(f"{spec.name}: {key}={state.configs.get(key)}, planned {value}")
        return problems


def require_topics(bootstrap: str, names: Iterable[str]) -> None:
    """Raise MissingTopics (or BusError if unreachable) unless every topic exists."""
    with TopicAdmin(bootstrap) as admin:
        admin.require(names)
