"""A store holding a 16,384-GPU fleet (2,048 nodes x 8), for the console's bench and e2e test.

The rows are what the sink writes (analytics/columns.py builds them from wire events): a few
GPU scrapes per node, job topologies placing most nodes in jobs (the rest idle), some GPUs
lost (NVML errors) and a few open incidents naming GPUs. Everything is derived from the
arguments, so a test can compute the counts the console must show.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analytics.columns import ColumnBatch
from analytics.store import Store
from analytics.tables import ALL_TABLES
from diagnosis.incident_store import save_incidents
from diagnosis.incidents import Incident
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity, Suspect
from ingest.schema import (
    DEFAULT_CLUSTER,
    CommKind,
    Communicator,
    EventBase,
    GpuMetrics,
    GpuSample,
    JobTopology,
    ParallelLayout,
    RankPlacement,
)

GPU_LOST = "NVML_ERROR_GPU_IS_LOST"


@dataclass(frozen=True)
class Fleet:
    """The shape of the synthetic fleet."""

    nodes: int = 2048
    gpus_per_node: int = 8
    jobs: int = 15
    nodes_per_job: int = 128  # jobs * nodes_per_job nodes run jobs; the others are idle
    scrapes: int = 3
    lost_every: int = 97  # every n-th node has its GPU 0 lost
    incidents: int = 12  # open incidents, each naming GPU 1 of a node in job-0000

    @property
    def gpus(self) -> int:
        """Return the number of GPUs."""
        return self.nodes * self.gpus_per_node

    def node(self, index: int) -> str:
        """Return the name of node `index`."""
        return f"node-{index:05d}"

    def job_of(self, index: int) -> str | None:
        """Return the job placed on node `index` (None: idle)."""
        job = index // self.nodes_per_job
        return f"job-{job:04d}" if job < self.jobs else None

    def lost(self) -> list[int]:
        """Return the nodes whose GPU 0 is lost."""
        return list(range(0, self.nodes, self.lost_every))

    def suspect_nodes(self) -> list[int]:
        """Return the nodes whose GPU 1 an open incident names (all in job-0000)."""
        return list(range(1, 1 + self.incidents))


def fill(
    store: Store, fleet: Fleet, now: datetime | None = None, cluster: str = DEFAULT_CLUSTER
) -> None:
    """Write the fleet's telemetry, topologies and incidents, in `cluster`, to a store."""
    end = (now or datetime.now(UTC)).replace(microsecond=0)
    batch = ColumnBatch()
    offset = 0
    lost = set(fleet.lost())
    for scrape in range(fleet.scrapes):
        ts = end - timedelta(seconds=10 * (fleet.scrapes - 1 - scrape))
        for index in range(fleet.nodes):
            samples = [
                GpuSample(
                    gpu=gpu,
                    nvml_error=GPU_LOST if gpu == 0 and index in lost else None,
                    DCGM_FI_DEV_GPU_TEMP=40.0 + (index + gpu) % 40,
                    DCGM_FI_DEV_POWER_USAGE=300.0 + gpu,
                    DCGM_FI_DEV_GPU_UTIL=95.0,
                )
                for gpu in range(fleet.gpus_per_node)
            ]
            offset += 1
            event = GpuMetrics(node=fleet.node(index), ts=ts, gpus=samples)
            _add(batch, event.in_cluster(cluster), offset)
    for job in range(fleet.jobs):
        offset += 1
        _add(batch, _topology(fleet, job, end - timedelta(hours=1)).in_cluster(cluster), offset)
    for table in ALL_TABLES:
        columns = batch.columns(table)
        if columns:
            store.insert(table.name, columns, {c.name: c.type for c in table.columns})
    save_incidents(store, _incidents(fleet, end, cluster))


def _add(batch: ColumnBatch, event: EventBase, offset: int) -> None:
    batch.add_event(event, ("bench-console", 0, offset))


def _topology(fleet: Fleet, job: int, ts: datetime) -> JobTopology:
    first = job * fleet.nodes_per_job
    ranks = [
        RankPlacement(rank=n * fleet.gpus_per_node + gpu, node=fleet.node(first + n), gpu=gpu)
        for n in range(fleet.nodes_per_job)
        for gpu in range(fleet.gpus_per_node)
    ]
    world = len(ranks)
    return JobTopology(
        job_id=f"job-{job:04d}",
        ts=ts,
        world_size=world,
        layout=ParallelLayout(tp=fleet.gpus_per_node, dp=world // fleet.gpus_per_node),
        ranks=ranks,
        communicators=[Communicator(comm="world", kind=CommKind.WORLD, ranks=list(range(world)))],
        scheduler="slurm",
        scheduler_job_id=str(9000 + job),
    )


def _incidents(fleet: Fleet, end: datetime, cluster: str) -> list[Incident]:
    prefix = "" if cluster == DEFAULT_CLUSTER else f"{cluster}-"
    return [
        Incident(
            id=f"inc-{prefix}fleet{index:06d}",
            cluster=cluster,
            category=Category.GPU_HARDWARE,
            blame=Blame.INFRASTRUCTURE,
            job=fleet.job_of(index),
            detected_at=end - timedelta(minutes=5),
            suspects=[
                Suspect(
                    component=ComponentKind.GPU,
                    score=0.9,
                    node=fleet.node(index),
                    gpu=1,
                    explanation="synthetic: row remap pending",
                )
            ],
            summary=f"gpu.hardware on {fleet.node(index)} GPU 1 (synthetic)",
            action=Action.ISOLATE_NODE,
            severity=Severity.ERROR,
        )
        for index in fleet.suspect_nodes()
    ]
