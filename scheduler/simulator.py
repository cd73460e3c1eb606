"""Trace-driven simulator: arrivals, completions, inference load steps, failures, rounds."""

from __future__ import annotations

import heapq
import math
import random
import time
from dataclasses import dataclass, field

from scheduler.allocate import fifo_key, sjf_key
from scheduler.cluster import Cluster, Run
from scheduler.inference import LoadSeries, diurnal_load
from scheduler.metrics import summarize
from scheduler.model import Job, Policy, Pool, Server, ServerState, SimConfig
from scheduler.queue import PendingQueue
from scheduler.reclaim import reclaim
from scheduler.rounds import Rounds

PREDICTOR_PRECISION = 0.85
"""Share of servers flagged risky that really are (the SYSTOR'23 ensemble's precision)."""

LOAN_RISE = 0.05
"""Rise in inference demand (fraction of the cluster) that the loan-fit rule guards against."""


@dataclass
class Counters:
    """What the run counted besides per-job records."""

    inference_gpu_s: float = 0.0
    shortfall_gpu_s: float = 0.0
    loans: int = 0
    reclaims: int = 0
    failures: int = 0
    unschedulable: int = 0
    decision_s: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def loan_target(up: int, servers: int, forecast: float, reserve_fraction: float) -> int:
    """Return how many of `up` working inference servers may be lent.

    Whole servers only: the forecast demand plus the reserve, both fractions of the whole
    inference cluster, are rounded up together (rounding each up separately would hold back
    a whole server for a 2% reserve on a small cluster).
    """
    keep = math.ceil((forecast + reserve_fraction) * servers - 1e-9)
    return max(0, up - keep)


def build_servers(config: SimConfig, rng: random.Random) -> tuple[list[Server], list[float]]:
    """Return the training then inference servers and each one's true failure hazard per s."""
    servers = [
        Server(
            i, Pool.TRAINING, ServerState.TRAINING, config.gpus_per_server, config.training_gpu_type
        )
        for i in range(config.training_servers)
    ]
    base = config.training_servers
    servers += [
        Server(
            base + i,
            Pool.INFERENCE,
            ServerState.SERVING,
            config.gpus_per_server,
            config.inference_gpu_type,
            speed=config.inference_speed,
        )
        for i in range(config.inference_servers)
    ]
    rate = config.failure_rate_per_server_day / 86_400.0
    risky = set(rng.sample(range(len(servers)), int(config.risky_fraction * len(servers))))
    healthy = [i for i in range(len(servers)) if i not in risky]
    false_alarms = round(len(risky) * (1 - PREDICTOR_PRECISION) / PREDICTOR_PRECISION)
    for i in risky | set(rng.sample(healthy, min(false_alarms, len(healthy)))):
        servers[i].risk = 1.0
    hazards = [rate * (config.risky_multiplier if i in risky else 1.0) for i in range(len(servers))]
    return servers, hazards


