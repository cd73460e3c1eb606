"""Fault injection: each kind changes hardware state, logs what real systems print, and has
the effect on the job that real training shows (crash with errors on peers, hang until the
watchdog, slowdown, or NaN). Ground truth is recorded here and only here."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from sim.faults import gpu, jobs, network
from sim.faults.jobs import watchdog_timeout
from sim.random_faults import draw_random_faults
from sim.scenario import GpuFault
from sim.twin import Twin

Handler = Callable[[Twin, Any, float], None]

HANDLERS: dict[str, Handler] = {
    "xid79": gpu.xid79,
    "ecc_dbe": gpu.ecc_dbe,
    "gsp_timeout": gpu.gsp_timeout,
    "nvlink": gpu.nvlink,
    "nan": gpu.nan,
    "precursor": gpu.precursor,
    "straggler": gpu.straggler,
    "nic_down": network.nic_down,
    "nic_flap": network.nic_flap,
    "switch_down": network.switch_down,
    "hang": jobs.hang,
    "user_error": jobs.user_error,
    "app_xid": jobs.app_xid,
    "host_oom": jobs.host_oom,
    "disk_full": jobs.disk_full,
    "nic_slow": network.nic_slow,
    "host_slow": gpu.host_slow,
}
__all__ = ["HANDLERS", "schedule_faults", "watchdog_timeout"]


def schedule_faults(twin: Twin) -> None:
    """Schedule every scripted and random fault of the scenario."""
    faults = list(twin.scenario.faults) + draw_random_faults(twin.scenario, twin.hw, twin.rng)
    for fault in faults:
        onset = fault.at_s
        if isinstance(fault, GpuFault) and fault.kind == "precursor":
            onset = max(0.0, fault.at_s - fault.lead_s)
        twin.at(onset, partial(HANDLERS[fault.kind], twin, fault))
