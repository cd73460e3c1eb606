"""Scenarios drawn from a seed: layout, job size, fault kind, place and time.

The diagnosis bench and tests use these so that a rule is judged on placements and timings
nobody chose by hand. Every draw comes from `numpy.random.default_rng(seed)`, so a seed
names one scenario for good. Two families:

- `random_fault_scenario`: one job of 256-4,096 GPUs (a power of two) with a drawn
  TP x PP x DP (x EP) layout, placed at a drawn offset in a slightly larger cluster, one
  fault of a drawn (or given) kind at a drawn GPU, NIC, rack, rank or node, at a drawn time
  after the detectors' warm-up, an NCCL watchdog timeout of 5-30 minutes, step-to-step
  jitter of 0.2-1.5% and benign heat and throttling (`NOISY_WEAR`). Faults that
  stall the job run until two minutes after the watchdog fires, so its late consequences
  (timeouts on every rank, the crash) are in the telemetry.
- `failslow_scenario`: one GPU slows by a drawn factor under a given TP size; the run lasts
  ten minutes past the onset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.wear import BENIGN_HEAT

# The kinds drawn, fixed so that a seed keeps naming the same scenario when kinds are added
# (the fail-slow kinds nic_slow and host_slow have their own draw: failslow_sweep_scenario).
DRAWN_KINDS = (
    "xid79",
    "ecc_dbe",
    "gsp_timeout",
    "nvlink",
    "nan",
    "straggler",
    "nic_down",
    "nic_flap",
    "switch_down",
    "hang",
    "user_error",
    "app_xid",
    "host_oom",
    "disk_full",
)
SIZES = (256, 512, 1024, 2048, 4096)
# Faults that stop the job's progress: their runs go on until after the watchdog fires.
STALLING = frozenset({"hang", "xid79", "ecc_dbe", "gsp_timeout", "nic_down", "switch_down"})
WATCHDOG_S = (300.0, 1800.0)  # the NCCL watchdog timeout is drawn in this range
FAILSLOW_AFTER_S = 600.0  # a fail-slow run lasts this long after the onset
GPUS_PER_NODE = 8
# Benign noise on: hot aisles, degrading fans, HBM-bound and power-brake throttling, each
# throttled GPU 5% slower while it throttles (and step-to-step jitter drawn per job).
NOISY_WEAR = {**BENIGN_HEAT.model_dump(), "throttle_slowdown": 0.05}


def _layout(rng: np.random.Generator, world: int, tp: int | None = None) -> dict[str, int]:
    """Draw a TP x PP x DP (x EP) layout of `world` ranks (TP within a node)."""
    if tp is None:
        tp = int(rng.choice([1, 2, 4, 8], p=[0.1, 0.2, 0.3, 0.4]))
    pps = [p for p in (1, 2, 4, 8, 16) if world // (tp * p) >= 4]
    pp = int(rng.choice(pps))
    dp = world // (tp * pp)
    eps = [e for e in (2, 4, 8) if dp % e == 0]
    ep = int(rng.choice(eps)) if eps and rng.random() < 0.3 else 1
    return {"tp": tp, "pp": pp, "dp": dp, "ep": ep}


def _base(rng: np.random.Generator, seed: int, tp: int | None = None) -> dict[str, Any]:
    """Draw the cluster, the job and the telemetry intervals of one scenario."""
    world = int(rng.choice(SIZES))
    layout = _layout(rng, world, tp)
    job_nodes = world // GPUS_PER_NODE
    spare = int(rng.integers(0, max(2, job_nodes // 16)))
    step = float(np.round(rng.uniform(2.0, 8.0), 2))
    return {
        "seed": seed,
        "cluster": {
            "nodes": job_nodes + spare,
            "nodes_per_rack": int(rng.choice([4, 8, 16, 32])),
        },
        "jobs": [
            {
                "id": f"job-{seed}",
                "step_time_s": step,
                **layout,
                "first_node": int(rng.integers(0, spare + 1)),
                "step_jitter": float(np.round(rng.uniform(0.002, 0.015), 4)),
            }
        ],
        "wear": NOISY_WEAR,
        "metrics_interval_s": 1.0 if world <= 512 else 10.0,
        "host_interval_s": 10.0 if world <= 512 else 30.0,
        "watchdog_timeout_s": float(np.round(rng.uniform(*WATCHDOG_S))),
    }


def _onset(rng: np.random.Generator, step_s: float) -> float:
    """Draw a fault's onset: after the detectors' baselines are learned (25-45 steps in)."""
    return float(np.round(rng.uniform(25, 45) * step_s, 1))


def random_fault_scenario(seed: int, kind: str | None = None) -> dict[str, Any]:
    """Return a scenario (a dict `parse_scenario` accepts) drawn from `seed`."""
    rng = np.random.default_rng(seed)
    spec = _base(rng, seed)
    if kind is None:
        kind = str(rng.choice(DRAWN_KINDS))
    job = spec["jobs"][0]
    world = job["tp"] * job["pp"] * job["dp"]
    first = job["first_node"]
    node = first + int(rng.integers(world // GPUS_PER_NODE))
    gpu = int(rng.integers(GPUS_PER_NODE))
    at = _onset(rng, job["step_time_s"])
    fault: dict[str, Any] = {"kind": kind, "at_s": at}
    if kind in ("xid79", "ecc_dbe", "gsp_timeout", "nvlink", "nan"):
        fault.update(node=node, gpu=gpu)
    elif kind == "straggler":
        fault.update(node=node, gpu=gpu, slowdown=float(np.round(rng.uniform(1.2, 1.6), 3)))
    elif kind in ("nic_down", "nic_flap"):
        fault.update(node=node, nic=gpu)
    elif kind == "switch_down":
        fault.update(rack=node // spec["cluster"]["nodes_per_rack"], rail=gpu)
    elif kind == "hang":
        fault.update(job=job["id"], rank=int(rng.integers(world)))
    elif kind in ("user_error", "app_xid"):
        fault.update(job=job["id"])
    elif kind in ("host_oom", "disk_full"):
        fault.update(node=node)
    else:
        raise ValueError(f"unknown fault kind {kind!r}")
    if kind in STALLING:
        spec["duration_s"] = at + spec["watchdog_timeout_s"] + 120
    elif kind == "straggler":
        spec["duration_s"] = at + FAILSLOW_AFTER_S
    else:
        spec["duration_s"] = at + 240
    spec["faults"] = [fault]
    return spec


def failslow_scenario(seed: int, tp: int, slowdown: float | None = None) -> dict[str, Any]:
    """Return a scenario where one GPU of a TP-`tp` job slows by `slowdown` (drawn if None).

    The drawn slowdown (1.03-1.45x of the GPU) spans job-level slowdowns from none to about
    1.3x, since the job already runs at the pace of its slowest healthy GPU.
    """
    rng = np.random.default_rng([seed, tp])
    spec, world = _failslow_base(rng, seed, tp)
    job = spec["jobs"][0]
    node = job["first_node"] + int(rng.integers(world // GPUS_PER_NODE))
    if slowdown is None:
        slowdown = float(np.round(rng.uniform(1.03, 1.45), 3))
    at = _onset(rng, job["step_time_s"])
    spec["duration_s"] = at + FAILSLOW_AFTER_S
    spec["faults"] = [
        {
            "kind": "straggler",
            "node": node,
            "gpu": int(rng.integers(GPUS_PER_NODE)),
            "at_s": at,
            "slowdown": slowdown,
            "cause": "pcie",  # nothing in the GPU's own metrics: only timing can tell
        }
    ]
    return spec


def _failslow_base(rng: np.random.Generator, seed: int, tp: int) -> tuple[dict[str, Any], int]:
    """Draw a fail-slow run's cluster and job, at most 1,024 GPUs (runs are long)."""
    spec = _base(rng, seed, tp=tp)
    job = spec["jobs"][0]
    world = job["tp"] * job["pp"] * job["dp"]
    if world > 1024:  # keep them to a size one core simulates
        job["dp"] = 1024 // (job["tp"] * job["pp"])
        job["ep"] = 1 if job["dp"] % job["ep"] else job["ep"]
        world = 1024
        spec["cluster"]["nodes"] = world // GPUS_PER_NODE + job["first_node"]
        spec["metrics_interval_s"], spec["host_interval_s"] = 10.0, 30.0
    return spec, world


