"""Drawn suites of the diagnosis bench: fault scenarios, late consequences, fail-slow sweep.

Every scenario comes from `sim.generate` and a seed. Seeds below `TUNING_SEEDS_BELOW` were
used while tuning the detectors and the merge rule (`TUNING_SEEDS_USED` lists the ones
actually run); the bench evaluates on seeds from there on. The fail-slow sweep measures each
run's job-level slowdown from the run's own step records (`job_slowdown`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from diagnosis.replay import iter_family
from ingest.schema import TrainStep
from sim.generate import STALLING, failslow_sweep_scenario, random_fault_scenario
from sim.twin import DEFAULT_START

TUNING_SEEDS_BELOW = 1000  # seeds used while tuning the detectors and the merge rule
TUNING_SEEDS_USED = {  # the seeds actually run while tuning
    "random_fault_scenario": {"hang": [1, 2, 3]},
    "failslow_scenario": {"4": [1, 2, 3]},
    "failslow_sweep_scenario": {
        **{str(s): ["gpu-tp2", "gpu-tp4", "gpu-tp8", "nic", "host"] for s in (1, 2, 3)},
        **{str(s): ["nic"] for s in range(4, 29)},
    },
    "hand_written_failslow": ["64 GPUs, seed 11: nic_slow, host_slow, straggler (tp 2/4/8)"],
    "healthy_noise": [7],
}
FAILSLOW_TP = (2, 4, 8)
LATE_KINDS = tuple(sorted(STALLING - {"hang"}))  # other faults that stall the job
SLOW_KINDS = {"straggler": "gpu", "nic_slow": "nic", "host_slow": "host"}
DRAWN_PREFIXES = ("random/", "late/", "failslow/")


def random_scenarios(count: int, seed_base: int) -> list[tuple[str, dict[str, Any]]]:
    """Return `count` drawn scenarios, one per seed from seed_base on."""
    return [(f"random/{s}", random_fault_scenario(s)) for s in range(seed_base, seed_base + count)]


def late_scenarios(count: int, seed_base: int) -> list[tuple[str, dict[str, Any]]]:
    """Return `count` drawn runs of faults that stall the job, so the watchdog fires late.

    Even seeds hang a rank (the NCCL watchdog's timeouts on every rank come 5-30 minutes
    later); odd seeds cycle through the other stalling kinds. Everything else (layout,
    256-4,096 GPUs, place, time, the watchdog timeout) is drawn from the seed.
    """
    return [
        (f"late/{s}", random_fault_scenario(s, _late_kind(s)))
        for s in range(seed_base, seed_base + count)
    ]


def _late_kind(seed: int) -> str:
    return "hang" if seed % 2 == 0 else LATE_KINDS[(seed // 2) % len(LATE_KINDS)]


def failslow_scenarios(count: int, seed_base: int) -> list[tuple[str, dict[str, Any]]]:
    """Return, per seed, a slow GPU under each TP size 2/4/8, then a slow NIC and a slow host.

    Interleaved by seed, so an interrupted run still covers every TP size and component.
    """
    out = []
    for s in range(seed_base, seed_base + count):
        out += [(f"failslow/gpu-tp{tp}/{s}", failslow_sweep_scenario(s, tp)) for tp in FAILSLOW_TP]
        tp = FAILSLOW_TP[s % len(FAILSLOW_TP)]
        out.append((f"failslow/nic/{s}", failslow_sweep_scenario(s, tp, "nic")))
        out.append((f"failslow/host/{s}", failslow_sweep_scenario(s, tp, "host")))
    return out


def job_slowdown(out: Path, fault: dict[str, Any]) -> float | None:
    """Return the job's median step time after a slowdown's onset over the one before it.

    Read from the run's own step records (what the trainer logged), skipping warm-up and the
    step in flight at the onset; the scorer's measure of how much the fault cost the job.
    """
    onset = DEFAULT_START.timestamp() + fault["onset_s"]
    before: list[float] = []
    after: list[float] = []
    for step in iter_family(out / "train_steps.jsonl.gz"):
        if not isinstance(step, TrainStep) or step.rank is not None or not step.step_time_s:
            continue
        ts = step.ts.timestamp()
        if step.step >= 5 and ts < onset:
            before.append(step.step_time_s)
        elif ts > onset + 2 * step.step_time_s:
            after.append(step.step_time_s)
    if not before or not after:
        return None
    return round(float(np.median(after) / np.median(before)), 4)


def slow_fields(out: Path, fault: dict[str, Any]) -> dict[str, Any]:
    """Return what a fail-slow run records: component, injected and job-level slowdowns."""
    if fault["kind"] not in SLOW_KINDS:
        return {}
    return {
        "component": SLOW_KINDS[fault["kind"]],
        "job_slowdown": job_slowdown(out, fault),
        "gpu_slowdown": fault.get("gpu_slowdown", fault.get("slowdown")),
        "injected_slowdown": fault.get("slowdown"),
    }


def seeds_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return which seeds were used while tuning and which ones these results come from."""
    drawn = [r for r in runs if r["scenario"].startswith(DRAWN_PREFIXES)]
    evaluated = sorted({r["params"]["seed"] for r in drawn})
    return {
        "tuning_seeds_below": TUNING_SEEDS_BELOW,
        "tuning_seeds_used": TUNING_SEEDS_USED,
        "evaluation_seeds": evaluated,
        "evaluation_untuned": all(s >= TUNING_SEEDS_BELOW for s in evaluated),
    }
