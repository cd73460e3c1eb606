"""How each DCGM-named `GpuSample` field is read from NVML, with NVML's units converted.

Every reader takes a `FieldRead` and returns the fields it could read; an unreadable value is
left out (None in the sample). Units: NVML memory is bytes (-> MiB), power mW (-> W), energy
mJ (kept), PCIe throughput KB/s (kept: DCGM_FI_DEV_PCIE_*_THROUGHPUT use KB/s too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingest.agent.gpu import _GpuState, _Read

MIB = 1024 * 1024


@dataclass(frozen=True)
class FieldRead:
    """The NVML read of one GPU in one scrape, as the field readers see it."""

    read: _Read
    handle: Any
    pcie_throughput: bool

    @property
    def nvml(self) -> Any:
        """Return the NVML module in use."""
        return self.read.nvml

    def call(self, field: str, function: str, *args: Any) -> Any:
        """Call `function(handle, *args)`; None when not readable."""
        return self.read.call(field, function, self.handle, *args)


def _utilization(fr: FieldRead) -> dict[str, Any]:
    util = fr.call("gpu_util", "nvmlDeviceGetUtilizationRates")
    if util is None:
        return {}
    return {"gpu_util": float(util.gpu), "mem_copy_util": float(util.memory)}


def _clocks(fr: FieldRead) -> dict[str, Any]:
    sm = fr.call("sm_clock", "nvmlDeviceGetClockInfo", fr.nvml.NVML_CLOCK_SM)
    mem = fr.call("mem_clock", "nvmlDeviceGetClockInfo", fr.nvml.NVML_CLOCK_MEM)
    return _present(sm_clock=_float(sm), mem_clock=_float(mem))


def _memory(fr: FieldRead) -> dict[str, Any]:
    # v2 reports `used` without the driver-reserved memory, as nvidia-smi and DCGM do; v1
    # (drivers before R510) folds the reserved memory into `used`.
    mem = fr.call("fb_used", "nvmlDeviceGetMemoryInfo", getattr(fr.nvml, "nvmlMemory_v2", None))
    if mem is None:
        mem = fr.call("fb_used", "nvmlDeviceGetMemoryInfo")
    if mem is None:
        return {}
    return {"fb_used": mem.used / MIB, "fb_free": mem.free / MIB}


def _temperature(fr: FieldRead) -> dict[str, Any]:
    gpu = fr.call("gpu_temp", "nvmlDeviceGetTemperature", fr.nvml.NVML_TEMPERATURE_GPU)
    return _present(gpu_temp=_float(gpu), memory_temp=_field_value(fr, "NVML_FI_DEV_MEMORY_TEMP"))


def _power(fr: FieldRead) -> dict[str, Any]:
    usage = fr.call("power_usage", "nvmlDeviceGetPowerUsage")
    limit = fr.call("power_limit", "nvmlDeviceGetPowerManagementLimit")
    energy = fr.call("total_energy", "nvmlDeviceGetTotalEnergyConsumption")
    return _present(
        power_usage=None if usage is None else usage / 1000.0,
        power_limit=None if limit is None else limit / 1000.0,
        total_energy=_int(energy),
    )


def _fan(fr: FieldRead) -> dict[str, Any]:
    return _present(fan_speed=_float(fr.call("fan_speed", "nvmlDeviceGetFanSpeed")))


def _throttle(fr: FieldRead) -> dict[str, Any]:
    # "clocks event reasons" is the R535+ name of the same bitmask; older pynvml/drivers only
    # have the throttle-reasons call.
    reasons = fr.call("throttle_reasons", "nvmlDeviceGetCurrentClocksEventReasons")
    if reasons is None:
        reasons = fr.call("throttle_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
    return _present(throttle_reasons=_int(reasons))


def _ecc(fr: FieldRead) -> dict[str, Any]:
    nvml = fr.nvml
    fields = {
        "ecc_sbe_vol": (nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC),
        "ecc_dbe_vol": (nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
        "ecc_sbe_agg": (nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_AGGREGATE_ECC),
        "ecc_dbe_agg": (nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_AGGREGATE_ECC),
    }
    return _present(
        **{
            name: _int(fr.call(name, "nvmlDeviceGetTotalEccErrors", kind, counter))
            for name, (kind, counter) in fields.items()
        }
    )


def _retired_pages(fr: FieldRead) -> dict[str, Any]:
    nvml = fr.nvml
    causes = {
        "retired_sbe": nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
        "retired_dbe": nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
    }
    out: dict[str, Any] = {}
    for name, cause in causes.items():
        pages = fr.call(name, "nvmlDeviceGetRetiredPages", cause)
        if pages is not None:
            out[name] = len(pages)
    pending = fr.call("retired_pending", "nvmlDeviceGetRetiredPagesPendingStatus")
    return out | _present(retired_pending=_int(pending))


def _remapped_rows(fr: FieldRead) -> dict[str, Any]:
    rows = fr.call("remapped_rows", "nvmlDeviceGetRemappedRows")
    if rows is None:
        return {}
    corr, unc, pending, failure = rows
    return {
        "remapped_correctable": int(corr),
        "remapped_uncorrectable": int(unc),
        "remap_pending": 1 if pending else 0,
        "remap_failure": 1 if failure else 0,
    }


def _pcie(fr: FieldRead) -> dict[str, Any]:
    out = _present(pcie_replay=_int(fr.call("pcie_replay", "nvmlDeviceGetPcieReplayCounter")))
    if fr.pcie_throughput:
        nvml = fr.nvml
        for name, counter in (
            ("pcie_tx_throughput", nvml.NVML_PCIE_UTIL_TX_BYTES),
            ("pcie_rx_throughput", nvml.NVML_PCIE_UTIL_RX_BYTES),
        ):
            kb_per_s = fr.call(name, "nvmlDeviceGetPcieThroughput", counter)
            if kb_per_s is not None:
                out[name] = int(kb_per_s)  # KB/s, DCGM's unit for this field
    return out


FIELD_READERS: tuple[Callable[[FieldRead], dict[str, Any]], ...] = (
    _utilization,
    _clocks,
    _memory,
    _temperature,
    _power,
    _fan,
    _throttle,
    _ecc,
    _retired_pages,
    _remapped_rows,
    _pcie,
)
"""Readers of every field but NVLink (which needs the per-GPU link list)."""

NVLINK_COUNTERS: tuple[tuple[str, str], ...] = (
    ("nvlink_crc_flit", "NVML_NVLINK_ERROR_DL_CRC_FLIT"),
    ("nvlink_crc_data", "NVML_NVLINK_ERROR_DL_CRC_DATA"),
    ("nvlink_replay", "NVML_NVLINK_ERROR_DL_REPLAY"),
    ("nvlink_recovery", "NVML_NVLINK_ERROR_DL_RECOVERY"),
)


def nvlink_links(fr: FieldRead) -> tuple[int, ...]:
    """Return the NVLink link indices this GPU has (links are numbered from 0, contiguously)."""
    links: list[int] = []
    past_last = ("NVML_ERROR_INVALID_ARGUMENT", "NVML_ERROR_NOT_SUPPORTED")
    for link in range(int(getattr(fr.nvml, "NVML_NVLINK_MAX_LINKS", 0))):
        _, code = fr.read.call_coded(
            "nvlink", "nvmlDeviceGetNvLinkState", fr.handle, link, expected=past_last
        )
        if code in past_last:
            break
        if code is None:
            links.append(link)
    return tuple(links)


def nvlink_totals(fr: FieldRead, state: _GpuState) -> dict[str, Any]:
    """Return each NVLink error counter summed over the GPU's links (None if none readable)."""
    if state.links is None:
        state.links = nvlink_links(fr)
    out: dict[str, Any] = {}
    for name, constant in NVLINK_COUNTERS:
        counter = getattr(fr.nvml, constant, None)
        if counter is None:
            continue
        values = [
            fr.call(name, "nvmlDeviceGetNvLinkErrorCounter", link, counter) for link in state.links
        ]
        readable = [int(v) for v in values if v is not None]
        if readable:
            out[name] = sum(readable)
    return out


def _field_value(fr: FieldRead, constant: str) -> float | None:
    field_id = getattr(fr.nvml, constant, None)
    if field_id is None:
        return None
    values = fr.call(constant, "nvmlDeviceGetFieldValues", [field_id])
    if not values:
        return None
    value = values[0]
    if value.nvmlReturn != fr.nvml.NVML_SUCCESS:
        return None
    return _union_value(fr.nvml, value)


def _union_value(nvml: Any, value: Any) -> float | None:
    member = {
        nvml.NVML_VALUE_TYPE_DOUBLE: "dVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
        nvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
        getattr(nvml, "NVML_VALUE_TYPE_SIGNED_INT", -1): "siVal",
        getattr(nvml, "NVML_VALUE_TYPE_UNSIGNED_SHORT", -2): "usVal",
    }.get(value.valueType)
    return None if member is None else float(getattr(value.value, member))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _present(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
