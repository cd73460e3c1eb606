"""Background faults drawn at a rate per GPU-day, with the Llama 3 interruption mix.

Llama 3 paper (Meta, 2024), Table 5: 419 unexpected interruptions in 54 days on 16,384 GPUs.
Root causes are mapped to the twin's fault kinds; categories with no twin equivalent
(host maintenance, dependencies, ...) are mapped to the nearest hardware or host kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.cluster import Hardware
from sim.scenario import (
    GpuFault,
    JobFault,
    NicFault,
    NodeFault,
    RankFault,
    Scenario,
    StragglerFault,
    SwitchFault,
)

# (kind, interruptions in the Llama 3 table that map to it)
LLAMA3_MIX: tuple[tuple[str, int], ...] = (
    ("xid79", 148),  # faulty GPU
    ("ecc_dbe", 72 + 19),  # GPU HBM3 memory, GPU SRAM memory
    ("user_error", 54 + 12),  # software bug, dependency
    ("nic_down", 35 + 7),  # network switch/cable, NIC
    ("host_oom", 32 + 3),  # host maintenance, unplanned restarts, CPU
    ("gsp_timeout", 17),  # GPU system processor
    ("hang", 7),  # NCCL watchdog timeouts
    ("nan", 6),  # silent data corruption
    ("disk_full", 5),  # storage
    ("straggler", 6),  # GPU thermal interface + sensor
)


def draw_random_faults(scenario: Scenario, hw: Hardware, rng: np.random.Generator) -> list[Any]:
    """Return the random faults of a scenario (none when the rate is 0)."""
    spec = scenario.random_faults
    gpu_days = hw.gpus * scenario.duration_s / 86_400
    count = int(rng.poisson(spec.rate_per_gpu_day * gpu_days)) if spec.rate_per_gpu_day else 0
    if not count:
        return []
    kinds = [k for k, _ in LLAMA3_MIX]
    weights = np.array([w for _, w in LLAMA3_MIX], float)
    if spec.mix == "uniform":
        weights[:] = 1.0
    weights /= weights.sum()
    faults = []
    for _ in range(count):
        kind = str(rng.choice(kinds, p=weights))
        at_s = float(rng.uniform(0, scenario.duration_s))
        faults.append(_make(kind, at_s, scenario, hw, rng))
    faults = [f for f in faults if f is not None]
    if spec.precursor_share:
        faults = [_with_precursor(f, scenario, rng) for f in faults]
    return faults


# Which counters worsen before each failure kind (HBM failures show in ECC; a GPU that
# falls off the bus more often shows heat or a degrading PCIe link first).
PRECURSOR_STYLES: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "ecc_dbe": (("memory", "thermal", "pcie"), (0.8, 0.1, 0.1)),
    "xid79": (("memory", "thermal", "pcie"), (0.3, 0.3, 0.4)),
}


def _with_precursor(fault: Any, s: Scenario, rng: np.random.Generator) -> Any:
    """Turn a share of GPU hardware failures into a precursor that leads to them."""
    if not isinstance(fault, GpuFault) or fault.kind not in PRECURSOR_STYLES:
        return fault
    if rng.random() >= s.random_faults.precursor_share:
        return fault
    styles, weights = PRECURSOR_STYLES[fault.kind]
    low, high = s.random_faults.precursor_lead_s
    return GpuFault(
        kind="precursor",
        node=fault.node,
        gpu=fault.gpu,
        at_s=fault.at_s,
        then=fault.kind,
        lead_s=float(rng.uniform(low, high)),
        style=str(rng.choice(styles, p=weights)),
        intensity=float(np.clip(np.exp(rng.normal(np.log(0.05), 1.2)), 0.002, 10)),
    )


def _make(kind: str, at_s: float, s: Scenario, hw: Hardware, rng: np.random.Generator) -> Any:
    node, gpu = int(rng.integers(hw.nodes)), int(rng.integers(hw.gpus_per_node))
    if kind in ("xid79", "ecc_dbe", "gsp_timeout", "nan"):
        return GpuFault(kind=kind, node=node, gpu=gpu, at_s=at_s)
    if kind == "straggler":
        return StragglerFault(
            kind="straggler",
            node=node,
            gpu=gpu,
            at_s=at_s,
            slowdown=float(rng.uniform(1.15, 1.6)),
            cause="thermal",
        )
    if kind == "nic_down":
        if rng.random() < 0.1:
            rack = int(rng.integers(-(-hw.nodes // hw.nodes_per_rack)))
            return SwitchFault(
                kind="switch_down", rack=rack, rail=int(rng.integers(hw.nics_per_node)), at_s=at_s
            )
        return NicFault(
            kind="nic_down", node=node, nic=int(rng.integers(hw.nics_per_node)), at_s=at_s
        )
    if kind in ("host_oom", "disk_full"):
        return NodeFault(kind=kind, node=node, at_s=at_s)
    if not s.jobs:
        return None
    job = s.jobs[int(rng.integers(len(s.jobs)))]
    if kind == "hang":
        return RankFault(kind="hang", job=job.id, rank=int(rng.integers(job.world)), at_s=at_s)
    return JobFault(kind="user_error", job=job.id, at_s=at_s)
