"""Per-GPU and per-NIC state of the twin as numpy arrays, and the scrapes agents would read.

Activity decides the operating point of a GPU (idle, computing, spinning in an NCCL kernel
while it waits for a peer, stalled on the host); faults add offsets, counters and NVML errors.
Everything here is what NVML, sysfs and /proc show: no ground truth leaks into a sample.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from ingest.schema import DiskSample, GpuMetrics, HostMetrics, NicSample

IDLE, COMPUTE, SPIN, STALLED = 0, 1, 2, 3  # activity codes

# Operating points (H100 SXM-like): util %, power W, target temperature C, SM clock MHz, FB MiB.
_POINTS = np.array(
    [
        [0.0, 75.0, 34.0, 345.0, 600.0],  # idle
        [97.0, 640.0, 66.0, 1980.0, 71_000.0],  # compute
        [100.0, 250.0, 52.0, 1980.0, 71_000.0],  # spinning in a collective: busy, little power
        [0.0, 120.0, 40.0, 1980.0, 71_000.0],  # process alive, GPU idle (host-side stall)
    ]
)
FB_TOTAL_MIB = 81_559.0
POWER_LIMIT_W = 700.0
THROTTLE_SW_THERMAL, THROTTLE_HW_SLOWDOWN, THROTTLE_HW_THERMAL = 0x20, 0x08, 0x40

_COUNTERS = (
    "ecc_sbe_vol",
    "ecc_dbe_vol",
    "ecc_sbe_agg",
    "ecc_dbe_agg",
    "retired_sbe",
    "retired_dbe",
    "retired_pending",
    "remapped_correctable",
    "remapped_uncorrectable",
    "remap_pending",
    "remap_failure",
    "pcie_replay",
    "nvlink_crc_flit",
    "nvlink_crc_data",
    "nvlink_replay",
    "nvlink_recovery",
)
_NIC_COUNTERS = (
    "symbol_errors",
    "link_error_recovery",
    "link_downed",
    "rcv_errors",
    "xmit_discards",
)


def pci_bus_ids(gpus_per_node: int) -> list[str]:
    """Return NVML-style PCI bus ids of an HGX node's GPUs."""
    buses = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
    return [f"00000000:{buses[g % 8] + 0x100 * (g // 8):02X}:00.0" for g in range(gpus_per_node)]


