"""One call inside a torch.distributed job: ``tg = trainguard.integrations.torch.enable(...)``.

``enable`` is collective (an ``all_gather_object`` over the default group): call it on every
rank after ``init_process_group`` and after the job's process groups exist (Megatron's
``initialize_model_parallel``, a DeviceMesh). Then call ``tg.step(step, loss=..., grad_norm=...)``
once per step and ``tg.close()`` at the end. On PyTorch before 2.15 set
``TORCH_FR_BUFFER_SIZE=2000`` so the Flight Recorder records (see ``ingest.torch_integration``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ingest.bus import Bus, Producer
from ingest.schema import CommKind
from ingest.torch_integration import FrSource, RankInfo, Reporter, build_topology, hostname

log = logging.getLogger(__name__)

_MEGATRON_GROUPS = {
    CommKind.TP: "get_tensor_model_parallel_group",
    CommKind.PP: "get_pipeline_model_parallel_group",
    CommKind.DP: "get_data_parallel_group",
    CommKind.CP: "get_context_parallel_group",
    CommKind.EP: "get_expert_model_parallel_group",
}
_MESH_DIMS = {
    "tp": CommKind.TP,
    "pp": CommKind.PP,
    "dp": CommKind.DP,
    "dp_shard": CommKind.DP,
    "dp_replicate": CommKind.DP,
    "cp": CommKind.CP,
    "ep": CommKind.EP,
}


class LaunchSettings(BaseSettings):
    """What torchrun and the scheduler tell every rank."""

    model_config = SettingsConfigDict(extra="ignore")
    local_rank: int = Field(0, ge=0, validation_alias="LOCAL_RANK")
    slurm_job_id: str | None = Field(None, validation_alias="SLURM_JOB_ID")


def _kinds_from_megatron() -> dict[Any, CommKind]:
    try:
        from megatron.core import parallel_state  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return {}
    if not parallel_state.model_parallel_is_initialized():
        return {}
    out: dict[Any, CommKind] = {}
    for kind, getter in _MEGATRON_GROUPS.items():
        try:
            out[getattr(parallel_state, getter)()] = kind
        except (AttributeError, AssertionError, RuntimeError):
            continue  # this Megatron has no such group, or it was not created
    return out


def _kinds_from_mesh(mesh: Any) -> dict[Any, CommKind]:
    out: dict[Any, CommKind] = {}
    for dim, name in enumerate(mesh.mesh_dim_names or ()):
        out[mesh.get_group(dim)] = _MESH_DIMS.get(name, CommKind.OTHER)
    return out


def _my_groups(kinds: Mapping[Any, CommKind]) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    by_name = {pg.group_name: kind for pg, kind in kinds.items()}
    world = dist.group.WORLD
    out = []
    for pg in list(dist.distributed_c10d._world.pg_map):
        name = pg.group_name
        kind = CommKind.WORLD if pg is world else by_name.get(name, CommKind.OTHER)
        out.append((name, kind.value, tuple(dist.get_process_group_ranks(pg))))
    return tuple(out)


def _placement(local_rank: int) -> tuple[int, str | None]:
    if not torch.cuda.is_available():
        return local_rank, None
    gpu = torch.cuda.current_device()
    uuid = getattr(torch.cuda.get_device_properties(gpu), "uuid", None)
    return gpu, f"GPU-{uuid}" if uuid is not None else None


def flight_recorder_source(backend: str) -> FrSource | None:
    """Return the dump function of this backend's Flight Recorder, if this PyTorch has one."""
    c10d: Any = torch._C._distributed_c10d
    if backend == "nccl" and hasattr(c10d, "_dump_nccl_trace"):
        return lambda: bytes(c10d._dump_nccl_trace(True, False, False))
    if hasattr(c10d, "_dump_fr_trace"):
        return lambda: bytes(c10d._dump_fr_trace(True, False, False, backend))
    return None


def enable(
    job_id: str,
    bus: Bus | None = None,
    *,
    producer: Producer | None = None,
    mesh: Any = None,
    groups: Mapping[Any, CommKind] | None = None,
    sample_interval_s: float = 5.0,
    scheduler: str | None = None,
) -> Reporter:
    """Report this job: gather and publish its topology (rank 0), then steps and collectives."""
    if producer is None:
        if bus is None:
            raise ValueError("enable() needs a bus or a producer")
        producer = bus.producer()
    launch = LaunchSettings()
    rank, world = dist.get_rank(), dist.get_world_size()
    kinds = {**_kinds_from_megatron(), **(_kinds_from_mesh(mesh) if mesh is not None else {})}
    kinds.update(groups or {})
    gpu, uuid = _placement(launch.local_rank)
    mine = RankInfo(rank, hostname(), gpu, uuid, _my_groups(kinds))
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, mine)
    reporter = Reporter(
        job_id,
        producer,
        rank,
        mine.node,
        fr_source=flight_recorder_source(str(dist.get_backend())),
        sample_interval_s=sample_interval_s,
    )
    if rank == 0:
        scheduler = scheduler or ("slurm" if launch.slurm_job_id else None)
        reporter.put(build_topology(job_id, world, gathered, scheduler, launch.slurm_job_id))
    return reporter
