"""One scheduling round: admit pending jobs (phase 1), then hand out extra workers (phase 2)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.allocate import ElasticItem, extra_targets, remaining_time
from scheduler.cluster import Cluster, Run
from scheduler.model import Server, ServerState
from scheduler.placement import RISKY, best_fit
from scheduler.queue import Bucket, Step

if TYPE_CHECKING:
    from scheduler.simulator import Simulator


@dataclass(frozen=True, slots=True)
class Hold:
    """A reservation: servers set aside for the blocked job, expected free at `until`."""

    until: float
    servers: frozenset[int]


def _without(
    pools: tuple[list[Server], list[Server]], held: frozenset[int]
) -> tuple[list[Server], list[Server]]:
    training, loaned = pools
    return (
        [s for s in training if s.server_id not in held],
        [s for s in loaned if s.server_id not in held],
    )


class Rounds:
    """The allocation logic of one simulator, run after every batch of events."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.elastic: set[int] = set()
        self._admit_epoch = -1
        self.reserved: int | None = None
        self._saturated: tuple[int, frozenset[int]] | None = None
        """The cluster's state when the last scale gave every elastic job its maximum in the
        knapsack: until it changes, scaling again would reach the same placement."""
        """The job holding the reservation under a `reserve` policy, until it starts."""

    def run(self, t: float) -> None:
        """Run one round at `t` and time it."""
        began = time.perf_counter()
        sim = self.sim
        if sim.pending:
            self.admit(t)
            if sim.pending and self.elastic and self._extras_would_help():
                self._drop_all_extras(t)
                self.admit(t)
        if sim.policy.elastic and self.elastic:
            self.scale(t)
        sim.counters.decision_s.append(time.perf_counter() - began)
        if sim.config.check_invariants:
            sim.counters.violations.extend(check_invariants(sim))

    def _pools(self) -> tuple[list[Server], list[Server]]:
        pools = self.sim.cluster.pools
        loaned = pools[ServerState.LOANED]
        if self.sim.draining:
            loaned = [s for s in loaned if s.server_id not in self.sim.draining]
        return pools[ServerState.TRAINING], loaned

    def _free(self) -> list[int]:
        """Return free GPUs on training and loaned servers (not draining ones), and the most
        on one server of each."""
        c = self.sim.cluster
        t, loan = ServerState.TRAINING, ServerState.LOANED
        if self.sim.draining:
            open_ = [s.free for s in self._pools()[1]]
            return [c.free_gpus(t), sum(open_), c.top_free(t), max(open_, default=0)]
        return [c.free_gpus(t), c.free_gpus(loan), c.top_free(t), c.top_free(loan)]

    def need(self, run: Run) -> int:
        """Return the GPUs a job must get to start (its minimum when scaling is on)."""
        return run.job.min_gpus if self.sim.policy.elastic else run.job.num_gpus

    def admit(self, t: float) -> None:
        """Start pending jobs in FIFO or shortest-job-first order where they fit.

        Whether a job fits only grows with free capacity, so when no GPU was freed since the
        last round only the jobs queued since then are tried (the rest would fail again); and
        within a round, once a job of `need` GPUs failed, jobs of the same kind (loan
        eligibility; one server or several, which fit by the fullest server or by the total)
        needing as much are skipped. Both keep the outcome of a full scan in order.
        """
        sim = self.sim
        policy = sim.policy
        incremental = (
            policy.backfill
            and not policy.loan_fit
            and not policy.reserve
            and sim.cluster.epoch == self._admit_epoch
        )
        training, loaned = self._pools()
        size = sim.config.gpus_per_server
        failed = [math.inf] * 4
        free = self._free()
        hold: list[Hold] = []
        if self.reserved is not None:
            held = sim.runs[self.reserved]
            if held.running or held.finish is not None:
                self.reserved = None
            else:
                hold.append(self._hold(held, t))

        def visit(jid: int, bucket: Bucket) -> Step:
            if free[0] + free[1] == 0:
                return "stop"
            need, may_lend = bucket
            run = sim.runs[jid]
            lend = may_lend and self._may_loan(run, t)
            kind = 2 * lend + (need > size)
            if need >= failed[kind]:
                return "next" if policy.loan_fit else "drop"
            fits = need <= free[0] + (free[1] if lend else 0)
            if fits and need <= size:
                fits = need <= max(free[2], free[3] if lend else 0)
            pools = (training, loaned if lend else [])
            if (
                fits
                and hold
                and jid != self.reserved
                and not self._ends_before(run, need, t, hold[0])
            ):
                pools = _without(pools, hold[0].servers)
            where = self._place(run, need, *pools) if fits else None
            if where is None:
                if not policy.backfill:
                    return "stop"
                if policy.reserve and self.reserved is None:
                    self.reserved = jid
                    hold.append(self._hold(run, t))
                    return "next"
                if fits and hold:  # only the hold kept it out: a shorter job may still fit
                    return "next"
                failed[kind] = need
                return "next" if policy.loan_fit else "drop"
            if jid == self.reserved:
                self.reserved = None
                hold.clear()
            sim.cluster.start(run, where, t)
            if run.job.elastic and policy.elastic:
                self.elastic.add(jid)
            free[:] = self._free()
            return "started"

        sim.pending.walk(visit, fresh_only=incremental)
        self._admit_epoch = sim.cluster.epoch

    def _hold(self, run: Run, t: float) -> Hold:
        """Return the servers a blocked job is promised and when they are expected to be free.

        Every running job is expected to end at its current rate; a job of one server's size
        holds the server that frees enough GPUs first, a bigger one the servers that empty
        first. Loaned servers count only when the job may run on them.
        """
        sim = self.sim
        need = self.need(run)
        training, loaned = self._pools()
        eligible = training + (loaned if self._may_loan(run, t) else [])
        size = sim.config.gpus_per_server
        ready: list[tuple[float, int]] = []
        for server in eligible:
            ends = sorted(
                (self._expected_end(sim.runs[j], t), g)
                for j, g in (*server.base.items(), *server.extra.items())
            )
            free, at = server.free, t
            want = min(need, server.gpus)
            for end, g in ends:
                if free >= want:
                    break
                free, at = free + g, end
            if free >= want:
                ready.append((at, server.server_id))
        ready.sort()
        count = 1 if need <= size else math.ceil(need / size)
        chosen = ready[:count]
        if len(chosen) < count:  # never fits as things stand: hold nothing back
            return Hold(math.inf, frozenset())
        return Hold(chosen[-1][0], frozenset(s for _, s in chosen))

    def _expected_end(self, run: Run, t: float) -> float:
        return t + run.work_left(t) / run.rate if run.rate > 0 else math.inf

    def _ends_before(self, run: Run, need: int, t: float, hold: Hold) -> bool:
        """Return whether a job started now on `need` GPUs ends before the held servers free."""
        exponent = self.sim.config.scaling_exponent
        return t + remaining_time(run.remaining, need, run.job.num_gpus, exponent) <= hold.until

    def _may_loan(self, run: Run, t: float) -> bool:
        """Return whether an inelastic job may go to a loaned server (our loan-fit rule)."""
        policy = self.sim.policy
        if not policy.loan_fit:
            return True
        if run.job.elastic and policy.elastic and not policy.elastic_on_training:
            return True
        expected = run.remaining / run.job.num_gpus
        return expected <= self.sim.load_calm_s(t)

    def _place(
        self, run: Run, need: int, training: list[Server], loaned: list[Server]
    ) -> dict[int, int] | None:
        """Return where to start the job: elastic jobs on loans first (unless the policy keeps
        their base workers on training), the rest on training."""
        policy = self.sim.policy
        fault_aware = policy.fault_aware
        elastic_first = run.job.elastic and not policy.elastic_on_training
        first, second = (loaned, training) if elastic_first else (training, loaned)
        where = best_fit(first, need, fault_aware)
        if where is None and second:
            where = best_fit(second, need, fault_aware) or best_fit(
                first + second, need, fault_aware
            )
        return where

    def _extras_would_help(self) -> bool:
        sim = self.sim
        extras = sum(sim.runs[j].extra_gpus for j in self.elastic)
        if extras == 0:
            return False
        free = sum(self._free()[:2])
        smallest = sim.pending.min_need()
        return smallest is not None and smallest <= free + extras

    def _drop_all_extras(self, t: float) -> None:
        for jid in sorted(self.elastic):
            run = self.sim.runs[jid]
            if run.extra:
                self.sim.cluster.resize(run, {}, dict(run.extra), t)

    def scale(self, t: float) -> None:
        """Give free GPUs to elastic jobs as the knapsack over JCT reduction chooses."""
        sim = self.sim
        state = (sim.cluster.changes, frozenset(sim.draining))
        if state == self._saturated:
            return
        self._saturated = None
        free = sum(self._free()[:2])
        if free == 0:
            return
        exponent = sim.config.scaling_exponent
        jobs = []
        extras = room = 0
        for jid in sorted(self.elastic):
            run = sim.runs[jid]
            step = run.job.step
            base, extra = run.base_gpus, run.extra_gpus
            count = (run.job.max_gpus - base) // step
            jobs.append((run, base, extra, step, count))
            extras += extra
            room += count * step
        if not any(job[4] for job in jobs):
            self._saturated = (sim.cluster.changes, frozenset(sim.draining))
            return
        saturated = exponent > 0 and room <= free + extras
        if saturated:  # every maximum fits: that is the optimum (`extra_targets`)
            targets = {
                run.job.job_id: count * step if run.work_left(t) > 0 else 0
                for run, _, _, step, count in jobs
            }
        else:
            items = [
                ElasticItem(run.job.job_id, run.work_left(t), run.job.num_gpus, base, step, count)
                for run, base, _, step, count in jobs
            ]
            targets = extra_targets(items, free + extras, exponent)
        before = {run.job.job_id: extra for run, _, extra, _, _ in jobs}
        for jid, target in targets.items():
            if target < before[jid]:
                run = sim.runs[jid]
                sim.cluster.resize(run, {}, _shrink(run, before[jid] - target), t)
        for jid, target in targets.items():
            if target > before[jid]:
                run = sim.runs[jid]
                loan, train = ServerState.LOANED, ServerState.TRAINING
                states = (loan, train) if sim.can_loan(run.job) else (train,)
                add = _grow(
                    sim.cluster,
                    states,
                    run.job.step,
                    (target - before[jid]) // run.job.step,
                    sim.policy.fault_aware,
                    sim.draining,
                )
                sim.cluster.resize(run, add, {}, t)
        if saturated:
            self._saturated = (sim.cluster.changes, frozenset(sim.draining))