class GpuState:
    """Arrays of shape (nodes, gpus) for every GPU of the cluster, plus NICs and hosts."""

    def __init__(self, nodes: int, gpus: int, nics: int, rng: np.random.Generator) -> None:
        shape = (nodes, gpus)
        self.rng = rng
        self.shape = shape
        self.activity = np.zeros(shape, np.int8)
        self.temp = np.full(shape, 34.0) + rng.normal(0, 1.0, shape)
        self.heat_bias = rng.normal(0, 2.0, shape)  # airflow position, binning
        self.temp_offset = np.zeros(shape)
        self.cooling_offset = np.zeros(shape)  # benign: hot aisle, degraded fan (sim.wear)
        self.clock_factor = np.ones(shape)
        self.throttle = np.zeros(shape, np.int64)
        self.benign_throttle = np.zeros(shape, np.int64)  # healthy GPUs running hot
        self.energy = np.zeros(shape, np.int64)
        self.counters = {name: np.zeros(shape, np.int64) for name in _COUNTERS}
        self.nvml_error: dict[tuple[int, int], str] = {}
        self.uuids = [
            [
                f"GPU-{rng.integers(0, 2**32):08x}-{rng.integers(0, 2**16):04x}-"
                f"{rng.integers(0, 2**16):04x}-{rng.integers(0, 2**16):04x}-"
                f"{rng.integers(0, 2**48):012x}"
                for _ in range(gpus)
            ]
            for _ in range(nodes)
        ]
        self.pci = pci_bus_ids(gpus)
        self.nic_up = np.ones((nodes, nics), bool)
        self.nic_counters = {name: np.zeros((nodes, nics), np.int64) for name in _NIC_COUNTERS}
        self.nic_bytes = np.zeros((nodes, nics), np.int64)
        self.nic_rate_bps = np.zeros((nodes, nics))  # current traffic, bytes/s
        self.disk_used = np.full(nodes, 210 << 30, np.int64)
        self.disk_total = 1_800 << 30
        self.mem_used = np.full(nodes, 180 << 30, np.int64)
        self.mem_total = 2_015 << 30

    def advance(self, dt: float) -> None:
        """Move temperatures toward their targets and integrate energy over dt seconds."""
        point = _POINTS[self.activity]
        target = point[:, :, 2] + self.heat_bias + self.temp_offset + self.cooling_offset
        alpha = 1.0 - np.exp(-dt / 40.0)  # thermal time constant ~40 s
        self.temp += (target - self.temp) * alpha + self.rng.normal(0, 0.25, self.shape)
        self.energy += (self._power() * dt * 1000).astype(np.int64)
        self.nic_bytes += (self.nic_rate_bps * dt * self.nic_up).astype(np.int64)

    def _power(self) -> np.ndarray:
        point = _POINTS[self.activity]
        return np.clip(
            point[:, :, 1] * (0.92 + 0.08 * self.clock_factor) + self.rng.normal(0, 8, self.shape),
            50,
            POWER_LIMIT_W,
        )

    def gpu_scrapes(self, ts: datetime, node_names: list[str]) -> list[GpuMetrics]:
        """Return one GpuMetrics per node, as the NVML sampler would publish at `ts`."""
        point = _POINTS[self.activity]
        busy = self.activity != IDLE
        util = np.clip(point[:, :, 0] + self.rng.normal(0, 1.2, self.shape) * busy, 0, 100)
        cols = {
            "gpu_util": np.round(util, 0),
            "mem_copy_util": np.round(util * 0.38, 0),
            "sm_clock": np.round(point[:, :, 3] * self.clock_factor, 0),
            "mem_clock": np.full(self.shape, 2619.0),
            "fb_used": point[:, :, 4],
            "fb_free": FB_TOTAL_MIB - point[:, :, 4],
            "gpu_temp": np.round(self.temp, 0),
            "memory_temp": np.round(self.temp + 4, 0),
            "power_usage": np.round(self._power(), 3),
        }
        lists = {k: v.tolist() for k, v in cols.items()}
        ints = {k: v.tolist() for k, v in self.counters.items()}
        ints["throttle_reasons"] = (self.throttle | self.benign_throttle).tolist()
        ints["total_energy"] = self.energy.tolist()
        out = []
        for n, node in enumerate(node_names):
            gpus: list[dict[str, object]] = []
            for g in range(self.shape[1]):
                error = self.nvml_error.get((n, g))
                if error is not None:
                    gpus.append(
                        {
                            "gpu": g,
                            "uuid": self.uuids[n][g],
                            "pci_bus_id": self.pci[g],
                            "nvml_error": error,
                        }
                    )
                    continue
                values: dict[str, object] = {k: v[n][g] for k, v in lists.items()}
                values.update({k: v[n][g] for k, v in ints.items()})
                values.update(
                    gpu=g,
                    uuid=self.uuids[n][g],
                    pci_bus_id=self.pci[g],
                    power_limit=POWER_LIMIT_W,
                    xid=0,
                )
                gpus.append(values)
            # One validation of the whole scrape runs in pydantic's core: ~10x model_construct.
            out.append(GpuMetrics.model_validate({"node": node, "ts": ts, "gpus": gpus}))
        return out

    def host_scrapes(self, ts: datetime, node_names: list[str]) -> list[HostMetrics]:
        """Return one HostMetrics per node (CPU, memory, disk, NIC ports)."""
        busy = (self.activity != IDLE).mean(axis=1)
        cpu = np.clip(8 + 30 * busy + self.rng.normal(0, 2, busy.shape), 0, 100).tolist()
        counters = {k: v.tolist() for k, v in self.nic_counters.items()}
        rx = self.nic_bytes.tolist()
        up = self.nic_up.tolist()
        out = []
        for n, node in enumerate(node_names):
            nics = [
                NicSample(
                    nic=f"mlx5_{i}",
                    port=1,
                    state="ACTIVE" if up[n][i] else "DOWN",
                    phys_state="LinkUp" if up[n][i] else "Polling",
                    rate_gbps=400.0,
                    rx_bytes=rx[n][i],
                    tx_bytes=rx[n][i],
                    **{k: counters[k][n][i] for k in _NIC_COUNTERS},
                )
                for i in range(len(up[n]))
            ]
            out.append(
                HostMetrics(
                    node=node,
                    ts=ts,
                    cpu_util=round(cpu[n], 1),
                    load1=round(2 + 60 * busy[n], 2),
                    mem_used_bytes=int(self.mem_used[n]),
                    mem_total_bytes=self.mem_total,
                    swap_used_bytes=0,
                    nics=nics,
                    disks=[
                        DiskSample(
                            mount="/",
                            used_bytes=int(self.disk_used[n]),
                            total_bytes=self.disk_total,
                        )
                    ],
                )
            )
        return out
