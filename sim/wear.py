"""GPU wear: benign error counters on healthy GPUs and the precursors of failing ones.

Real fleets are not clean: a few percent of healthy GPUs log single-bit ECC errors from a
weak HBM cell for months, some sit behind a marginal riser that replays PCIe packets, some
have an NVLink lane with CRC errors, and benign row remaps wait for the next GPU reset.
Healthy GPUs throttle too: nodes in a hot aisle and GPUs behind a degrading fan run near
the slowdown temperature under load and NVML reports SW thermal slowdown (and HW slowdown
past it), HBM-bound jobs trip SW thermal slowdown at normal core temperature on a few
GPUs, and power-brake events assert HW slowdown on a whole node for a moment. A
GPU that is about to fail shows a precursor only sometimes, and then with a strength that
overlaps the benign tail. Both sides live here so every detector and predictor sees the same
wear, at any scrape interval (all rates are per second and scaled by dt).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from sim.gpus import COMPUTE, THROTTLE_HW_SLOWDOWN, THROTTLE_SW_THERMAL, GpuState

PrecursorStyle = Literal["memory", "thermal", "pcie"]
_DAY = 86_400.0


class WearSpec(BaseModel):
    """Benign wear of healthy GPUs (shares of the fleet and their error rates).

    Benign heat and throttling are off by default: the twin's diagnosis scenarios assert
    that a healthy cluster shows no fault signature. `BENIGN_HEAT` turns them on.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    weak_cell_share: float = Field(0.04, ge=0, le=1, description="GPUs with benign SBEs.")
    weak_cell_sbe_per_day: float = Field(20.0, ge=0, description="Median benign SBE rate.")
    benign_remap_per_day: float = Field(0.05, ge=0, description="Pending remaps, weak GPUs.")
    riser_share: float = Field(0.02, ge=0, le=1, description="GPUs with benign PCIe replays.")
    riser_replay_per_day: float = Field(30.0, ge=0, description="Median benign replay rate.")
    nvlink_share: float = Field(0.01, ge=0, le=1, description="GPUs with benign NVLink CRCs.")
    nvlink_crc_per_day: float = Field(40.0, ge=0, description="Median benign CRC rate.")
    hot_node_share: float = Field(0.0, ge=0, le=1, description="Nodes in a hot aisle.")
    hot_node_c: tuple[float, float] = Field((12.0, 20.0), description="Hot-aisle excess, C.")
    fan_share: float = Field(0.0, ge=0, le=1, description="GPUs behind a degrading fan.")
    fan_c_per_day: tuple[float, float] = Field(
        (0.5, 2.0), description="Warming of a degrading fan's GPU, C per day (cap 25 C)."
    )
    hbm_throttle_share: float = Field(
        0.0, ge=0, le=1, description="GPUs whose HBM-bound jobs trip SW thermal slowdown."
    )
    power_brake_per_node_day: float = Field(
        0.0, ge=0, description="Power-brake events (HW slowdown on a busy node's GPUs)."
    )
    throttle_slowdown: float = Field(
        0.0, ge=0, le=1, description="Extra compute time of a GPU while it throttles (0.05: 5%)."
    )
    slowdown_c: float = Field(
        84.0, description="Core temperature around which SW thermal slowdown engages."
    )


BENIGN_HEAT = WearSpec(
    hot_node_share=0.03, fan_share=0.015, hbm_throttle_share=0.02, power_brake_per_node_day=0.02
)
"""Benign wear plus healthy GPUs that run hot and throttle (the prediction fleet's)."""


def _rates(
    rng: np.random.Generator, shape: tuple[int, int], share: float, median: float
) -> np.ndarray:
    """Return per-GPU rates per second: lognormal around median on `share` of the GPUs."""
    hit = rng.random(shape) < share
    return np.where(hit, median * np.exp(rng.normal(0, 1.0, shape)) / _DAY, 0.0)


