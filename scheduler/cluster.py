"""The simulated cluster: servers, running jobs, and GPU-second accounting on both sides."""

from __future__ import annotations

import heapq
from bisect import insort
from dataclasses import dataclass, field

from scheduler.allocate import speedup
from scheduler.model import Job, Pool, Server, ServerState, SimConfig

USABLE = (ServerState.TRAINING, ServerState.LOANED)
"""Server states in which training jobs may hold GPUs."""


@dataclass(slots=True)
class Run:
    """A job's live state: work left, where its base and extra workers run, what it cost."""

    job: Job
    remaining: float
    base: dict[int, int] = field(default_factory=dict)
    extra: dict[int, int] = field(default_factory=dict)
    rate: float = 0.0
    since: float = 0.0
    run_start: float = 0.0
    version: int = 0
    first_start: float | None = None
    finish: float | None = None
    preemptions: int = 0
    failures: int = 0
    scaling_ops: int = 0
    gpu_seconds: float = 0.0
    lost_work: float = 0.0
    base_total: int = 0
    """The sum of `base`, kept by the cluster whenever it changes `base`."""
    extra_total: int = 0
    """The sum of `extra`, kept by the cluster whenever it changes `extra`."""

    @property
    def base_gpus(self) -> int:
        """Return the GPUs of the job's base workers."""
        return self.base_total

    @property
    def extra_gpus(self) -> int:
        """Return the GPUs of the job's elastic extra workers."""
        return self.extra_total

    @property
    def running(self) -> bool:
        """Return whether the job holds GPUs."""
        return bool(self.base)

    def work_left(self, t: float) -> float:
        """Return the GPU-seconds (at the requested size) still to do at `t`."""
        return max(0.0, self.remaining - self.rate * (t - self.since))


