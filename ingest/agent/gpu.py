"""GPU sampler: one `GpuMetrics` per scrape from NVML (pynvml), one GPU's failure never the node's.

Error policy, by NVML return code:
- not supported / function not found / argument version mismatch: the field is None, silently;
- a code that means the GPU is gone (GPU_IS_LOST, UNKNOWN, RESET_REQUIRED, ...): the rest of
  that GPU is skipped, the sample carries `nvml_error`, the handle is dropped and re-acquired
  on the next scrape; the other GPUs are sampled as usual;
- CORRUPTED_INFOROM: flagged in `nvml_error`, the other fields are still read;
- anything else: the field is None and the first occurrence per (GPU, field, code) is logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ingest.agent.nvml_fields import FIELD_READERS, FieldRead, nvlink_totals
from ingest.schema import GpuMetrics, GpuSample

log = logging.getLogger(__name__)

NvmlModule = Any
"""The pynvml module, or a stand-in with the same names (pynvml ships no type stubs)."""

UNAVAILABLE_CODES = frozenset(
    {
        "NVML_ERROR_NOT_SUPPORTED",
        "NVML_ERROR_FUNCTION_NOT_FOUND",
        "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    }
)
GPU_GONE_CODES = frozenset(
    {
        "NVML_ERROR_GPU_IS_LOST",
        "NVML_ERROR_UNKNOWN",
        "NVML_ERROR_RESET_REQUIRED",
        "NVML_ERROR_GPU_NOT_FOUND",
        "NVML_ERROR_IRQ_ISSUE",
        "NVML_ERROR_TIMEOUT",
        "NVML_ERROR_UNINITIALIZED",
    }
)
GPU_DEGRADED_CODES = frozenset({"NVML_ERROR_CORRUPTED_INFOROM"})


class GpuGone(Exception):
    """NVML says this GPU cannot be read any more (internal: ends the read of one GPU)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class _GpuState:
    """What the sampler keeps per GPU index across scrapes."""

    handle: Any = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    links: tuple[int, ...] | None = None
    error: str | None = None


class _Read:
    """One GPU's read in one scrape: NVML calls classified by the error policy."""

    def __init__(self, sampler: GpuSampler, index: int) -> None:
        self.nvml = sampler.nvml
        self.index = index
        self.error: str | None = None
        self._sampler = sampler

    def call(self, field: str, function: str, *args: Any) -> Any:
        """Call an NVML function; return None when the value is not readable."""
        value, code = self.call_coded(field, function, *args)
        return None if code else value

    def call_coded(
        self, field: str, function: str, *args: Any, expected: Collection[str] = ()
    ) -> tuple[Any, str | None]:
        """Call an NVML function; return (value, None) or (None, error code name)."""
        # Codes in `expected` are answers, not errors (INVALID_ARGUMENT past the last link).
        fn = getattr(self.nvml, function, None)
        if fn is None:
            return None, "NVML_ERROR_FUNCTION_NOT_FOUND"
        try:
            return fn(*args), None
        except self.nvml.NVMLError as exc:
            code = self._sampler.error_name(exc)
        if code in GPU_GONE_CODES:
            raise GpuGone(code)
        if code in GPU_DEGRADED_CODES:
            self.error = self.error or code
        elif code not in UNAVAILABLE_CODES and code not in expected:
            self._sampler.warn_once(self.index, field, code)
        return None, code