def _shrink(run: Run, gpus: int) -> dict[int, int]:
    """Return extra GPUs to drop per server, latest-added servers first."""
    drop: dict[int, int] = {}
    for sid in reversed(list(run.extra)):
        take = min(run.extra[sid], gpus)
        if take:
            drop[sid] = take
            gpus -= take
    return drop


def _grow(
    cluster: Cluster,
    states: tuple[ServerState, ...],
    step: int,
    workers: int,
    fault_aware: bool,
    draining: set[int],
) -> dict[int, int]:
    """Return where `workers` extra workers of `step` GPUs go, each on one server.

    Each worker goes to a server of the first state in `states` that fits it; within that,
    the best fit (fewest free GPUs; low-risk first when fault-aware; then server order),
    read off the cluster's free-GPU levels instead of scanning every server.
    """
    add: dict[int, int] = {}
    servers = cluster.servers
    for _ in range(workers):
        sid = None
        for state in states:
            sid = _best_level(cluster.levels[state], servers, step, add, fault_aware, draining)
            if sid is not None:
                break
        if sid is None:
            break
        add[sid] = add.get(sid, 0) + step
    return add


def _best_level(
    levels: list[set[int]],
    servers: list[Server],
    step: int,
    add: dict[int, int],
    risky: bool,
    draining: set[int],
) -> int | None:
    best: tuple[int, int, int] | None = None
    for free in range(step, len(levels)):
        for sid in levels[free]:
            if free - add.get(sid, 0) < step or sid in draining:
                continue
            key = (int(risky and servers[sid].risk >= RISKY), free, sid)
            if best is None or key < best:
                best = key
        if best is not None and best[0] == 0:
            break
    return None if best is None else best[2]


