"""Recovery benchmark: fault onset -> job progressing again, per phase, and a 90-day ETTR model.

Part 1 (measured): the embedded pipeline (in-process bus + chdb). A simulated trainer writes
`train_steps` rows to chdb; a GPU-fault incident goes on the incidents topic; the engine
consumes it and runs the default ladder in `auto` mode: isolate (real Slurm when
TG_SLURM_CONF points at a running cluster, else an in-memory node ledger) -> acquire (a
warm-standby pool) -> restart (stops and relaunches the trainer) -> verify (real chdb query of
train_steps). Phase times come from the engine's own audit rows.

Part 2 (model): ETTR of a 9,600-GPU job over 90 days, faults drawn at the Llama 3 rate and
mix (sim/random_faults.py). Detection latency per kind is read from bench/results/
diagnosis.json, localization CPU from bench/results/localization.json, the engine's own
overhead from part 1; checkpoint interval and restart costs are the documented PARAMS.

Part 3 (measured): the same trainer, which saves a checkpoint every 40 steps (10 s), gets a
`gpu.predicted` incident at a random point of an interval; the default policy drains at the
next checkpoint. Steps lost at the restart, against the hardware-fault runs of part 1 (the
same job failing at a random point of an interval).

    python -m bench.recovery [--runs 5] [--seeds 50] [--recheck-s 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from actions.executors.slurm import Slurm, SlurmError
from actions.model import ActionKind
from actions.policy import load_policy, parse_policy
from bench.recovery_rig import Rig, audit_time, make_incident
from diagnosis.model import Category
from sim.random_faults import LLAMA3_MIX

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "recovery.json"
MEASURED = "2026-12-03"
PARAMS: dict[str, Any] = {
    "job_gpus": 9600,
    "days": 90,
    # Llama 3 (Meta 2024, Table 5): 419 unexpected interruptions in 54 days on 16,384 GPUs.
    "faults_per_gpu_day": 419 / (54 * 16384),
    # Same checkpoint interval for both systems (async checkpointing every 5 minutes); the
    # expected lost work per fault is half of it. Sensitivity to it is reported too.
    "checkpoint_interval_s": 300.0,
    # TrainGuard: relaunch of the 9,600-GPU job on a warm-standby replacement (process start,
    # NCCL init, checkpoint load from memory/local disk): assumed, not measured here.
    "tg_restart_s": 180.0,
    # Baseline: the NCCL watchdog (10 min) notices a stalled collective; an on-call engineer
    # finds and drains the bad node by hand; a cold requeue waits for scheduling and reloads
    # the checkpoint from shared storage.
    "baseline_watchdog_s": 600.0,
    "baseline_manual_triage_s": 1800.0,
    "baseline_restart_s": 600.0,
    # Silent faults the watchdog never sees: a NaN is noticed on the loss curve, a straggler
    # when someone looks at throughput.
    "baseline_nan_notice_s": 1800.0,
    "baseline_straggler_notice_s": 4 * 3600.0,
    "straggler_slowdown": (1.15, 1.6),  # as drawn by sim/random_faults.py
}


LADDER = """\
version: 1
rules:
  - name: hardware-fault
    match: {categories: [gpu.hardware], min_score: 0.5}
    ladder: [isolate_node, request_capacity, restart_job, {kind: verify_progress, timeout_s: 60}]
