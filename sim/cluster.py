"""The twin's hardware and job layouts: nodes, GPUs, rail NICs, racks, leaf switches, and
Megatron-style rank placement with every communicator the layout creates."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from ingest.schema import CommKind, Communicator, JobTopology, ParallelLayout, RankPlacement
from sim.scenario import JobSpec, Scenario


@dataclass(frozen=True)
class Hardware:
    """Static facts of the cluster."""

    nodes: int
    gpus_per_node: int
    nics_per_node: int
    nodes_per_rack: int

    @classmethod
    def of(cls, scenario: Scenario) -> Hardware:
        """Return the hardware of a scenario."""
        c = scenario.cluster
        return cls(c.nodes, c.gpus_per_node, c.nics_per_node, c.nodes_per_rack)

    @property
    def gpus(self) -> int:
        """Return the number of GPUs."""
        return self.nodes * self.gpus_per_node

    def rack_of(self, node: int) -> int:
        """Return the rack of a node."""
        return node // self.nodes_per_rack

    def nodes_of_rack(self, rack: int) -> range:
        """Return the nodes under a rack's leaf switches."""
        return range(rack * self.nodes_per_rack, min(self.nodes, (rack + 1) * self.nodes_per_rack))

    def rail_of_gpu(self, gpu: int) -> int:
        """Return the NIC (rail) a GPU's inter-node traffic uses (GPU i -> NIC i)."""
        return gpu % self.nics_per_node

    @staticmethod
    def leaf_name(rack: int, rail: int) -> str:
        """Return the name of the leaf switch of a rack's rail."""
        return f"leaf-r{rack:03d}-rail{rail}"

    def inventory(self, node_names: list[str]) -> dict[str, object]:
        """Return the cabling inventory an operator keeps (rack, NIC -> leaf): not ground truth."""
        nodes = {}
        for index, name in enumerate(node_names):
            rack = self.rack_of(index)
            nodes[name] = {
                "rack": f"rack-{rack:03d}",
                "leaves": [self.leaf_name(rack, r) for r in range(self.nics_per_node)],
                "nics": [f"mlx5_{r}" for r in range(self.nics_per_node)],
            }
        return {"nodes": nodes}


@dataclass(frozen=True)
class JobLayout:
    """Where every rank of one job runs, and its communicators.

    Ranks follow Megatron-LM's default order (tp innermost, then dp, then pp):
    rank = tp_i + tp * (dp_i + dp * pp_i). Ranks fill nodes in order, so TP groups stay
    inside a node whenever tp divides the node's GPU count.
    """

    job: JobSpec
    first_node: int
    rank_node: np.ndarray
    rank_gpu: np.ndarray
    comm_ids: list[str]
    comm_kinds: list[CommKind]
    comm_ranks: list[np.ndarray]

    @property
    def world(self) -> int:
        """Return the number of ranks."""
        return int(self.rank_node.size)

    @property
    def nodes(self) -> np.ndarray:
        """Return the node indexes the job runs on."""
        return np.unique(self.rank_node)

    def grid(self) -> np.ndarray:
        """Return rank ids shaped (pp, dp, tp)."""
        j = self.job
        return np.arange(self.world).reshape(j.pp, j.dp, j.tp)

    def communicators_of(self, rank: int) -> list[int]:
        """Return the indexes of the communicators a rank belongs to."""
        return [i for i, members in enumerate(self.comm_ranks) if rank in members]

    def topology_event(self, scenario: Scenario, ts: datetime) -> JobTopology:
        """Return the job_topology event a launcher would publish."""
        j = self.job
        ranks = [
            RankPlacement(
                rank=r, node=scenario.node_name(int(self.rank_node[r])), gpu=int(self.rank_gpu[r])
            )
            for r in range(self.world)
        ]
        comms = [
            Communicator(comm=c, kind=k, ranks=m.tolist())
            for c, k, m in zip(self.comm_ids, self.comm_kinds, self.comm_ranks, strict=True)
        ]
        return JobTopology(
            job_id=j.id,
            ts=ts,
            world_size=self.world,
            layout=ParallelLayout(tp=j.tp, pp=j.pp, dp=j.dp, ep=j.ep),
            ranks=ranks,
            communicators=comms,
            scheduler="slurm",
            scheduler_job_id=str(zlib.crc32(j.id.encode()) % 10**6),
        )


def layout_job(job: JobSpec, first_node: int, gpus_per_node: int) -> JobLayout:
    """Place a job's ranks from `first_node` on and build its communicators."""
    ranks = np.arange(job.world)
    rank_node = first_node + ranks // gpus_per_node
    rank_gpu = ranks % gpus_per_node
    grid = ranks.reshape(job.pp, job.dp, job.tp)
    ids: list[str] = []
    kinds: list[CommKind] = []
    members: list[np.ndarray] = []

    def add(kind: CommKind, name: str, group: np.ndarray) -> None:
        ids.append(name)
        kinds.append(kind)
        members.append(np.asarray(group, dtype=np.int64).ravel())

    for p in range(job.pp):
        for d in range(job.dp):
            if job.tp > 1:
                add(CommKind.TP, f"tp-p{p}-d{d}", grid[p, d, :])
        for t in range(job.tp):
            if job.dp > 1:
                add(CommKind.DP, f"dp-p{p}-t{t}", grid[p, :, t])
            if job.ep > 1:
                for e in range(job.dp // job.ep):
                    add(
                        CommKind.EP, f"ep-p{p}-t{t}-e{e}", grid[p, e * job.ep : (e + 1) * job.ep, t]
                    )
    for p in range(job.pp - 1):
        for d in range(job.dp):
            for t in range(job.tp):
                add(CommKind.PP, f"pp-p{p}-d{d}-t{t}", np.array([grid[p, d, t], grid[p + 1, d, t]]))
    return JobLayout(job, first_node, rank_node, rank_gpu, ids, kinds, members)


def layout_jobs(scenario: Scenario) -> list[JobLayout]:
    """Place every job of a scenario (packed in order unless a job names its first node)."""
    out = []
    next_free = 0
    gpn = scenario.cluster.gpus_per_node
    for job in scenario.jobs:
        first = job.first_node if job.first_node is not None else next_free
        layout = layout_job(job, first, gpn)
        next_free = max(next_free, int(layout.rank_node.max()) + 1)
        out.append(layout)
    return out
