"""The step model of synchronous training: compute, then TP, PP and DP collectives.

A collective completes when its last member arrives; every member's wait is recorded. Step
time, tokens/s and MFU emerge from this, so one slow GPU slows its TP group, its pipeline
replica and, through the data-parallel all-reduce, the whole job. A rank that never arrives
blocks its communicators, then everything that depends on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Shares of a healthy step: forward+backward compute, then the collectives that close it.
COMPUTE, TP_COMM, PP_COMM, DP_COMM, EP_COMM = 0.88, 0.04, 0.02, 0.06, 0.04


@dataclass(frozen=True)
class Phase:
    """One phase of a step for every rank, in (pp, dp, tp) grid order."""

    name: str
    arrive: np.ndarray  # when each rank entered the collective (s from step start); nan: never
    done: np.ndarray  # when it completed for that rank; nan: still waiting


@dataclass(frozen=True)
class StepResult:
    """One step of one job."""

    duration_s: float  # nan when the step never completes
    phases: tuple[Phase, ...]

    @property
    def completed(self) -> bool:
        """Return whether the step finished."""
        return bool(np.isfinite(self.duration_s))


def run_step(
    base_s: float,
    compute_mult: np.ndarray,
    comm_mult: dict[str, np.ndarray],
    absent: np.ndarray | None = None,
    ep: int = 1,
) -> StepResult:
    """Simulate one step over a (pp, dp, tp) grid.

    compute_mult: per-rank compute time multiplier (1 healthy, 1.3 for a 30% straggler).
    comm_mult: per-rank multiplier of each phase's transfer time ("tp", "pp", "dp").
    absent: ranks that never reach their next collective (a hang), or None.
    ep: expert-parallel group size along dp (1: no MoE all-to-all).
    """
    shape = compute_mult.shape
    gone = np.zeros(shape, bool) if absent is None else absent
    compute_end = np.where(gone, np.nan, base_s * COMPUTE * compute_mult)

    # TP: each (pp, dp) row of tp ranks completes when its last member arrives.
    # A throttled GPU runs its NCCL kernels slower too, so TP transfers scale with compute.
    tp_mult = np.maximum(comm_mult.get("tp", np.ones(shape)), compute_mult)
    tp_cost = base_s * TP_COMM * tp_mult.max(axis=2, keepdims=True)
    tp_ready = _max_or_nan(compute_end, axis=2)
    tp_done = np.broadcast_to(tp_ready + tp_cost, shape)
    tp_done = np.where(np.isnan(compute_end), np.nan, tp_done)

    # PP: a pipeline replica (one dp index) moves at the pace of its slowest stage; a blocked
    # stage blocks its neighbours, and through them the whole replica.
    pp_cost = base_s * PP_COMM * comm_mult.get("pp", np.ones(shape)).max(axis=(0, 2), keepdims=True)
    ep_phase: list[Phase] = []
    pp_arrive = tp_done
    if ep > 1:
        # EP: replicas exchange tokens in groups of `ep` along dp (all-to-all per MoE layer).
        pp_dim, dp_dim, tp_dim = shape
        grouped = tp_done.reshape(pp_dim, dp_dim // ep, ep, tp_dim)
        ep_cost = base_s * EP_COMM * comm_mult.get("ep", np.ones(shape)).max()
        ep_done = np.broadcast_to(_max_or_nan(grouped, axis=2) + ep_cost, grouped.shape)
        ep_done = np.where(np.isnan(grouped), np.nan, ep_done).reshape(shape)
        ep_phase = [Phase("ep", tp_done, ep_done)]
        pp_arrive = ep_done
    replica_ready = _max_or_nan(_max_or_nan(pp_arrive, axis=2), axis=0)
    pp_done = np.broadcast_to(replica_ready + pp_cost, shape)
    pp_done = np.where(np.isnan(pp_done), np.nan, pp_done)

    # DP: each (pp, tp) column across replicas all-reduces gradients; every replica takes part.
    dp_cost = base_s * DP_COMM * comm_mult.get("dp", np.ones(shape)).max(axis=1, keepdims=True)
    dp_ready = _max_or_nan(pp_done, axis=1)
    dp_done = np.broadcast_to(dp_ready + dp_cost, shape)
    dp_arrive = pp_done
    end = np.nanmax(dp_done) if not np.isnan(dp_done).any() else np.nan
    phases = (
        Phase("tp", compute_end, tp_done),
        *ep_phase,
        Phase("pp", pp_arrive, pp_done),
        Phase("dp", dp_arrive, np.where(np.isnan(dp_arrive), np.nan, dp_done)),
    )
    return StepResult(float(end), phases)


def _max_or_nan(values: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """Max along an axis, nan if any member is nan (a collective waits for everyone)."""
    out = values.max(axis=axis, keepdims=True)
    return np.where(np.isnan(values).any(axis=axis, keepdims=True), np.nan, out)