"""


def _slurm() -> Slurm | None:
    conf = os.environ.get("TG_SLURM_CONF")
    if not conf:
        from trainguard.settings import local_services_env

        conf = local_services_env(ROOT).get("TG_SLURM_CONF")
    if not conf or not Path(conf).exists():
        return None
    try:
        slurm = Slurm(conf)
        return slurm if "UP" in slurm.run(["scontrol", "ping"]) else None
    except SlurmError:
        return None


def measure_once(n: int, slurm: Slurm | None, tmp: str, recheck_s: float) -> dict[str, float]:
    """Run one fault through the embedded pipeline; return seconds per phase.

    Verify is a waiting step: checked as the restart finishes, then every `recheck_s` until
    the relaunched trainer has logged two steps.
    """
    rig = Rig(f"chdb{n}", tmp, slurm, "node-0020" if slurm else "node-0001", parse_policy(LADDER))
    rig.start(recheck_s)
    # the fault at a random point of a checkpoint interval: the job stops making progress
    rig.sleep_into_interval([n, 7])
    rig.trainer.running.clear()
    incident = make_incident(n, rig.node, "job-bench")
    t0 = rig.send(incident)
    rig.wait_closed(incident.id, t0)
    total = time.monotonic() - t0
    rig.stop.set()
    phases = _phases(rig.events(incident.id))
    phases["total_to_progress"] = round(total, 3)
    phases["lost_steps"] = float(rig.trainer.lost[-1]) if rig.trainer.lost else float("nan")
    rig.close()
    return phases


def measure_predicted_once(
    n: int, slurm: Slurm | None, tmp: str, recheck_s: float
) -> dict[str, Any]:
    """Drain a GPU predicted to fail at its job's next checkpoint; return lost steps and times.

    The default policy's `predicted-failure` ladder (await_checkpoint -> isolate -> acquire ->
    restart -> verify -> inspection) over the same trainer, which saves every `save_every`
    steps and logs Megatron-LM's line for it; the alert comes at a random point of an
    interval, and the consumer re-checks the wait every `recheck_s`.
    """
    from actions.checkpoint import AwaitCheckpoint, LogCheckpoints
    from actions.executors.webhook import NoEndpoint

    rig = Rig(f"pred{n}", tmp, slurm, "node-0021" if slurm else "node-0001", load_policy())
    rig.engine.registry.register(AwaitCheckpoint(LogCheckpoints(rig.store)))
    rig.engine.registry.register(NoEndpoint(ActionKind.HARDWARE_INSPECTION))
    rig.start(recheck_s)
    rig.sleep_into_interval([n, 8])
    incident = make_incident(n, rig.node, "job-bench", Category.GPU_PREDICTED)
    t0 = rig.send(incident)
    while time.monotonic() - t0 < 120 and not rig.trainer.lost:
        time.sleep(0.02)
    alert_to_restart = time.monotonic() - t0
    rig.wait_closed(incident.id, t0)
    rig.stop.set()
    events = rig.events(incident.id)
    done = [json.loads(d) for d in events[events["event"] == "done"]["detail"]]
    saved_at = next(d["outputs"]["saved_at"] for d in done if d["phase"] == "checkpoint")
    restarted = events[(events["event"] == "executing") & (events["kind"] == "restart_job")]
    restart_t = audit_time(restarted.iloc[0])
    lost = float(rig.trainer.lost[-1]) if rig.trainer.lost else float("nan")
    rig.close()
    return {
        "lost_steps": lost,
        "alert_to_restart_s": round(alert_to_restart, 3),
        "checkpoint_to_restart_s": round(
            restart_t - datetime.fromisoformat(saved_at).timestamp(), 3
        ),
        "closed": bool((events["event"] == "closed").any()),
    }


def _phases(events: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    first_exec = events[events["event"] == "executing"].iloc[0]
    seen = events[events["event"] == "seen"].iloc[0]
    # audit_time: a difference of the unsigned columns wrapped to 2^32 us (4295 s in two of
    # the five runs of the first 2026-12-01 run)
    out["decide_and_plan"] = round(audit_time(first_exec) - audit_time(seen), 4)
    for detail in events[events["event"] == "done"]["detail"]:
        d = json.loads(detail)
        out[d["phase"]] = round(float(d["duration_s"]), 4)
    return out


def _inputs() -> tuple[dict[str, float], dict[str, float]]:
    """Detection p50 per fault kind (diagnosis.json) and localization CPU (localization.json)."""
    diag = json.loads((ROOT / "bench/results/diagnosis.json").read_text())["kinds"]
    loc = json.loads((ROOT / "bench/results/localization.json").read_text())
    detect = {k: float(v["latency_p50_s"]) for k, v in diag.items()}
    localize = {
        "hang": loc["hang"]["cpu_s"],
        "straggler": loc["straggler"]["cpu_s"],
        "nic_down": loc["network_nic"]["cpu_s"],
    }
    return detect, localize


def _downtime(
    kind: str,
    system: str,
    engine_s: float,
    rng: np.random.Generator,
    detect: dict[str, float],
    localize: dict[str, float],
) -> float:
    """Return seconds of lost training for one fault of a kind under one system."""
    p = PARAMS
    lost_work = rng.uniform(0, p["checkpoint_interval_s"])
    slow = rng.uniform(*p["straggler_slowdown"])
    if system == "trainguard":
        found = detect.get(kind, 0.0) + localize.get(kind, 0.0)
        if kind == "straggler":  # runs slow (not stopped) until found
            return found * (1 - 1 / slow) + engine_s + p["tg_restart_s"] + lost_work
        return found + engine_s + p["tg_restart_s"] + lost_work
    if kind == "straggler":
        return (
            p["baseline_straggler_notice_s"] * (1 - 1 / slow)
            + p["baseline_manual_triage_s"]
            + p["baseline_restart_s"]
            + lost_work
        )
    notice = p["baseline_nan_notice_s"] if kind == "nan" else p["baseline_watchdog_s"]
    triage = 0.0 if kind == "user_error" else p["baseline_manual_triage_s"]
    return notice + triage + p["baseline_restart_s"] + lost_work


def ettr(engine_s: float, seeds: int, interval_s: float | None = None) -> dict[str, Any]:
    """Return mean/p5/p95 ETTR of both systems over `seeds` simulated 90-day runs."""
    if interval_s is not None:
        PARAMS["checkpoint_interval_s"] = interval_s
    detect, localize = _inputs()
    kinds = [k for k, _ in LLAMA3_MIX]
    weights = np.array([w for _, w in LLAMA3_MIX], float)
    weights /= weights.sum()
    horizon = PARAMS["days"] * 86_400.0
    rate = PARAMS["faults_per_gpu_day"] * PARAMS["job_gpus"] * PARAMS["days"]
    out: dict[str, Any] = {}
    for system in ("trainguard", "baseline"):
        values, counts = [], []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            n = int(rng.poisson(rate))
            lost = sum(
                _downtime(str(k), system, engine_s, rng, detect, localize)
                for k in rng.choice(kinds, size=n, p=weights)
            )
            values.append(max(0.0, 1 - lost / horizon))
            counts.append(n)
        out[system] = {
            "ettr_mean": round(float(np.mean(values)), 4),
            "ettr_p5": round(float(np.percentile(values, 5)), 4),
            "ettr_p95": round(float(np.percentile(values, 95)), 4),
            "faults_mean": round(float(np.mean(counts)), 1),
        }
    return out


def main() -> None:
    """Measure, model, print and write bench/results/recovery.json."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument(
        "--recheck-s", type=float, default=1.0, help="TG_ACT_RECHECK_S (verify, predicted drain)"
    )
    args = parser.parse_args()
    slurm = _slurm()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [measure_once(i, slurm, tmp, args.recheck_s) for i in range(args.runs)]
    phases = {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}
    with tempfile.TemporaryDirectory() as tmp:
        predicted = [
            measure_predicted_once(i, slurm, tmp, args.recheck_s) for i in range(args.runs)
        ]
    lost_pred = statistics.median(r["lost_steps"] for r in predicted)
    engine_s = phases["decide_and_plan"] + phases.get("isolate", 0) + phases.get("acquire", 0)
    base = PARAMS["checkpoint_interval_s"]
    model = ettr(engine_s, args.seeds, base)
    sensitivity = {str(int(c)): ettr(engine_s, args.seeds, c) for c in (600.0, 1800.0)}
    PARAMS["checkpoint_interval_s"] = base
    result = {
        "measured": MEASURED,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "embedded": {
            "isolation": "slurm" if slurm else "in-memory ledger",
            "runs": args.runs,
            "phases_median_s": phases,
            "per_run": runs,
        },
        "predicted_drain": {
            "what": "a GPU predicted to fail, drained at its job's next checkpoint (default "
            "policy, predicted-failure rule) against the same job failing at a random time "
            "(the hardware-fault ladder above); lost = steps since the last checkpoint at the "
            "restart",
            "trainer": {"step_s": 0.25, "save_every_steps": 40, "checkpoint_interval_s": 10.0},
            "recheck_s": args.recheck_s,
            "runs": args.runs,
            "lost_steps_median": lost_pred,
            "unplanned_lost_steps_median": phases["lost_steps"],
            "lost_ratio_unplanned_over_predicted": round(
                phases["lost_steps"] / max(lost_pred, 1.0), 2
            ),
            "checkpoint_to_restart_s_median": round(
                statistics.median(r["checkpoint_to_restart_s"] for r in predicted), 3
            ),
            "alert_to_restart_s_median": round(
                statistics.median(r["alert_to_restart_s"] for r in predicted), 3
            ),
            "per_run": predicted,
        },
        "ettr_model": {
            "params": PARAMS,
            "engine_overhead_s": round(engine_s, 4),
            "detection_from": "bench/results/diagnosis.json (latency_p50_s)",
            "localization_from": "bench/results/localization.json (cpu_s)",
            **model,
            "checkpoint_sensitivity": sensitivity,
            "byterobust_reported": 0.97,
            "target": 0.98,
            "target_met": model["trainguard"]["ettr_mean"] >= 0.98,
        },
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
