"""The scheduler's vocabulary: jobs, servers, pools, policies and simulator settings."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum


class Pool(StrEnum):
    """Which cluster a server belongs to."""

    TRAINING = "training"
    INFERENCE = "inference"


class ServerState(StrEnum):
    """What a server is doing right now."""

    TRAINING = "training"
    SERVING = "serving"
    LOANED = "loaned"
    STANDBY = "standby"
    ISOLATED = "isolated"


@dataclass(slots=True)
class Job:
    """A training job as the trace gives it: size, duration at that size, elastic range."""

    job_id: int
    submit_time: float
    duration: float
    num_gpus: int
    min_gpus: int
    max_gpus: int
    gpu_type: str | None = None
    checkpoint: bool = False

    @property
    def elastic(self) -> bool:
        """Return whether the job can run on a varying number of GPUs."""
        return self.max_gpus > self.min_gpus

    @property
    def work(self) -> float:
        """Return the job's work in GPU-seconds at its requested size."""
        return self.duration * self.num_gpus

    @property
    def step(self) -> int:
        """Return the GPUs one elastic worker adds (a server at most)."""
        return max(1, min(self.min_gpus, 8))


@dataclass(slots=True)
class Server:
    """One 8-GPU server and the GPUs each job holds on it (base workers and elastic extras)."""

    server_id: int
    pool: Pool
    state: ServerState
    gpus: int = 8
    gpu_type: str | None = None
    speed: float = 1.0
    risk: float = 0.0
    base: dict[int, int] = field(default_factory=dict)
    extra: dict[int, int] = field(default_factory=dict)
    used: int = 0
    """GPUs held by jobs: the sum of `base` and `extra`, kept by whoever changes them."""
    node: str | None = None
    """The real node name (from an inventory); None names it by pool and id."""

    @property
    def free(self) -> int:
        """Return the GPUs a job could take now (0 unless the server runs training)."""
        if self.state is not ServerState.TRAINING and self.state is not ServerState.LOANED:
            return 0
        return self.gpus - self.used

    def name(self) -> str:
        """Return the server's node name."""
        if self.node is not None:
            return self.node
        prefix = "trn" if self.pool is Pool.TRAINING else "inf"
        return f"{prefix}-{self.server_id:05d}"


@dataclass(frozen=True, slots=True)
class Policy:
    """How a scheduler orders, loans, scales, reclaims and places."""

    name: str
    order: str = "sjf"
    backfill: bool = True
    loan: bool = False
    elastic: bool = False
    reclaim: str = "lyra"
    checkpoint_aware: bool = False
    fault_aware: bool = False
    loan_fit: bool = False
    reserve: bool = False
    """Backfill with a reservation (EASY): the first job that does not fit keeps servers
    set aside until it starts; later jobs may use them only if they end before it could."""
    loan_hold: bool = False
    """Lend only servers the forecast keeps idle for `SimConfig.lend_horizon_s`; reclaim on
    the short forecast as before (hysteresis: noise in the load no longer flaps loans)."""
    elastic_on_training: bool = False
    """Start elastic jobs' base workers on training servers first, and hold them to the
    loan-fit rule like any job; their extra workers still go to loaned servers first
    (removing an extra worker preempts nobody, removing a base worker preempts the job)."""
    drain: bool = False
    """Reclaim ahead of demand by draining: when the 10-minute forecast wants servers back
    that current demand does not yet need, the cheapest are chosen (by the policy's reclaim
    cost), take no new work and go back as soon as they are empty, or by force as soon as
    current demand needs them."""


TRAINGUARD = Policy(
    "trainguard",
    loan=True,
    elastic=True,
    reclaim="exact",
    checkpoint_aware=True,
    fault_aware=True,
    loan_fit=True,
    loan_hold=True,
    elastic_on_training=True,
    drain=True,
)
"""Ours: Lyra plus exact small reclaims, checkpoint-aware cost, fault-aware placement, the
loan-fit rule, loan hold with a deadband, and elastic jobs' base workers on training."""

POLICIES: dict[str, Policy] = {
    p.name: p
    for p in (
        Policy("fifo", order="fifo"),
        Policy("sjf"),
        Policy("easy", reserve=True),
        Policy("loan", loan=True),
        Policy("elastic", elastic=True),
        Policy("lyra", loan=True, elastic=True),
        Policy("lyra-random", loan=True, elastic=True, reclaim="random"),
        Policy("lyra-smallest", loan=True, elastic=True, reclaim="smallest"),
        Policy("lyra-exact", loan=True, elastic=True, reclaim="exact"),
        TRAINGUARD,
        replace(TRAINGUARD, name="trainguard-random", reclaim="random", drain=False),
        replace(TRAINGUARD, name="trainguard-smallest", reclaim="smallest", drain=False),
        replace(TRAINGUARD, name="trainguard-smallest-drain", reclaim="smallest"),
    )
}
"""Paper baselines, Lyra and its ablations, reclaim variants, and ours (`easy`: shortest first
with EASY backfilling, no loans; `trainguard`; `trainguard` with the paper's two baseline
reclaimers, which pick at the forecast and return at once, to compare reclaiming alone; and
with smallest-count-first choosing the servers to drain, to compare the choice alone)."""


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Cluster sizes and the knobs of the trace-driven simulator."""

    training_servers: int = 64
    inference_servers: int = 64
    gpus_per_server: int = 8
    training_gpu_type: str | None = None
    inference_gpu_type: str | None = None
    inference_speed: float = 1.0
    reserve_fraction: float = 0.02
    forecast_horizon_s: float = 600.0
    lend_horizon_s: float = 7200.0
    """How far ahead a server must look idle to be lent under a `loan_hold` policy."""
    lend_margin: float = 0.01
    """Share of the inference cluster kept back, on top of the reserve, when a `loan_hold`
    policy lends (not when it reclaims): a deadband against noise in the load."""
    load_phase_s: float = 0.0
    """Inference clock at the trace's t=0 (seconds after 00:00; the load troughs at 02:00)."""
    scaling_exponent: float = 1.0
    checkpoint_interval_s: float = 1800.0
    restart_overhead_s: float = 60.0
    failure_rate_per_server_day: float = 0.0
    risky_fraction: float = 0.1
    risky_multiplier: float = 20.0
    repair_s: float = 4 * 3600.0
    seed: int = 0
    check_invariants: bool = False
