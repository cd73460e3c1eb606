"""Scenario files: the cluster, its jobs, the faults to inject, validated with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sim.wear import WearSpec


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the offending key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterSpec(_Strict):
    """The hardware: 8-GPU nodes with one NIC per GPU (rail-optimized), racks of nodes."""

    nodes: int = Field(ge=1, le=100_000, description="Number of nodes.")
    gpus_per_node: int = Field(8, ge=1, le=16, description="GPUs per node.")
    nics_per_node: int = Field(8, ge=1, le=16, description="NICs per node, one rail each.")
    nodes_per_rack: int = Field(16, ge=1, le=1024, description="Nodes under one leaf group.")
    gpu_speed_jitter: float = Field(0.02, ge=0, le=0.2, description="Healthy speed spread (sd).")


class JobSpec(_Strict):
    """One synchronous training job with a Megatron-style TP x PP x DP (x EP) layout."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$", description="Job id.")
    tp: int = Field(1, ge=1, le=64)
    pp: int = Field(1, ge=1, le=512)
    dp: int = Field(1, ge=1, le=65_536)
    ep: int = Field(1, ge=1, le=1024, description="Expert parallel size; divides dp.")
    step_time_s: float = Field(gt=0, le=3600, description="Healthy step time.")
    start_s: float = Field(0, ge=0, description="When the job starts.")
    first_node: int | None = Field(None, ge=0, description="First node; default: packed.")
    tokens_per_step: int = Field(4_194_304, ge=1, description="Global batch in tokens.")
    mfu: float = Field(0.42, gt=0, le=1, description="MFU at the healthy step time.")
    per_rank_grad_norm: bool = Field(False, description="Log each rank's grad norm.")
    warmup_steps: int = Field(3, ge=0, description="Slow first steps (benign).")
    step_jitter: float = Field(
        0.0, ge=0, le=0.2, description="Step-to-step noise of the whole step (lognormal sd)."
    )
    save_interval: int = Field(
        0, ge=0, description="Steps between checkpoint saves (Megatron's --save-interval; 0: none)."
    )

    @property
    def world(self) -> int:
        """Return the number of ranks."""
        return self.tp * self.pp * self.dp

    @model_validator(mode="after")
    def _ep_divides_dp(self) -> JobSpec:
        if self.dp % self.ep:
            raise ValueError(f"ep={self.ep} must divide dp={self.dp}")
        return self


class _FaultBase(_Strict):
    at_s: float = Field(ge=0, description="Onset, seconds from the scenario start.")
    duration_s: float | None = Field(
        None, gt=0, description="How long it lasts; None: until the end."
    )


class GpuFault(_FaultBase):
    """A fault of one GPU."""

    kind: Literal["xid79", "ecc_dbe", "gsp_timeout", "nvlink", "nan", "precursor"]
    node: int = Field(ge=0)
    gpu: int = Field(ge=0)
    lead_s: float = Field(3600, gt=0, description="precursor: how long before at_s it starts.")
    then: Literal["xid79", "ecc_dbe", "none"] = Field(
        "ecc_dbe", description="precursor: the failure it leads to at at_s."
    )
    style: Literal["memory", "thermal", "pcie"] = Field(
        "memory", description="precursor: which counters worsen (ECC/remaps, heat, PCIe)."
    )
    intensity: float = Field(1.0, gt=0, le=10, description="precursor: strength multiplier.")


class StragglerFault(_FaultBase):
    """One GPU slows down by a factor."""

    kind: Literal["straggler"]
    node: int = Field(ge=0)
    gpu: int = Field(ge=0)
    slowdown: float = Field(1.3, gt=1, le=20, description="Compute time multiplier.")
    cause: Literal["thermal", "clock", "pcie"] = Field(
        "thermal", description="thermal/clock throttling shows in metrics; pcie does not."
    )
    relative_to: Literal["gpu", "job"] = Field(
        "gpu",
        description="gpu: slowdown multiplies the GPU's own compute time; job: the GPU ends up "
        "slowdown x the compute time of its job's slowest healthy GPU (the job's pace).",
    )


class NicFault(_FaultBase):
    """A NIC port goes down (nic_down), flaps (nic_flap) or turns slow (nic_slow)."""

    kind: Literal["nic_down", "nic_flap", "nic_slow"]
    node: int = Field(ge=0)
    nic: int = Field(ge=0)
    period_s: float = Field(30, gt=0, description="nic_flap: seconds between flaps.")
    slowdown: float = Field(
        2.0,
        gt=1,
        le=50,
        description="nic_slow: multiplier of the transfer time of traffic crossing the NIC "
        "(a link trained down, retransmissions); nothing in its counters shows it.",
    )


class SwitchFault(_FaultBase):
    """A leaf switch fails: the NIC on its rail of every node in the rack loses its link."""

    kind: Literal["switch_down"]
    rack: int = Field(ge=0)
    rail: int | None = Field(None, ge=0, description="Rail (NIC index); None: every rail.")


class RankFault(_FaultBase):
    """One rank of a job stops making progress silently."""

    kind: Literal["hang"]
    job: str
    rank: int = Field(ge=0)


class JobFault(_FaultBase):
    """An application fault of a whole job (never hardware)."""

    kind: Literal["user_error", "app_xid"]
    job: str


