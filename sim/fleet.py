"""A healthy fleet's node telemetry, as agents would scrape it (the digital twin's base layer).

Only what a real agent observes: DCGM-named GPU fields, host and NIC counters. Values follow
a busy training fleet (H100-like clocks, power and temperatures) with per-GPU jitter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from ingest.schema import DiskSample, GpuMetrics, GpuSample, HostMetrics, NicSample


@dataclass(frozen=True)
class FleetSpec:
    """Shape of a simulated fleet."""

    nodes: int = 16
    gpus_per_node: int = 8
    nics_per_node: int = 8
    seed: int = 7

    def node_name(self, index: int) -> str:
        """Return the host name of node `index`."""
        return f"gpu-node-{index:05d}"


class Fleet:
    """Generates scrapes of every node at a given time."""

    def __init__(self, spec: FleetSpec) -> None:
        self.spec = spec
        self._rng = np.random.default_rng(spec.seed)
        shape = (spec.nodes, spec.gpus_per_node)
        self._speed = 1.0 + self._rng.normal(0, 0.02, shape)
        self._sbe = self._rng.poisson(0.3, shape).astype(np.int64)
        self._energy = np.zeros(shape, dtype=np.int64)
        self._rx = np.zeros((spec.nodes, spec.nics_per_node), dtype=np.int64)
        self._uuids = [
            [
                f"GPU-{spec.seed:04x}{n:04x}-{g:04x}-4000-8000-{n * 8 + g:012x}"
                for g in range(spec.gpus_per_node)
            ]
            for n in range(spec.nodes)
        ]

    def gpu_scrapes(self, ts: datetime, interval_s: float = 1.0) -> list[GpuMetrics]:
        """Return one GpuMetrics per node at `ts`."""
        spec = self.spec
        shape = (spec.nodes, spec.gpus_per_node)
        util = np.clip(self._rng.normal(96, 2, shape), 0, 100)
        temp = 62 + 8 * self._speed + self._rng.normal(0, 0.7, shape)
        power = np.clip(560 + 90 * self._speed + self._rng.normal(0, 12, shape), 80, 700)
        self._energy += (power * interval_s * 1000).astype(np.int64)
        self._sbe += self._rng.random(shape) < 0.0005
        out = []
        for n in range(spec.nodes):
            gpus = [
                GpuSample(
                    gpu=g,
                    uuid=self._uuids[n][g],
                    pci_bus_id=f"00000000:{0x18 + 0x10 * g:02x}:00.0",
                    gpu_util=round(float(util[n, g]), 1),
                    mem_copy_util=round(float(util[n, g]) * 0.4, 1),
                    sm_clock=1980.0,
                    mem_clock=2619.0,
                    fb_used=71_000.0,
                    fb_free=10_559.0,
                    gpu_temp=round(float(temp[n, g]), 1),
                    memory_temp=round(float(temp[n, g]) + 6, 1),
                    power_usage=round(float(power[n, g]), 2),
                    power_limit=700.0,
                    total_energy=int(self._energy[n, g]),
                    fan_speed=None,
                    throttle_reasons=0,
                    ecc_sbe_vol=int(self._sbe[n, g]),
                    ecc_dbe_vol=0,
                    ecc_sbe_agg=int(self._sbe[n, g]),
                    ecc_dbe_agg=0,
                    retired_sbe=0,
                    retired_dbe=0,
                    retired_pending=0,
                    remapped_correctable=0,
                    remapped_uncorrectable=0,
                    remap_pending=0,
                    remap_failure=0,
                    pcie_replay=0,
                    nvlink_crc_flit=0,
                    nvlink_crc_data=0,
                    nvlink_replay=0,
                    nvlink_recovery=0,
                    nvlink_bandwidth=None,
                    pcie_tx_throughput=None,
                    pcie_rx_throughput=None,
                    xid=0,
                )
                for g in range(spec.gpus_per_node)
            ]
            out.append(GpuMetrics(node=spec.node_name(n), ts=ts, gpus=gpus))
        return out

    def host_scrapes(self, ts: datetime, interval_s: float = 1.0) -> list[HostMetrics]:
        """Return one HostMetrics per node at `ts`."""
        spec = self.spec
        self._rx += self._rng.integers(40 << 30, 48 << 30, self._rx.shape) * int(interval_s)
        out = []
        for n in range(spec.nodes):
            nics = [
                NicSample(
                    nic=f"mlx5_{i}",
                    port=1,
                    state="ACTIVE",
                    phys_state="LinkUp",
                    rate_gbps=400.0,
                    rx_bytes=int(self._rx[n, i]),
                    tx_bytes=int(self._rx[n, i]),
                    symbol_errors=0,
                    link_error_recovery=0,
                    link_downed=0,
                    rcv_errors=0,
                    xmit_discards=0,
                )
                for i in range(spec.nics_per_node)
            ]
            out.append(
                HostMetrics(
                    node=spec.node_name(n),
                    ts=ts,
                    cpu_util=round(float(self._rng.uniform(20, 35)), 1),
                    load1=round(float(self._rng.uniform(30, 60)), 2),
                    mem_used_bytes=900 << 30,
                    mem_total_bytes=2015 << 30,
                    swap_used_bytes=0,
                    disks=[DiskSample(mount="/", used_bytes=200 << 30, total_bytes=1800 << 30)],
                    nics=nics,
                )
            )
        return out

    def run(
        self, start: datetime, seconds: int, interval_s: float = 1.0, host_every: int | None = 10
    ) -> Iterator[list[GpuMetrics | HostMetrics]]:
        """Yield each tick's scrapes (GPU every tick, host every `host_every` ticks or never)."""
        for tick in range(int(seconds / interval_s)):
            ts = start + timedelta(seconds=tick * interval_s)
            batch: list[GpuMetrics | HostMetrics] = list(self.gpu_scrapes(ts, interval_s))
            if host_every and tick % host_every == 0:
                batch.extend(self.host_scrapes(ts, interval_s * host_every))
            yield batch