class Wear:
    """Benign counters of healthy GPUs, advanced every tick; its own random stream."""

    def __init__(self, shape: tuple[int, int], rng: np.random.Generator, spec: WearSpec) -> None:
        self.rng = rng
        self.spec = spec
        self.sbe_rate = _rates(rng, shape, spec.weak_cell_share, spec.weak_cell_sbe_per_day)
        self.replay_rate = _rates(rng, shape, spec.riser_share, spec.riser_replay_per_day)
        self.crc_rate = _rates(rng, shape, spec.nvlink_share, spec.nvlink_crc_per_day)
        self.remap_rate = np.where(self.sbe_rate > 0, spec.benign_remap_per_day / _DAY, 0.0)
        self.pending_until = np.zeros(shape)
        nodes, gpus = shape
        hot = rng.random((nodes, 1)) < spec.hot_node_share
        self.node_heat = np.where(hot, rng.uniform(*spec.hot_node_c, (nodes, 1)), 0.0)
        self.fan_rate = np.where(
            rng.random(shape) < spec.fan_share, rng.uniform(*spec.fan_c_per_day, shape) / _DAY, 0.0
        )
        # A fan started degrading up to a month before the run (or starts during it).
        self.fan_since = rng.uniform(-30 * _DAY, 30 * _DAY, shape)
        self.hbm_duty = np.where(
            rng.random(shape) < spec.hbm_throttle_share, rng.uniform(0.05, 0.4, shape), 0.0
        )

    def tick(self, state: GpuState, t: float, dt: float) -> list[tuple[int, int]]:
        """Add this tick's benign errors; return the GPUs with a new (benign) pending remap.

        Benign pending remaps clear at a later GPU reset.
        """
        c, rng = state.counters, self.rng
        sbe = rng.poisson(self.sbe_rate * dt * rng.gamma(0.5, 2.0, self.sbe_rate.shape))
        c["ecc_sbe_vol"] += sbe
        c["ecc_sbe_agg"] += sbe
        c["pcie_replay"] += rng.poisson(self.replay_rate * dt)
        crc = rng.poisson(self.crc_rate * dt)
        c["nvlink_crc_flit"] += crc
        c["nvlink_replay"] += rng.poisson(crc * 0.1)
        remap = rng.random(self.remap_rate.shape) < self.remap_rate * dt
        if remap.any():
            c["remapped_correctable"] += remap
            c["remap_pending"][remap] = 1
            self.pending_until[remap] = t + rng.uniform(2, 36, int(remap.sum())) * 3600
        cleared = (self.pending_until > 0) & (self.pending_until <= t)
        if cleared.any():
            c["remap_pending"][cleared] = 0
            self.pending_until[cleared] = 0
        self._heat(state, t, dt)
        return [(int(n), int(g)) for n, g in zip(*np.nonzero(remap), strict=True)]

    def _heat(self, state: GpuState, t: float, dt: float) -> None:
        """Warm hot-aisle and degraded-fan GPUs; set the slowdowns NVML would report."""
        spec, rng = self.spec, self.rng
        fan = np.clip((t - self.fan_since) * self.fan_rate, 0.0, 25.0)
        state.cooling_offset[:] = self.node_heat + fan
        busy = state.activity == COMPUTE
        over = (state.temp - spec.slowdown_c) / 1.5
        # Below the slowdown band (4 C short of it) the firmware never slows the clocks.
        near = busy & (state.temp > spec.slowdown_c - 4.0)
        sw = near & (rng.random(state.shape) < 1.0 / (1.0 + np.exp(-over)))
        sw |= busy & (rng.random(state.shape) < self.hbm_duty)
        hw = busy & (state.temp > spec.slowdown_c + 5.0)
        brake = rng.random((state.shape[0], 1)) < spec.power_brake_per_node_day * dt / _DAY
        hw |= busy & brake
        state.benign_throttle[:] = np.where(sw, THROTTLE_SW_THERMAL, 0) | np.where(
            hw, THROTTLE_HW_SLOWDOWN, 0
        )


def precursor_step(
    state: GpuState,
    rng: np.random.Generator,
    node: int,
    gpu: int,
    progress: float,
    dt: float,
    style: PrecursorStyle = "memory",
    intensity: float = 1.0,
) -> bool:
    """Worsen one failing GPU for dt seconds at `progress` (0..1) toward its failure.

    Returns True when a row was newly remapped (the caller logs its Xid 63).
    """
    c = state.counters
    p2 = progress**2
    remapped = False
    if style == "memory":
        sbe = int(rng.poisson(intensity * (0.05 + 2.0 * p2) * dt))
        c["ecc_sbe_vol"][node, gpu] += sbe
        c["ecc_sbe_agg"][node, gpu] += sbe
        if rng.random() < min(1.0, intensity * (0.001 + 0.005 * progress) * dt):
            c["remapped_correctable"][node, gpu] += 1
            c["remap_pending"][node, gpu] = 1
            remapped = True
        state.temp_offset[node, gpu] = 4.0 * progress * min(intensity, 1.5)
    elif style == "thermal":
        state.temp_offset[node, gpu] = 9.0 * progress * intensity
        if progress > 0.6 and rng.random() < 0.5:
            state.throttle[node, gpu] |= THROTTLE_SW_THERMAL
        c["ecc_sbe_vol"][node, gpu] += int(rng.poisson(0.002 * intensity * dt * progress))
    else:
        c["pcie_replay"][node, gpu] += int(rng.poisson(intensity * (0.005 + 0.1 * p2) * dt))
    return remapped