class NodeFault(_FaultBase):
    """A host fault; host_slow: every GPU of the host computes slower (CPU, PCIe, memory)."""

    kind: Literal["host_oom", "disk_full", "host_slow"]
    node: int = Field(ge=0)
    slowdown: float = Field(
        1.2, gt=1, le=20, description="host_slow: the compute slowdown of each GPU of the host."
    )
    relative_to: Literal["gpu", "job"] = Field(
        "gpu", description="host_slow: as StragglerFault.relative_to, for each GPU of the host."
    )


Fault = Annotated[
    GpuFault | StragglerFault | NicFault | SwitchFault | RankFault | JobFault | NodeFault,
    Field(discriminator="kind"),
]
FAULT_KINDS: tuple[str, ...] = (
    "xid79",
    "ecc_dbe",
    "gsp_timeout",
    "nvlink",
    "nan",
    "precursor",
    "straggler",
    "nic_down",
    "nic_flap",
    "switch_down",
    "hang",
    "user_error",
    "app_xid",
    "host_oom",
    "disk_full",
    "nic_slow",
    "host_slow",
)


class RandomFaults(_Strict):
    """Background faults drawn at a rate, with a kind mix."""

    rate_per_gpu_day: float = Field(0.0, ge=0, le=10)
    mix: Literal["llama3", "uniform"] = "llama3"
    precursor_share: float = Field(
        0.0, ge=0, le=1, description="Share of GPU hardware failures that show a precursor."
    )
    precursor_lead_s: tuple[float, float] = Field(
        (3_600.0, 172_800.0), description="Range of precursor lead times, s."
    )


class Scenario(_Strict):
    """A whole simulation."""

    seed: int = 7
    cluster: ClusterSpec
    jobs: list[JobSpec] = Field(default_factory=list)
    duration_s: float = Field(gt=0, le=30 * 86_400)
    metrics_interval_s: float = Field(1.0, gt=0, le=3600)
    host_interval_s: float = Field(10.0, gt=0, le=3600)
    watchdog_timeout_s: float = Field(600.0, gt=0, description="PyTorch NCCL watchdog timeout.")
    collective_every_steps: int = Field(
        1,
        ge=1,
        description="Collective records are emitted for `collective_burst_steps` consecutive "
        "steps out of every this many (an agent sampling the flight recorder); 1: every step.",
    )
    collective_burst_steps: int = Field(
        4, ge=1, description="Consecutive steps sampled per `collective_every_steps`."
    )
    faults: list[Fault] = Field(default_factory=list)
    random_faults: RandomFaults = Field(default_factory=RandomFaults)
    wear: WearSpec = Field(default_factory=WearSpec, description="Benign wear of healthy GPUs.")

    @model_validator(mode="after")
    def _placements(self) -> Scenario:
        _check_placements(self)
        return self

    def node_name(self, index: int) -> str:
        """Return a node's host name (`node-0017`)."""
        return f"node-{index:04d}"


def _check_placements(s: Scenario) -> None:
    c = s.cluster
    ids = [j.id for j in s.jobs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"jobs: duplicate job id in {ids}")
    used: set[int] = set()
    next_free = 0
    for i, job in enumerate(s.jobs):
        need = -(-job.world // c.gpus_per_node)
        first = job.first_node if job.first_node is not None else next_free
        nodes = set(range(first, first + need))
        if first + need > c.nodes:
            raise ValueError(
                f"jobs.{i} ({job.id}): needs {need} nodes from node {first}, cluster has {c.nodes}"
            )
        if nodes & used:
            raise ValueError(f"jobs.{i} ({job.id}): nodes overlap another job")
        used |= nodes
        next_free = max(next_free, first + need)
    worlds = {j.id: j.world for j in s.jobs}
    racks = -(-c.nodes // c.nodes_per_rack)
    for i, f in enumerate(s.faults):
        where = f"faults.{i} ({f.kind})"
        if f.at_s > s.duration_s:
            raise ValueError(f"{where}.at_s: {f.at_s} is after duration_s {s.duration_s}")
        if hasattr(f, "node") and f.node >= c.nodes:
            raise ValueError(f"{where}.node: {f.node} out of range (cluster has {c.nodes} nodes)")
        if hasattr(f, "gpu") and f.gpu >= c.gpus_per_node:
            raise ValueError(f"{where}.gpu: {f.gpu} out of range ({c.gpus_per_node} per node)")
        if isinstance(f, NicFault) and f.nic >= c.nics_per_node:
            raise ValueError(f"{where}.nic: {f.nic} out of range ({c.nics_per_node} per node)")
        if isinstance(f, SwitchFault):
            if f.rack >= racks:
                raise ValueError(f"{where}.rack: {f.rack} out of range ({racks} racks)")
            if f.rail is not None and f.rail >= c.nics_per_node:
                raise ValueError(f"{where}.rail: {f.rail} out of range ({c.nics_per_node} rails)")
        if isinstance(f, RankFault | JobFault):
            if f.job not in worlds:
                raise ValueError(f"{where}.job: unknown job {f.job!r} (jobs: {sorted(worlds)})")
            if isinstance(f, RankFault) and f.rank >= worlds[f.job]:
                raise ValueError(f"{where}.rank: {f.rank} out of range (world {worlds[f.job]})")


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file, or raise ScenarioError naming the key."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from exc
    return parse_scenario(data, str(path))


def parse_scenario(data: object, where: str = "scenario") -> Scenario:
    """Validate scenario data (a mapping), or raise ScenarioError naming the key."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected a mapping at the top level")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown key"
            lines.append(f"{key}: {message}" if key else message)
        raise ScenarioError(f"{where}: " + "; ".join(lines)) from exc