def check_invariants(sim: Simulator) -> list[str]:
    """Return every broken rule: jobs only on usable servers, no server over-allocated."""
    bad = []
    usable = (ServerState.TRAINING, ServerState.LOANED)
    for s in sim.cluster.servers:
        if (s.base or s.extra) and s.state not in usable:
            bad.append(f"t={sim.now:.0f}: jobs on {s.state} server {s.name()}")
        if s.used != sum(s.base.values()) + sum(s.extra.values()):
            bad.append(f"t={sim.now:.0f}: {s.name()} GPU ledger differs")
        if s.used > s.gpus:
            bad.append(f"t={sim.now:.0f}: {s.name()} holds {s.used} > {s.gpus} GPUs")
    for state, levels in sim.cluster.levels.items():
        counted = sum(free * len(ids) for free, ids in enumerate(levels))
        if sim.cluster.free_gpus(state) != counted:
            bad.append(f"t={sim.now:.0f}: free GPUs of {state} servers counted wrong")
    for jid in sim.cluster.running:
        run = sim.runs[jid]
        if (run.base_gpus, run.extra_gpus) != (sum(run.base.values()), sum(run.extra.values())):
            bad.append(f"t={sim.now:.0f}: job {jid} GPU totals differ from its workers")
        for sid, g in run.base.items():
            if sim.cluster.servers[sid].base.get(jid) != g:
                bad.append(f"t={sim.now:.0f}: job {jid} base ledger differs on server {sid}")
    return bad