class Simulator:
    """Replay jobs against a policy on a training and an inference cluster."""

    def __init__(
        self, jobs: list[Job], policy: Policy, config: SimConfig, load: LoadSeries | None = None
    ) -> None:
        self.jobs = sorted(jobs, key=lambda j: j.submit_time)
        self.policy = policy
        self.config = config
        self.rng = random.Random(config.seed)
        span_days = math.ceil((self.jobs[-1].submit_time if self.jobs else 0) / 86_400) + 2
        self.load = (load or diurnal_load(span_days, seed=config.seed)).shifted(config.load_phase_s)
        servers, self.hazards = build_servers(config, self.rng)
        self.cluster = Cluster(config, servers)
        self._inference_servers = [s for s in servers if s.pool is Pool.INFERENCE]
        self.runs = {j.job_id: Run(j, remaining=j.work) for j in self.jobs}
        self.pending = PendingQueue()
        self._order_key = fifo_key if policy.order == "fifo" else sjf_key
        self.counters = Counters()
        self.rounds = Rounds(self)
        self.now = 0.0
        self._inf_rate = (0.0, 0.0)
        self._faults: list[tuple[float, int, str]] = []
        self.draining: set[int] = set()
        """Loaned servers on their way back to inference: no new work, returned when empty."""

    def schedulable(self, job: Job) -> bool:
        """Return whether the job could ever fit the training cluster.

        It must fit at the size the policy starts it at: its minimum only when the policy
        scales (otherwise a job bigger than the cluster would wait forever).
        """
        cfg = self.config
        need = job.min_gpus if self.policy.elastic else job.num_gpus
        fits = need <= cfg.training_servers * cfg.gpus_per_server
        typed = job.gpu_type is None or cfg.training_gpu_type in (None, job.gpu_type)
        return fits and typed

    def can_loan(self, job: Job) -> bool:
        """Return whether the job may run on inference servers (GPU type flexible or equal)."""
        return job.gpu_type is None or self.config.inference_gpu_type in (None, job.gpu_type)

    def load_calm_s(self, t: float) -> float:
        """Return how long loans look safe: until demand is due to rise by 5% of the cluster."""
        return self.load.calm_s(t, LOAN_RISE)

    def run(self) -> dict[str, object]:
        """Simulate until every schedulable job has finished; return the summary."""
        began = time.perf_counter()
        self._seed_failures()
        i, next_load = 0, 0.0
        comps = self.cluster.completions
        while i < len(self.jobs) or self.pending or self.cluster.running:
            while comps and not self._valid(comps[0]):
                heapq.heappop(comps)
            t = min(
                self.jobs[i].submit_time if i < len(self.jobs) else math.inf,
                comps[0][0] if comps else math.inf,
                next_load,
                self._faults[0][0] if self._faults else math.inf,
            )
            self._advance(t)
            while comps and comps[0][0] <= t + 1e-9:
                done_at, jid, version = heapq.heappop(comps)
                if self._valid((done_at, jid, version)):
                    self._complete(self.runs[jid], t)
            if self.draining:
                self._return_drained(t)
            while i < len(self.jobs) and self.jobs[i].submit_time <= t:
                self._arrive(self.jobs[i])
                i += 1
            if next_load <= t:
                self._rebalance(t)
                next_load += self.load.step_s
            while self._faults and self._faults[0][0] <= t:
                self._fault(*heapq.heappop(self._faults)[1:], t)
            self.rounds.run(t)
        self.cluster.finish_accounting(self.now)
        return summarize(self, time.perf_counter() - began)

    def _valid(self, entry: tuple[float, int, int]) -> bool:
        run = self.runs[entry[1]]
        return run.running and run.version == entry[2]

    def _advance(self, t: float) -> None:
        dt = t - self.now
        if dt > 0:
            self.counters.inference_gpu_s += self._inf_rate[0] * dt
            self.counters.shortfall_gpu_s += self._inf_rate[1] * dt
        self.now = max(self.now, t)

    def enqueue(self, job_id: int) -> None:
        """Queue a job (new or interrupted) under the policy's order key."""
        run = self.runs[job_id]
        key = self._order_key(run.job.submit_time, run.remaining)
        self.pending.add(key, job_id, (self.rounds.need(run), self.can_loan(run.job)))

    def _arrive(self, job: Job) -> None:
        if self.schedulable(job):
            self.enqueue(job.job_id)
        else:
            self.counters.unschedulable += 1

    def _complete(self, run: Run, t: float) -> None:
        self.cluster.stop(run, t, lost=False)
        run.remaining = 0.0
        run.finish = t
        self.rounds.elastic.discard(run.job.job_id)

    def interrupt(self, run: Run, t: float, failure: bool) -> None:
        """Stop a running job (preempted or hit by a failure) and queue it again."""
        if failure:
            run.failures += 1
        else:
            run.preemptions += 1
        self.cluster.stop(run, t, lost=True)
        self.rounds.elastic.discard(run.job.job_id)
        self.enqueue(run.job.job_id)

    def _inference(self, state: ServerState) -> list[Server]:
        return [s for s in self._inference_servers if s.state is state]

    def _update_inference_rate(self, t: float) -> None:
        demand = self.load.at(t) * self.config.inference_servers
        serving = len(self._inference(ServerState.SERVING))
        gpus = self.config.gpus_per_server
        self._inf_rate = (min(demand, serving) * gpus, max(0.0, demand - serving) * gpus)

    def _rebalance(self, t: float) -> None:
        """Lend idle inference servers or take them back ahead of forecast demand."""
        if self.policy.loan:
            cfg = self.config
            up = cfg.inference_servers - len(self._inference(ServerState.ISOLATED))

            def lendable(horizon_s: float, margin: float = 0.0) -> int:
                forecast = self.load.forecast(t, horizon_s) + margin
                return loan_target(up, cfg.inference_servers, forecast, cfg.reserve_fraction)

            target = lendable(cfg.forecast_horizon_s)
            loaned = self._inference(ServerState.LOANED)
            if self.policy.drain:
                now = loan_target(up, cfg.inference_servers, self.load.at(t), cfg.reserve_fraction)
                target = self._drain(loaned, target, now, t)
                loaned = self._inference(ServerState.LOANED)
            if self.policy.loan_hold and len(loaned) < target:
                held = lendable(cfg.lend_horizon_s, cfg.lend_margin)
                target = max(len(loaned), min(target, held))
            if len(loaned) > target:
                self._reclaim(loaned, len(loaned) - target, t)
            elif len(loaned) < target:
                serving = self._inference(ServerState.SERVING)
                if self.policy.fault_aware:
                    serving.sort(key=lambda s: s.risk)
                for server in serving[: target - len(loaned)]:
                    self.cluster.set_state(server.server_id, ServerState.LOANED, t)
                    self.counters.loans += 1
        self._update_inference_rate(t)

    def _drain(self, loaned: list[Server], target: int, now: int, t: float) -> int:
        """Drain the servers the forecast wants back; return how many loans must remain now.

        `target` is the loan count the forecast allows, `now` the count current demand
        allows (at least `target`). The servers above `target`, the cheapest by the policy's
        reclaim cost, drain: they take no new work, lose their extra workers and go back once
        empty; those above `now` the caller reclaims at once, from the draining ones.
        """
        self.draining &= {s.server_id for s in loaned}
        now = max(now, target)
        if len(loaned) <= target:
            self.draining.clear()
            return target
        keep = min(len(loaned), now)  # loans that may stay until demand needs them
        drain_count = len(loaned) - target
        if len(self.draining) > drain_count:  # the forecast fell: undrain the busiest
            busy = sorted(self.draining, key=lambda s: -self.cluster.servers[s].used)
            self.draining -= set(busy[: len(self.draining) - drain_count])
        elif len(self.draining) < drain_count:
            others = [s for s in loaned if s.server_id not in self.draining]
            cands = {s.server_id: dict(s.base) for s in others}
            jobs = {j for b in cands.values() for j in b}
            plan = reclaim(
                cands,
                drain_count - len(self.draining),
                self.policy.reclaim,
                self.rng,
                self._weights(jobs, t),
                {j: len(self.runs[j].base) for j in jobs},
                {j: self.runs[j].base_gpus for j in jobs},
            )
            self.draining.update(plan.servers)
        for sid in sorted(self.draining):
            server = self.cluster.servers[sid]
            for jid, g in list(server.extra.items()):
                self.cluster.resize(self.runs[jid], {}, {sid: g}, t)
        self._return_drained(t)
        return keep

    def _return_drained(self, t: float) -> None:
        """Give back every draining server that no job holds any more."""
        for sid in sorted(self.draining):
            server = self.cluster.servers[sid]
            if server.state is not ServerState.LOANED:
                self.draining.discard(sid)
            elif server.used == 0:
                self.cluster.set_state(sid, ServerState.SERVING, t)
                self.counters.reclaims += 1
                self.draining.discard(sid)
        self._update_inference_rate(t)

    def _weights(self, jobs: set[int], t: float) -> dict[int, float] | None:
        if not self.policy.checkpoint_aware:
            return None
        out = {}
        for j in jobs:
            run = self.runs[j]
            out[j] = 1.0 + self.cluster.lost_work(run, t) / (3600.0 * run.job.num_gpus)
        return out

    def _reclaim(self, loaned: list[Server], count: int, t: float) -> None:
        """Return `count` loaned servers, draining ones first (chosen earlier, and they have
        had time to empty), each group by the policy's reclaim plan."""
        draining = [s for s in loaned if s.server_id in self.draining]
        rest = [s for s in loaned if s.server_id not in self.draining]
        for group in (draining, rest):
            take = min(count, len(group))
            if take > 0:
                self._reclaim_from(group, take, t)
                count -= take

    def _reclaim_from(self, loaned: list[Server], count: int, t: float) -> None:
        """Return `count` of `loaned`: drop extras on them, preempt the chosen plan's jobs."""
        cands = {s.server_id: dict(s.base) for s in loaned}
        jobs = {j for b in cands.values() for j in b}
        spans = {j: len(self.runs[j].base) for j in jobs}
        totals = {j: self.runs[j].base_gpus for j in jobs}
        weights = self._weights(jobs, t)
        plan = reclaim(cands, count, self.policy.reclaim, self.rng, weights, spans, totals)
        for sid in plan.servers:
            server = self.cluster.servers[sid]
            for jid, g in list(server.extra.items()):
                self.cluster.resize(self.runs[jid], {}, {sid: g}, t)
            for jid in list(server.base):
                self.interrupt(self.runs[jid], t, failure=False)
            self.cluster.set_state(sid, ServerState.SERVING, t)
            self.counters.reclaims += 1
            self.draining.discard(sid)

    def _seed_failures(self) -> None:
        for sid, hazard in enumerate(self.hazards):
            if hazard > 0:
                heapq.heappush(self._faults, (self.rng.expovariate(hazard), sid, "fail"))

    def _fault(self, sid: int, kind: str, t: float) -> None:
        """Fail a server (interrupt its jobs, isolate it) or bring a repaired one back."""
        server = self.cluster.servers[sid]
        if kind == "repair":
            back = ServerState.TRAINING if server.pool is Pool.TRAINING else ServerState.SERVING
            self.cluster.set_state(sid, back, t)
            heapq.heappush(self._faults, (t + self.rng.expovariate(self.hazards[sid]), sid, "fail"))
        else:
            self.counters.failures += 1
            for jid in {*server.base, *server.extra}:
                self.interrupt(self.runs[jid], t, failure=True)
            self.cluster.set_state(sid, ServerState.ISOLATED, t)
            heapq.heappush(self._faults, (t + self.config.repair_s, sid, "repair"))
        self._update_inference_rate(t)
