"""The live scheduler the action engine calls: replacements, reclaiming, loans, a snapshot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from scheduler.model import Pool, Server, ServerState
from scheduler.placement import best_fit
from scheduler.reclaim import greedy_reclaim


class ServerView(BaseModel):
    """One server as the console shows it."""

    node: str = Field(description="Node name, e.g. trn-00003 or inf-00001.")
    pool: Pool = Field(description="The cluster the server belongs to.")
    state: ServerState = Field(description="training, serving, loaned, standby or isolated.")
    gpus: int = Field(description="GPUs in the server.")
    used: int = Field(description="GPUs held by training jobs.")
    jobs: dict[str, int] = Field(description="GPUs per job on this server.")


class PoolView(BaseModel):
    """A cluster and its servers."""

    name: Pool = Field(description="training or inference.")
    gpu_type: str | None = Field(description="GPU model of the pool, if known.")
    servers: list[ServerView] = Field(description="Every server of the pool.")


class QueuedJob(BaseModel):
    """A job waiting for GPUs."""

    job_id: str = Field(description="The job's id.")
    gpus: int = Field(description="GPUs it waits for.")


class Replacement(BaseModel):
    """Capacity given to a job in place of a failed node (what every capacity provider grants).

    The Lyra scheduler grants a warm standby or a loaned inference server; without it, the
    batch scheduler places the requeued job (`requeue`, node `batch-scheduler`).
    """

    job_id: str = Field(description="The job that lost a node.")
    failed_node: str = Field(description="The node that was isolated.")
    node: str = Field(description="The server that replaces it.")
    source: Literal["standby", "loan", "requeue"] = Field(
        description="Warm standby, loaned inference, or the batch scheduler's choice (requeue)."
    )
    gpus: int = Field(description="GPUs granted on the replacement.")

    def describe(self) -> str:
        """Say what was granted, in the words of the action result."""
        if self.source == "requeue":
            return f"requeued job {self.job_id} goes to any idle node"
        return f"{self.source} {self.node} ({self.gpus} GPUs)"


class SchedulerState(BaseModel):
    """A snapshot of the scheduler: pools, loans, standbys and the queue."""

    pools: list[PoolView] = Field(description="Training and inference clusters.")
    loans: list[str] = Field(description="Inference servers lent to training.")
    standbys: list[str] = Field(description="Warm standby servers ready to replace a node.")
    queue: list[QueuedJob] = Field(description="Jobs waiting, in arrival order.")
    refusals: list[str] = Field(description="Recent replacement requests that found no capacity.")
    replacements: list[Replacement] = Field(
        default_factory=list,
        description="Replacements granted, one per job and failed node (asking again returns it).",
    )
    as_of: datetime | None = Field(
        None, description="When a stored snapshot was taken; null when read from the live service."
    )


class ReclaimedNode(BaseModel):
    """A node taken out of service and the jobs it held."""

    node: str = Field(description="The isolated node.")
    jobs: list[str] = Field(description="Jobs that had GPUs on it (they must restart).")


MAX_GRANTS = 500
"""Replacements remembered (and stored) for idempotent re-asking; the oldest go first."""


class Inventory(BaseModel):
    """The servers a live scheduler manages, by node name (TG_ACT_INVENTORY, JSON)."""

    model_config = {"extra": "forbid"}

    gpus_per_server: int = Field(8, ge=1, le=64, description="GPUs in every server.")
    training: list[str] = Field(default_factory=list, description="Training servers.")
    standby: list[str] = Field(
        default_factory=list, description="Training-pool servers kept as warm standbys."
    )
    inference: list[str] = Field(
        default_factory=list, description="Inference servers that may be lent to training."
    )
    training_gpu_type: str | None = None
    inference_gpu_type: str | None = None

    @model_validator(mode="after")
    def _names(self) -> Inventory:
        names = [*self.training, *self.standby, *self.inference]
        if not names:
            raise ValueError("the inventory lists no servers")
        dupes = sorted(n for n, count in Counter(names).items() if count > 1)
        if dupes:
            raise ValueError(f"servers listed twice: {', '.join(dupes)}")
        bad = [n for n in names if not n or len(n) > 253 or any(c.isspace() for c in n)]
        if bad:
            raise ValueError(f"not node names: {bad[:5]}")
        return self


class Scheduler:
    """In-memory scheduler state; pure, no storage (the composition root wires it)."""

    def __init__(
        self,
        training_servers: int,
        inference_servers: int,
        standbys: int = 0,
        gpus_per_server: int = 8,
        training_gpu_type: str | None = None,
        inference_gpu_type: str | None = None,
    ) -> None:
        self.servers: list[Server] = []
        for i in range(training_servers):
            state = (
                ServerState.STANDBY if i >= training_servers - standbys else ServerState.TRAINING
            )
            self.servers.append(Server(i, Pool.TRAINING, state, gpus_per_server, training_gpu_type))
        for i in range(inference_servers):
            sid = training_servers + i
            server = Server(sid, Pool.INFERENCE, ServerState.SERVING, gpus_per_server)
            server.gpu_type = inference_gpu_type
            self.servers.append(server)
        self.gpu_types = {Pool.TRAINING: training_gpu_type, Pool.INFERENCE: inference_gpu_type}
        self.queue: list[QueuedJob] = []
        self.refusals: list[str] = []
        self.replacements: dict[tuple[str, str], Replacement] = {}
        self._ids: dict[str, int] = {}
        self.on_change: Callable[[Callable[[], SchedulerState]], None] | None = None
        """Called with `snapshot` after every change (the composition root stores it)."""

    @classmethod
    def from_inventory(cls, inventory: Inventory) -> Scheduler:
        """Return a scheduler over named servers: training, standbys, then inference."""
        out = cls(0, 0, gpus_per_server=inventory.gpus_per_server)
        out.gpu_types = {
            Pool.TRAINING: inventory.training_gpu_type,
            Pool.INFERENCE: inventory.inference_gpu_type,
        }
        pools = (
            (inventory.training, Pool.TRAINING, ServerState.TRAINING),
            (inventory.standby, Pool.TRAINING, ServerState.STANDBY),
            (inventory.inference, Pool.INFERENCE, ServerState.SERVING),
        )
        for names, pool, state in pools:
            for name in names:
                gpu_type = out.gpu_types[pool]
                server = Server(len(out.servers), pool, state, inventory.gpus_per_server, gpu_type)
                server.node = name
                out.servers.append(server)
        return out

    @classmethod
    def from_state(cls, state: SchedulerState) -> Scheduler:
        """Return the scheduler a snapshot describes (a restart resumes where it stopped).

        Every job's GPUs on a server come back as base workers; the queue and the recent
        refusals come back as they were.
        """
        out = cls(0, 0)
        for view in state.pools:
            out.gpu_types[view.name] = view.gpu_type
            for sv in view.servers:
                server = Server(len(out.servers), view.name, sv.state, sv.gpus, view.gpu_type)
                server.node = sv.node
                for job, gpus in sv.jobs.items():
                    out._grant(server, job, gpus)
                out.servers.append(server)
        out.queue = list(state.queue)
        out.refusals = list(state.refusals)
        out.replacements = {(r.job_id, r.failed_node): r for r in state.replacements}
        return out

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self.snapshot)

    def _by_node(self, node: str) -> Server:
        for s in self.servers:
            if s.name() == node:
                return s
        raise KeyError(f"unknown node {node}")

    def _job(self, job_id: str) -> int:
        return self._ids.setdefault(job_id, len(self._ids))

    def _job_name(self, jid: int) -> str:
        return next(name for name, i in self._ids.items() if i == jid)

    def _grant(self, server: Server, job_id: str, gpus: int) -> None:
        jid = self._job(job_id)
        server.base[jid] = server.base.get(jid, 0) + gpus
        server.used += gpus

    def place(self, job_id: str, gpus: int) -> list[str] | None:
        """Start a job on training servers (best fit); queue it and return None if it waits."""
        training = [s for s in self.servers if s.state is ServerState.TRAINING]
        where = best_fit(training, gpus)
        if where is None:
            self.queue.append(QueuedJob(job_id=job_id, gpus=gpus))
            self._changed()
            return None
        for sid, g in where.items():
            self._grant(self.servers[sid], job_id, g)
        self._changed()
        return [self.servers[sid].name() for sid in where]

    def loan(self, count: int) -> list[str]:
        """Lend up to `count` serving inference servers to training."""
        serving = [s for s in self.servers if s.state is ServerState.SERVING][:count]
        for s in serving:
            s.state = ServerState.LOANED
        if serving:
            self._changed()
        return [s.name() for s in serving]

    def return_loans(self, count: int) -> list[str]:
        """Give `count` loaned servers back to inference, fewest preemptions first.

        Returns the jobs preempted (their GPUs on the returned servers are released).
        """
        loaned = {s.server_id: dict(s.base) for s in self.servers if s.state is ServerState.LOANED}
        plan = greedy_reclaim(loaned, count)
        for sid in plan.servers:
            server = self.servers[sid]
            server.base.clear()
            server.used = 0
            server.state = ServerState.SERVING
        if plan.servers:
            self._changed()
        return sorted(self._job_name(j) for j in plan.preempted)

    def request_replacement(self, job_id: str, failed_node: str, gpus: int) -> Replacement | None:
        """Give a job a warm standby, else a loaned inference server, in place of a failed node.

        Returns None when neither has `gpus` free GPUs; the reason is kept in `refusals`.
        Asking again for the same job and failed node returns the first grant (an engine
        that crashed after asking and asks again on restart gets no second server).
        """
        granted = self.replacements.get((job_id, failed_node))
        if granted is not None:
            return granted
        for s in self.servers:
            if s.state is ServerState.STANDBY and s.gpus >= gpus:
                s.state = ServerState.TRAINING
                self._grant(s, job_id, gpus)
                return self._granted(
                    Replacement(
                        job_id=job_id,
                        failed_node=failed_node,
                        node=s.name(),
                        source="standby",
                        gpus=gpus,
                    )
                )
        loaned = [s for s in self.servers if s.state is ServerState.LOANED]
        where = best_fit(loaned, gpus) if gpus <= (loaned[0].gpus if loaned else 0) else None
        if where is not None:
            (sid,) = where
            self._grant(self.servers[sid], job_id, gpus)
            return self._granted(
                Replacement(
                    job_id=job_id,
                    failed_node=failed_node,
                    node=self.servers[sid].name(),
                    source="loan",
                    gpus=gpus,
                )
            )
        reason = (
            f"{job_id}: no replacement for {failed_node}: no warm standby with {gpus} GPUs and "
            f"no loaned inference server with {gpus} free GPUs ({len(loaned)} loaned)"
        )
        self.refusals.append(reason)
        self._changed()
        return None

    def _granted(self, replacement: Replacement) -> Replacement:
        self.replacements[(replacement.job_id, replacement.failed_node)] = replacement
        while len(self.replacements) > MAX_GRANTS:
            del self.replacements[next(iter(self.replacements))]
        self._changed()
        return replacement

    def reclaim(self, node: str) -> ReclaimedNode:
        """Take an isolated node out of service; return the jobs it held."""
        server = self._by_node(node)
        jobs = sorted(self._job_name(j) for j in {*server.base, *server.extra})
        server.base.clear()
        server.extra.clear()
        server.used = 0
        server.state = ServerState.ISOLATED
        self._changed()
        return ReclaimedNode(node=node, jobs=jobs)

    def snapshot(self) -> SchedulerState:
        """Return the current state for the API and console."""
        pools = []
        for pool in (Pool.TRAINING, Pool.INFERENCE):
            views = [
                ServerView(
                    node=s.name(),
                    pool=s.pool,
                    state=s.state,
                    gpus=s.gpus,
                    used=s.used,
                    jobs={self._job_name(j): g for j, g in {**s.base, **s.extra}.items()},
                )
                for s in self.servers
                if s.pool is pool
            ]
            pools.append(PoolView(name=pool, gpu_type=self.gpu_types[pool], servers=views))
        return SchedulerState(
            pools=pools,
            loans=[s.name() for s in self.servers if s.state is ServerState.LOANED],
            standbys=[s.name() for s in self.servers if s.state is ServerState.STANDBY],
            queue=list(self.queue),
            refusals=list(self.refusals[-20:]),
            replacements=list(self.replacements.values()),
        )