class GpuSampler:
    """Samples every GPU of the node through NVML, keeping device handles across scrapes."""

    name = "gpu"

    def __init__(
        self,
        node: str,
        nvml: NvmlModule | None = None,
        *,
        pcie_throughput: bool = True,
        retry_init_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.node = node
        self.nvml: Any = nvml
        self.pcie_throughput = pcie_throughput
        self._retry_init_s = retry_init_s
        self._clock = clock
        self._now = now
        self._initialized = False
        self._init_warned = False
        self._next_init_at: float | None = None
        self._gpus: dict[int, _GpuState] = {}
        self._known = 0
        self._names: dict[int, str] = {}
        self._warned: set[tuple[int, str, str]] = set()

    @property
    def available(self) -> bool:
        """Return whether NVML is initialised (a driver was found)."""
        return self._initialized

    def collect(self) -> list[GpuMetrics]:
        """Return this scrape's event, or nothing when NVML is unavailable."""
        metrics = self.sample()
        return [] if metrics is None else [metrics]

    def sample(self) -> GpuMetrics | None:
        """Scrape every GPU once; None when NVML is unavailable or there is no GPU."""
        if not self._ready():
            return None
        ts = self._now()
        count, count_error = self._device_count()
        self._known = max(self._known, count)
        if count_error is not None:
            gpus = [self._gone_sample(i, self._state(i), count_error) for i in range(self._known)]
        else:
            gpus = [self._sample_gpu(i) for i in range(self._known)]
        if not gpus:
            return None
        return GpuMetrics(node=self.node, ts=ts, gpus=gpus)

    def close(self) -> None:
        """Shut NVML down if this sampler initialised it."""
        if not self._initialized:
            return
        self._initialized = False
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError as exc:
            log.debug("nvmlShutdown failed: %s", self.error_name(exc))

    def error_name(self, exc: BaseException) -> str:
        """Return the NVML_ERROR_* name of an NVMLError (from the module's own constants)."""
        if not self._names:
            self._names = {
                getattr(self.nvml, n): n for n in dir(self.nvml) if n.startswith("NVML_ERROR_")
            }
        value = getattr(exc, "value", None)
        return self._names.get(value, f"NVML_ERROR_{value}") if isinstance(value, int) else str(exc)

    def warn_once(self, index: int, field: str, code: str) -> None:
        """Log an unexpected NVML error the first time it is seen on (GPU, field)."""
        key = (index, field, code)
        if key not in self._warned:
            self._warned.add(key)
            log.warning("node %s GPU %d: %s unreadable (%s)", self.node, index, field, code)

    def _ready(self) -> bool:
        if self._initialized:
            return True
        now = self._clock()
        if self._next_init_at is not None and now < self._next_init_at:
            return False
        self._next_init_at = now + self._retry_init_s
        if self.nvml is None:
            try:
                import pynvml  # deferred: importing must not need (or touch) a driver
            except ImportError:
                self._warn_unavailable("pynvml is not installed")
                return False
            self.nvml = pynvml
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as exc:
            self._warn_unavailable(self.error_name(exc))
            return False
        self._initialized = True
        log.info("node %s: NVML initialised, sampling GPUs", self.node)
        return True

    def _warn_unavailable(self, reason: str) -> None:
        if self._init_warned:
            log.debug("NVML still unavailable: %s", reason)
            return
        self._init_warned = True
        log.warning(
            "node %s: NVML unavailable (%s); GPU sampling off, retrying every %.0f s; "
            "host and log collectors keep running",
            self.node,
            reason,
            self._retry_init_s,
        )

    def _device_count(self) -> tuple[int, str | None]:
        try:
            return int(self.nvml.nvmlDeviceGetCount()), None
        except self.nvml.NVMLError as exc:
            code = self.error_name(exc)
            self.warn_once(-1, "device_count", code)
            return 0, code

    def _state(self, index: int) -> _GpuState:
        return self._gpus.setdefault(index, _GpuState())

    def _sample_gpu(self, index: int) -> GpuSample:
        state = self._state(index)
        read = _Read(self, index)
        try:
            if state.handle is None:
                self._acquire(read, state)
            fields = FieldRead(read, state.handle, self.pcie_throughput)
            values: dict[str, Any] = {}
            for reader in FIELD_READERS:
                values.update(reader(fields))
            values.update(nvlink_totals(fields, state))
        except GpuGone as gone:
            return self._gone_sample(index, state, gone.code)
        if state.error is not None:
            log.info("node %s GPU %d readable again (was %s)", self.node, index, state.error)
            state.error = None
        return GpuSample(
            gpu=index,
            uuid=state.uuid,
            pci_bus_id=state.pci_bus_id,
            nvml_error=read.error,
            **values,
        )

    def _acquire(self, read: _Read, state: _GpuState) -> None:
        handle, code = read.call_coded("handle", "nvmlDeviceGetHandleByIndex", read.index)
        if code is not None:
            raise GpuGone(code)
        state.handle = handle
        state.links = None
        uuid = read.call("uuid", "nvmlDeviceGetUUID", handle)
        if uuid is not None:
            state.uuid = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        pci = read.call("pci_bus_id", "nvmlDeviceGetPciInfo", handle)
        bus_id = getattr(pci, "busId", None)
        if bus_id is not None:
            state.pci_bus_id = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)

    def _gone_sample(self, index: int, state: _GpuState, code: str) -> GpuSample:
        state.handle = None
        state.links = None
        if state.error != code:
            log.warning(
                "node %s GPU %d (%s, %s) cannot be read: %s",
                self.node,
                index,
                state.uuid,
                state.pci_bus_id,
                code,
            )
            state.error = code
        return GpuSample(gpu=index, uuid=state.uuid, pci_bus_id=state.pci_bus_id, nvml_error=code)