# Fail-slow sweep: half the draws aim at the hard band (about 1.03-1.10x of the job), half
# above it. GPU and host slowdowns are relative to the job's pace (its slowest healthy GPU);
# a NIC's multiplies the transfer time of the traffic crossing it (inter-node collectives are
# ~6-12% of a step, so 1.5-6x costs the job about 3-40%).
SWEEP_PACE = ((1.035, 1.11), (1.11, 1.36))
SWEEP_NIC = ((1.5, 2.6), (2.6, 6.0))
SWEEP_COMPONENTS = ("gpu", "nic", "host")


def failslow_sweep_scenario(seed: int, tp: int, component: str = "gpu") -> dict[str, Any]:
    """Return a run where one GPU, NIC or host of a TP-`tp` job turns slow by a drawn amount.

    Nothing in the slow part's own metrics shows it (PCIe-like causes): only timing can tell.
    The run lasts ten minutes past the onset.
    """
    if component not in SWEEP_COMPONENTS:
        raise ValueError(f"unknown fail-slow component {component!r}")
    rng = np.random.default_rng([seed, tp, SWEEP_COMPONENTS.index(component), 7])
    spec, world = _failslow_base(rng, seed, tp)
    # Only step and collective timing can show these parts: coarse metrics keep runs short.
    spec["metrics_interval_s"], spec["host_interval_s"] = 10.0, 30.0
    job = spec["jobs"][0]
    node = job["first_node"] + int(rng.integers(world // GPUS_PER_NODE))
    unit = int(rng.integers(GPUS_PER_NODE))
    bands = SWEEP_NIC if component == "nic" else SWEEP_PACE
    low, high = bands[int(rng.integers(len(bands)))]
    slowdown = float(np.round(rng.uniform(low, high), 3))
    at = _onset(rng, job["step_time_s"])
    spec["duration_s"] = at + FAILSLOW_AFTER_S
    fault: dict[str, Any] = {"at_s": at, "node": node, "slowdown": slowdown}
    if component == "gpu":
        fault.update(kind="straggler", gpu=unit, cause="pcie", relative_to="job")
    elif component == "nic":
        fault.update(kind="nic_slow", nic=unit)
    else:
        fault.update(kind="host_slow", relative_to="job")
    spec["faults"] = [fault]
    return spec