class Cluster:
    """Servers and runs; every allocation change integrates GPU-seconds per job and server."""

    def __init__(self, config: SimConfig, servers: list[Server]) -> None:
        self.config = config
        self.servers = servers
        self.busy_gpu_s = [0.0] * len(servers)
        self._busy_since = [0.0] * len(servers)
        self.completions: list[tuple[float, int, int]] = []
        self.running: set[int] = set()
        self.epoch = 0
        self.changes = 0
        """Counts every change of allocation or server state (a round may skip work on none)."""
        """Counts changes that could let a queued job start: GPUs freed, servers made usable."""
        self.pools: dict[ServerState, list[Server]] = {st: [] for st in USABLE}
        """The servers that may run training, by state, in server order."""
        self.levels: dict[ServerState, list[set[int]]] = {}
        """Per usable state, the ids of its servers with 0, 1, ... free GPUs."""
        self._free: dict[ServerState, int] = {}
        """Per usable state, the free GPUs over its servers (the levels' total)."""
        size = max((s.gpus for s in servers), default=0)
        for st in USABLE:
            self.pools[st] = [s for s in servers if s.state is st]
            self.levels[st] = [set() for _ in range(size + 1)]
            self._free[st] = 0
            for server in self.pools[st]:
                self.levels[st][server.free].add(server.server_id)
                self._free[st] += server.free

    def _use(self, server: Server, gpus: int) -> None:
        """Change the GPUs jobs hold on a server by `gpus`, keeping the free-GPU levels."""
        levels = self.levels.get(server.state)
        if levels is not None:
            levels[server.free].discard(server.server_id)
            server.used += gpus
            levels[server.free].add(server.server_id)
            self._free[server.state] -= gpus
        else:
            server.used += gpus

    def free_gpus(self, state: ServerState) -> int:
        """Return the free GPUs over the servers in a usable state."""
        return self._free[state]

    def top_free(self, state: ServerState) -> int:
        """Return the most free GPUs on one server in a usable state."""
        levels = self.levels[state]
        for f in range(len(levels) - 1, 0, -1):
            if levels[f]:
                return f
        return 0

    def _touch_server(self, sid: int, t: float) -> None:
        server = self.servers[sid]
        self.busy_gpu_s[sid] += server.used * (t - self._busy_since[sid])
        self._busy_since[sid] = t

    def _settle(self, run: Run, t: float) -> None:
        """Credit progress and GPU-seconds since the run's last change."""
        dt = t - run.since
        if dt > 0 and run.base:
            run.remaining -= run.rate * dt
            run.gpu_seconds += (run.base_gpus + run.extra_gpus) * dt
        run.since = t

    def _rerate(self, run: Run, t: float) -> None:
        """Recompute the run's speed after a change and schedule its completion."""
        run.version += 1
        self.changes += 1
        if not run.base:
            run.rate = 0.0
            return
        gpus = run.base_gpus + run.extra_gpus
        slowest = min(self.servers[s].speed for s in (*run.base, *run.extra))
        exponent = self.config.scaling_exponent
        run.rate = run.job.num_gpus * speedup(gpus, run.job.num_gpus, exponent) * slowest
        done_at = t + max(0.0, run.remaining) / run.rate
        heapq.heappush(self.completions, (done_at, run.job.job_id, run.version))

    def start(self, run: Run, where: dict[int, int], t: float) -> None:
        """Start a run's base workers on `where`."""
        self._settle(run, t)
        for sid, g in where.items():
            self._touch_server(sid, t)
            server = self.servers[sid]
            assert server.free >= g, f"over-allocated {server.name()}"
            server.base[run.job.job_id] = g
            self._use(server, g)
            run.base[sid] = g
        run.base_total = sum(run.base.values())
        self.running.add(run.job.job_id)
        if run.first_start is None:
            run.first_start = t
        else:
            run.remaining += self.config.restart_overhead_s * run.job.num_gpus
        run.run_start = t
        self._rerate(run, t)

    def resize(self, run: Run, add: dict[int, int], drop: dict[int, int], t: float) -> None:
        """Add and remove elastic extra GPUs of a running job."""
        if not add and not drop:
            return
        self._settle(run, t)
        jid = run.job.job_id
        if drop:
            self.epoch += 1
        for sid, g in drop.items():
            self._touch_server(sid, t)
            left = run.extra.get(sid, 0) - g
            server = self.servers[sid]
            self._use(server, -min(g, run.extra.get(sid, 0)))
            if left > 0:
                run.extra[sid] = server.extra[jid] = left
            else:
                run.extra.pop(sid, None)
                server.extra.pop(jid, None)
        for sid, g in add.items():
            self._touch_server(sid, t)
            server = self.servers[sid]
            assert server.free >= g, f"over-allocated {server.name()}"
            run.extra[sid] = server.extra[jid] = run.extra.get(sid, 0) + g
            self._use(server, g)
        run.extra_total = sum(run.extra.values())
        run.scaling_ops += 1
        self._rerate(run, t)

    def stop(self, run: Run, t: float, lost: bool) -> None:
        """Release every GPU of a run; when `lost`, roll back work since its last checkpoint."""
        self._settle(run, t)
        jid = run.job.job_id
        if run.base or run.extra:
            self.epoch += 1
        for sid in (*run.base, *run.extra):
            self._touch_server(sid, t)
            server = self.servers[sid]
            self._use(server, -(server.base.pop(jid, 0) + server.extra.pop(jid, 0)))
        if lost:
            lost_work = self.lost_work(run, t)
            run.remaining += lost_work
            run.lost_work += lost_work
        run.base.clear()
        run.extra.clear()
        run.base_total = run.extra_total = 0
        self.running.discard(jid)
        self._rerate(run, t)

    def lost_work(self, run: Run, t: float) -> float:
        """Return the work stopping a run at `t` throws away (all of it without checkpoints)."""
        done = max(0.0, run.job.work - run.remaining)
        if not run.job.checkpoint:
            return done
        since_ckpt = (t - run.run_start) % self.config.checkpoint_interval_s
        return min(run.rate * since_ckpt, done)

    def set_state(self, sid: int, state: ServerState, t: float) -> None:
        """Change a server's state; it must hold no job by then."""
        server = self.servers[sid]
        assert (
            not server.base
            and not server.extra
            or state
            in (
                ServerState.TRAINING,
                ServerState.LOANED,
            )
        ), f"{server.name()} still holds jobs"
        self._touch_server(sid, t)
        if state is server.state:
            return
        self.changes += 1
        if state in USABLE and server.state not in USABLE:
            self.epoch += 1
        if server.state in USABLE:
            self.levels[server.state][server.free].discard(server.server_id)
            self._free[server.state] -= server.free
            self.pools[server.state].remove(server)
        server.state = state
        if state in USABLE:
            self.levels[state][server.free].add(server.server_id)
            self._free[state] += server.free
            insort(self.pools[state], server, key=lambda s: s.server_id)

    def usable(self, pool: Pool | None = None) -> list[Server]:
        """Return the servers that may run training now (own training servers and loans)."""
        wanted = (ServerState.TRAINING, ServerState.LOANED)
        return [s for s in self.servers if s.state in wanted and (pool is None or s.pool is pool)]

    def finish_accounting(self, t: float) -> None:
        """Integrate every server's busy GPU-seconds up to `t`."""
        for sid in range(len(self.servers)):
            self._touch_server(sid, t)
