"""The wire schema: every TrainGuard event as a typed, versioned pydantic v2 model.

One module, one decode path (`decode_event`). Events are JSON on the wire, times are
UTC, and every event carries a deterministic `id` derived from what identifies it, so a
replayed or re-sent event is recognisably the same event.

`Event` is the union of the telemetry events, those of the telemetry topics that the sink
stores and diagnosis reads. The one other typed event, the actions topic's `ActionEvent`, is
declared in `ingest/action_events.py` on the same `EventBase` and decoded by
`decode_action_event`; it is left out of `Event` on purpose, so a telemetry consumer refuses
(dead-letters) an action record on a telemetry topic rather than storing or diagnosing it,
and records from before it was typed (no `kind`) still decode. It is not re-exported here:
its module imports this one.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, NamedTuple, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

SCHEMA_VERSION = 1
"""Highest schema version this build reads; additive fields do not bump it."""

DEFAULT_CLUSTER = "default"
"""The cluster of an event that names none (events from before the field existed)."""
CLUSTER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
"""A cluster name: letters, digits, '.', '_', '-'; at most 63 characters."""

U64 = 2**64 - 1
U32 = 2**32 - 1
Count = Annotated[int, Field(ge=0, le=U64)]
Rank = Annotated[int, Field(ge=0, le=U32)]


class SchemaError(ValueError):
    """Bytes that are not a valid TrainGuard event (the reason says why)."""


class _Model(BaseModel):
    # NaN/Infinity travel as "NaN"/"Infinity" strings: a NaN loss is a signal, not a null.
    model_config = ConfigDict(
        frozen=True, populate_by_name=True, extra="ignore", ser_json_inf_nan="strings"
    )


def _utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # year 1 east of UTC, year 9999 west of it
        raise ValueError(f"time {value.isoformat()} has no UTC equivalent") from exc


class EventBase(_Model):
    """Fields every event carries."""

    kind: str = Field(description="Event kind: the discriminator.")
    schema_version: int = Field(SCHEMA_VERSION, ge=1, description="Wire schema version.")
    id: str = Field("", description="Deterministic event id (hex); filled in when absent.")
    ts: AwareDatetime = Field(description="Event time, UTC.")
    cluster: str = Field(
        DEFAULT_CLUSTER,
        pattern=CLUSTER_PATTERN,
        description="Cluster the event comes from; node and job names are unique only within "
        "it. Absent: the receiving process's TG_CLUSTER (by default 'default').",
    )

    @field_validator("ts")
    @classmethod
    def _ts_utc(cls, value: datetime) -> datetime:
        return _utc(value)

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value > SCHEMA_VERSION:
            raise ValueError(f"schema_version {value} is newer than supported {SCHEMA_VERSION}")
        return value

    @model_validator(mode="after")
    def _fill_id(self) -> EventBase:
        if not self.id:
            object.__setattr__(self, "id", self.derived_id())
        return self

    def derived_id(self) -> str:
        """Return the id this event's identity gives (the cluster is part of it, but for the
        default cluster, whose ids are those of events from before clusters existed)."""
        if self.cluster == DEFAULT_CLUSTER:
            return event_id(self.kind, *self.identity())
        return event_id(self.kind, self.cluster, *self.identity())

    def in_cluster(self, cluster: str) -> Self:
        """Return this event placed in `cluster` when it names none; else the event itself.

        An id derived from the identity is derived again, so the same telemetry from two
        clusters never shares an id; an id set by the sender is kept.
        """
        if "cluster" in self.model_fields_set or cluster == self.cluster:
            return self
        update: dict[str, object] = {"cluster": cluster}
        if self.id == self.derived_id():
            update["id"] = event_id(self.kind, cluster, *self.identity())
        placed = self.model_copy(update=update)
        placed.model_fields_set.add("cluster")
        return placed

    @abstractmethod
    def identity(self) -> tuple[object, ...]:
        """Return the values that make this event unique (hashed into its id)."""

    @property
    @abstractmethod
    def key(self) -> str:
        """Return the partitioning key: the node for node telemetry, the job for job telemetry."""


def event_id(kind: str, *parts: object) -> str:
    """Return the deterministic id of an event from its kind and identifying values."""
    text = "\x1f".join(
        [kind, *(p.isoformat() if isinstance(p, datetime) else str(p) for p in parts)]
    )
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


# --------------------------------------------------------------------------- GPU metrics


def _dcgm(alias: str, description: str) -> Any:
    return Field(None, alias=alias, description=description)


class GpuSample(_Model):
    """One GPU in one scrape. Metric names are DCGM field names; None = not readable."""

    gpu: int = Field(ge=0, le=65535, description="GPU index on the node (NVML index).")
    uuid: str | None = Field(None, description="GPU UUID (GPU-xxxxxxxx-...).")
    pci_bus_id: str | None = Field(None, description="PCI bus id, e.g. 00000000:61:00.0.")
    nvml_error: str | None = Field(
        None, description="NVML error seen while reading this GPU, e.g. NVML_ERROR_GPU_IS_LOST."
    )
    gpu_util: float | None = _dcgm("DCGM_FI_DEV_GPU_UTIL", "GPU utilization, %.")
    mem_copy_util: float | None = _dcgm("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization, %.")
    sm_clock: float | None = _dcgm("DCGM_FI_DEV_SM_CLOCK", "SM clock, MHz.")
    mem_clock: float | None = _dcgm("DCGM_FI_DEV_MEM_CLOCK", "Memory clock, MHz.")
    fb_used: float | None = _dcgm("DCGM_FI_DEV_FB_USED", "Framebuffer used, MiB.")
    fb_free: float | None = _dcgm("DCGM_FI_DEV_FB_FREE", "Framebuffer free, MiB.")
    gpu_temp: float | None = _dcgm("DCGM_FI_DEV_GPU_TEMP", "GPU temperature, C.")
    memory_temp: float | None = _dcgm("DCGM_FI_DEV_MEMORY_TEMP", "HBM temperature, C.")
    power_usage: float | None = _dcgm("DCGM_FI_DEV_POWER_USAGE", "Power draw, W.")
    power_limit: float | None = _dcgm("DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power limit, W.")
    total_energy: Count | None = _dcgm(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Energy since driver load, mJ."
    )
    fan_speed: float | None = _dcgm("DCGM_FI_DEV_FAN_SPEED", "Fan speed, %.")
    throttle_reasons: Count | None = _dcgm(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Clock throttle reasons bitmask (NVML)."
    )
    ecc_sbe_vol: Count | None = _dcgm("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Single-bit ECC, volatile.")
    ecc_dbe_vol: Count | None = _dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Double-bit ECC, volatile.")
    ecc_sbe_agg: Count | None = _dcgm("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "Single-bit ECC, lifetime.")
    ecc_dbe_agg: Count | None = _dcgm("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "Double-bit ECC, lifetime.")
    retired_sbe: Count | None = _dcgm("DCGM_FI_DEV_RETIRED_SBE", "Pages retired for SBE.")
    retired_dbe: Count | None = _dcgm("DCGM_FI_DEV_RETIRED_DBE", "Pages retired for DBE.")
    retired_pending: Count | None = _dcgm("DCGM_FI_DEV_RETIRED_PENDING", "Page retire pending.")
    remapped_correctable: Count | None = _dcgm(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Rows remapped for correctable errors."
    )
    remapped_uncorrectable: Count | None = _dcgm(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Rows remapped for uncorrectable errors."
    )
    remap_pending: Count | None = _dcgm("DCGM_FI_DEV_ROW_REMAP_PENDING", "Row remap pending (0/1).")
    remap_failure: Count | None = _dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Row remap failed (0/1).")
    pcie_replay: Count | None = _dcgm("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "PCIe replay count.")
    nvlink_crc_flit: Count | None = _dcgm(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NVLink flit CRC errors, all links."
    )
    nvlink_crc_data: Count | None = _dcgm(
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "NVLink data CRC errors, all links."
    )
    nvlink_replay: Count | None = _dcgm(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "NVLink replay errors, all links."
    )
    nvlink_recovery: Count | None = _dcgm(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "NVLink recovery errors, all links."
    )
    nvlink_bandwidth: Count | None = _dcgm(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NVLink bandwidth counter, all links."
    )
    pcie_tx_throughput: Count | None = _dcgm(
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "PCIe transmit throughput, KB/s (NVML 20 ms sample)."
    )
    pcie_rx_throughput: Count | None = _dcgm(
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "PCIe receive throughput, KB/s (NVML 20 ms sample)."
    )
    xid: Count | None = _dcgm("DCGM_FI_DEV_XID_ERRORS", "Last Xid seen by the driver.")


GPU_METRIC_FIELDS: tuple[str, ...] = tuple(
    name for name, f in GpuSample.model_fields.items() if f.alias and f.alias.startswith("DCGM_")
)
"""Python names of the DCGM metric fields of `GpuSample`, in declaration order."""


class GpuMetrics(EventBase):
    """One node scrape: every GPU of the node at one timestamp."""

    kind: Literal["gpu_metrics"] = "gpu_metrics"
    node: str = Field(min_length=1, description="Node (host) name.")
    gpus: list[GpuSample] = Field(description="One sample per GPU.")

    def identity(self) -> tuple[object, ...]:
        return (self.node, self.ts)

    @property
    def key(self) -> str:
        return self.node


# --------------------------------------------------------------------------- host metrics


class NicSample(_Model):
    """One NIC port (InfiniBand/RoCE HCA port or Ethernet interface)."""

    nic: str = Field(min_length=1, description="Device name, e.g. mlx5_0 or eth0.")
    port: int = Field(1, ge=0, le=65535, description="Port number on the device.")
    state: str = Field(description="Logical port state: ACTIVE, DOWN, INIT, ARMED, UP.")
    phys_state: str | None = Field(None, description="Physical state: LinkUp, Polling, Disabled.")
    rate_gbps: float | None = Field(None, ge=0, description="Link rate, Gb/s.")
    rx_bytes: Count | None = Field(None, description="Bytes received (counter).")
    tx_bytes: Count | None = Field(None, description="Bytes sent (counter).")
    symbol_errors: Count | None = Field(None, description="symbol_error counter.")
    link_error_recovery: Count | None = Field(None, description="link_error_recovery counter.")
    link_downed: Count | None = Field(None, description="link_downed counter.")
    rcv_errors: Count | None = Field(None, description="port_rcv_errors counter.")
    xmit_discards: Count | None = Field(None, description="port_xmit_discards counter.")

    def seen(self) -> PortSeen:
        """Return what diagnosis keeps of this port between scrapes."""
        return PortSeen(self.state.upper(), self.link_downed)


class PortSeen(NamedTuple):
    """A NIC port as last scraped: its state (upper case) and its link_downed counter.

    The counter shows a link that went down and came back between two scrapes, which the
    state alone never does when the outage is shorter than the scrape interval.
    """

    state: str
    link_downed: int | None = None


class DiskSample(_Model):
    """One mounted filesystem."""

    mount: str = Field(min_length=1, description="Mount point.")
    used_bytes: Count = Field(description="Bytes used.")
    total_bytes: Count = Field(description="Filesystem size in bytes.")


class HostMetrics(EventBase):
    """One host scrape: CPU, memory, disks and NIC ports."""

    kind: Literal["host_metrics"] = "host_metrics"
    node: str = Field(min_length=1, description="Node (host) name.")
    cpu_util: float | None = Field(None, ge=0, le=100, description="CPU busy, %.")
    load1: float | None = Field(None, ge=0, description="1-minute load average.")
    mem_used_bytes: Count | None = Field(None, description="Memory in use, bytes.")
    mem_total_bytes: Count | None = Field(None, description="Physical memory, bytes.")
    swap_used_bytes: Count | None = Field(None, description="Swap in use, bytes.")
    disks: list[DiskSample] = Field(default_factory=list, description="Mounted filesystems.")
    nics: list[NicSample] = Field(default_factory=list, description="NIC ports.")

    def identity(self) -> tuple[object, ...]:
        return (self.node, self.ts)

    @property
    def key(self) -> str:
        return self.node


# --------------------------------------------------------------------------- logs


class LogSource(StrEnum):
    """Where a log line was read."""

    KERNEL = "kernel"
    TRAIN_STDOUT = "train_stdout"
    TRAIN_STDERR = "train_stderr"
    NCCL = "nccl"
    SYSTEM = "system"


class LogLine(EventBase):
    """One raw log line as read on the node."""

    kind: Literal["log"] = "log"
    node: str = Field(min_length=1, description="Node that produced the line.")
    source: LogSource = Field(description="Log source.")
    line: str = Field(description="The line, without its trailing newline.")
    path: str | None = Field(None, description="File or stream the line came from.")
    seq: int = Field(0, ge=0, le=U64, description="Position in the source (byte offset or line).")
    job_id: str | None = Field(None, description="Training job, where known.")
    rank: Rank | None = Field(None, description="Global rank, where known.")

    def identity(self) -> tuple[object, ...]:
        return (self.node, self.source.value, self.path or "", self.seq, self.ts, self.line)

    @property
    def key(self) -> str:
        return self.node


# --------------------------------------------------------------------------- training steps


class TrainStep(EventBase):
    """One training step, for the whole job (rank None) or one rank."""

    kind: Literal["train_step"] = "train_step"
    job_id: str = Field(min_length=1, description="Training job id.")
    step: int = Field(ge=0, le=U64, description="Iteration number.")
    rank: int | None = Field(None, ge=0, le=2**31 - 1, description="Rank, or None for the job.")
    node: str | None = Field(None, description="Node of the rank, where known.")
    loss: float | None = Field(None, description="Training loss (NaN allowed).")
    grad_norm: float | None = Field(None, description="Gradient norm (NaN allowed).")
    tokens_per_s: float | None = Field(None, ge=0, description="Throughput, tokens/s.")
    mfu: float | None = Field(None, ge=0, description="Model FLOPs utilization, 0..1.")
    step_time_s: float | None = Field(None, ge=0, description="Wall time of the step, s.")
    lr: float | None = Field(None, description="Learning rate.")
    loss_scale: float | None = Field(None, description="fp16 loss scale.")
    skipped: bool = Field(False, description="Step skipped (e.g. fp16 overflow).")

    def identity(self) -> tuple[object, ...]:
        return (self.job_id, self.step, -1 if self.rank is None else self.rank, self.ts)

    @property
    def key(self) -> str:
        return self.job_id


# --------------------------------------------------------------------------- collectives


class CollectiveState(StrEnum):
    """Progress of one collective on one rank (Flight Recorder's states)."""

    SCHEDULED = "scheduled"
    STARTED = "started"
    COMPLETED = "completed"


class CollectiveProgress(EventBase):
    """One rank's view of one collective on one communicator (Flight Recorder / NCCL RAS)."""

    kind: Literal["collective"] = "collective"
    job_id: str = Field(min_length=1, description="Training job id.")
    rank: Rank = Field(description="Global rank reporting.")
    node: str | None = Field(None, description="Node of the rank, where known.")
    comm: str = Field(min_length=1, description="Communicator: process-group id/name or NCCL hash.")
    op: str = Field(min_length=1, description="Operation, e.g. all_reduce, all_gather, send.")
    seq: Count = Field(description="Collective sequence number on the communicator.")
    p2p_seq: Count | None = Field(None, description="Point-to-point sequence number.")
    state: CollectiveState = Field(description="scheduled, started or completed.")
    bytes: Count | None = Field(None, description="Message size in bytes.")
    dtype: str | None = Field(None, description="Element type, e.g. Float, BFloat16.")
    peer: Rank | None = Field(None, description="Peer rank for send/recv.")
    time_created: AwareDatetime | None = Field(None, description="When the op was enqueued.")
    time_started: AwareDatetime | None = Field(None, description="When the kernel started.")
    time_completed: AwareDatetime | None = Field(None, description="When the kernel completed.")
    duration_ms: float | None = Field(None, ge=0, description="Kernel duration, ms.")
    timeout_ms: float | None = Field(None, ge=0, description="Watchdog timeout of the op, ms.")
    reporter: str = Field("trainguard", description="flight_recorder, nccl_ras, trainguard, sim.")

    def identity(self) -> tuple[object, ...]:
        created = self.time_created or self.ts
        return (
            self.job_id,
            self.rank,
            self.comm,
            self.seq,
            self.p2p_seq,
            self.state.value,
            created,
        )

    @property
    def key(self) -> str:
        return self.job_id


# --------------------------------------------------------------------------- topology


class ParallelLayout(_Model):
    """Sizes of each parallel dimension; world = tp * pp * dp * cp."""

    tp: int = Field(1, ge=1, le=U32, description="Tensor parallel size.")
    pp: int = Field(1, ge=1, le=U32, description="Pipeline parallel size.")
    dp: int = Field(1, ge=1, le=U32, description="Data parallel size.")
    ep: int = Field(1, ge=1, le=U32, description="Expert parallel size (within data parallel).")
    cp: int = Field(1, ge=1, le=U32, description="Context parallel size.")


class RankPlacement(_Model):
    """Where one rank runs."""

    rank: Rank = Field(description="Global rank.")
    node: str = Field(min_length=1, description="Node name.")
    gpu: int = Field(ge=0, le=65535, description="GPU index on the node.")
    gpu_uuid: str | None = Field(None, description="GPU UUID, where known.")


class CommKind(StrEnum):
    """What a communicator is for."""

    TP = "tp"
    PP = "pp"
    DP = "dp"
    EP = "ep"
    CP = "cp"
    WORLD = "world"
    OTHER = "other"


class Communicator(_Model):
    """One communicator (process group) and its member ranks."""

    comm: str = Field(min_length=1, description="Id, matching CollectiveProgress.comm.")
    kind: CommKind = Field(description="Parallel dimension it serves.")
    ranks: list[int] = Field(min_length=1, description="Member global ranks, in group order.")


class JobTopology(EventBase):
    """A job's ranks, their GPUs, its parallel layout and every communicator."""

    kind: Literal["job_topology"] = "job_topology"
    job_id: str = Field(min_length=1, description="Training job id.")
    world_size: int = Field(ge=1, le=U32, description="Number of ranks.")
    layout: ParallelLayout = Field(default_factory=ParallelLayout, description="Parallel sizes.")
    ranks: list[RankPlacement] = Field(description="Placement of every rank.")
    communicators: list[Communicator] = Field(default_factory=list, description="All groups.")
    scheduler: str | None = Field(None, description="slurm, kubernetes, sim, ...")
    scheduler_job_id: str | None = Field(None, description="Job id in the scheduler.")
    layout_source: str | None = Field(
        None,
        description="Where the parallel groups came from (discovery: the launch command's "
        "arguments), or why only the world group is known.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> JobTopology:
        known = {r.rank for r in self.ranks}
        if len(known) != len(self.ranks):
            raise ValueError("duplicate rank in ranks")
        for comm in self.communicators:
            if min(comm.ranks) < 0 or max(comm.ranks) >= self.world_size:
                unknown = sorted(r for r in comm.ranks if not 0 <= r < self.world_size)
                raise ValueError(f"communicator {comm.comm} has ranks outside the world: {unknown}")
        return self

    def identity(self) -> tuple[object, ...]:
        return (self.job_id, self.ts)

    @property
    def key(self) -> str:
        return self.job_id


Event = Annotated[
    GpuMetrics | HostMetrics | LogLine | TrainStep | CollectiveProgress | JobTopology,
    Field(discriminator="kind"),
]
EVENT_TYPES: tuple[type[EventBase], ...] = (
    GpuMetrics,
    HostMetrics,
    LogLine,
    TrainStep,
    CollectiveProgress,
    JobTopology,
)
EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)


def encode_event(event: EventBase) -> bytes:
    """Return the JSON bytes of an event (DCGM names as keys; nulls dropped; NaN kept).

    An event of the default cluster is encoded without `cluster` and decodes as it was
    (a receiver with its own TG_CLUSTER places it there).

    pydantic's serializer is used rather than orjson: orjson writes NaN as null, which would
    turn a NaN loss into "no loss reported" (and it is slower on these models).
    """
    # the default cluster is left out: the bytes are those of events from before clusters
    exclude = {"cluster"} if event.cluster == DEFAULT_CLUSTER else None
    return event.model_dump_json(by_alias=True, exclude_none=True, exclude=exclude).encode()


def validation_reason(exc: ValidationError) -> str:
    """Return the first error of a validation as `where: what` (one line for people)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
    return f"{where}: {first.get('msg')}"


def decode_event(raw: bytes | str) -> Event:
    """Decode one event from JSON bytes, or raise SchemaError with the reason."""
    try:
        return EventAdapter.validate_json(raw)
    except ValidationError as exc:
        raise SchemaError(f"{validation_reason(exc)} ({exc.error_count()} error(s))") from exc
