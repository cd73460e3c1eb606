"""A fast decode path for GPU scrapes, the sink's bulk, with `decode_event` as the arbiter.

`decode_event` (the one pydantic TypeAdapter) stays the definition of a valid event. GPU
scrapes are most of the sink's bytes and rows (about 9 KB of JSON each: 8 GPUs x 35 fields);
pydantic builds nine models per scrape (~50 us), msgspec decodes the same bytes into slotted
structs in ~10 us. This path takes a record only where it certainly gives the values pydantic
gives, and returns None for everything else, which the caller then decodes with
`decode_event` (so the dead-letter reasons are pydantic's). It takes only:

- bytes that begin as `encode_event` writes a scrape (`{"kind":"gpu_metrics"`);
- fields spelled as on the wire (DCGM aliases); an unknown field, or a field spelled by its
  Python name (which pydantic also accepts), sends the record to pydantic;
- values that pass constraints equal to or stricter than the model's: counters up to 2**63-1
  (pydantic allows up to 2**64-1), the cluster pattern anchored with \\Z (pydantic's regex
  engine reads `$` as the very end), times only in the RFC 3339 form
  `YYYY-MM-DDTHH:MM:SS[.ffffff](Z|+HH:MM)`, no strings for numbers, no floats for integers.

The struct of one GPU is built from `GpuSample`'s fields, so a field added to the schema is
decoded here too (a field type not handled below fails at import, not silently).
tests/unit/test_fast_decode.py checks both paths give equal rows, cluster and id included.
"""

from __future__ import annotations

import re
import types
import typing
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
from annotated_types import Ge, Le

from ingest.schema import (
    CLUSTER_PATTERN,
    DEFAULT_CLUSTER,
    GPU_METRIC_FIELDS,
    SCHEMA_VERSION,
    GpuSample,
    event_id,
)

PREFIX = b'{"kind":"gpu_metrics"'
"""How `encode_event` starts a GPU scrape; other records go to pydantic at once."""

_I64 = 2**63 - 1
_TIME = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)\Z")
_CLUSTER = CLUSTER_PATTERN.removesuffix("$") + r"\Z"

SAMPLE_FIELDS: tuple[str, ...] = ("gpu", "uuid", "pci_bus_id", "nvml_error", *GPU_METRIC_FIELDS)
"""GpuSample's fields in declaration order: the order of a sample's values in a row."""


def _bounds(metadata: list[Any]) -> msgspec.Meta:
    ge = next((int(m.ge) for m in metadata if isinstance(m, Ge)), None)  # type: ignore[call-overload]
    le = next((int(m.le) for m in metadata if isinstance(m, Le)), _I64)  # type: ignore[call-overload]
    return msgspec.Meta(ge=ge, le=min(le, _I64))


def _sample_type(name: str, annotation: Any, metadata: list[Any]) -> Any:
    """Return the msgspec type of one GpuSample field, as strict as pydantic's or stricter."""
    if annotation is int:
        return Annotated[int, _bounds(metadata)]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType) or (
        type(None) not in args
    ):
        raise TypeError(f"GpuSample.{name}: {annotation!r} has no fast decoding")
    (inner,) = [a for a in args if a is not type(None)]
    if inner in (str, float):
        return inner | None
    if typing.get_origin(inner) is Annotated and typing.get_args(inner)[0] is int:
        return Annotated[int, _bounds(list(typing.get_args(inner)[1].metadata))] | None
    raise TypeError(f"GpuSample.{name}: {annotation!r} has no fast decoding")


def _sample_struct() -> type[msgspec.Struct]:
    fields = GpuSample.model_fields
    if tuple(fields) != SAMPLE_FIELDS:
        raise TypeError("GpuSample fields moved: update SAMPLE_FIELDS and the row order")
    spec: list[Any] = []
    for name, info in fields.items():
        kind = _sample_type(name, info.annotation, list(info.metadata))
        spec.append((name, kind) if info.is_required() else (name, kind, info.default))
    rename = {n: f.alias for n, f in fields.items() if f.alias}
    return msgspec.defstruct(
        "FastGpuSample", spec, rename=rename, forbid_unknown_fields=True, frozen=True, gc=False
    )


FastGpuSample = _sample_struct()


class _WireScrape(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    kind: Literal["gpu_metrics"]
    ts: str
    node: Annotated[str, msgspec.Meta(min_length=1)]
    gpus: list[FastGpuSample]  # type: ignore[valid-type]
    schema_version: Annotated[int, msgspec.Meta(ge=1, le=SCHEMA_VERSION)] = SCHEMA_VERSION
    id: str = ""
    cluster: Annotated[str, msgspec.Meta(pattern=_CLUSTER)] | msgspec.UnsetType = msgspec.UNSET


class GpuScrape(msgspec.Struct, frozen=True, gc=False):
    """A decoded GPU scrape: GpuMetrics' stored values, without its pydantic models."""

    ts: datetime
    node: str
    id: str
    cluster: str
    gpus: list[Any]  # FastGpuSample: values in SAMPLE_FIELDS order (msgspec.structs.astuple)
    kind: str = "gpu_metrics"

    @property
    def key(self) -> str:
        """Return the partitioning key, as `GpuMetrics.key`: the node."""
        return self.node


class FastDecoder:
    """Decodes the GPU scrapes it can vouch for; None means "ask decode_event"."""

    def __init__(self, cluster: str = DEFAULT_CLUSTER) -> None:
        """`cluster`: where scrapes that name none belong (the receiver's TG_CLUSTER)."""
        self.cluster = cluster
        self._decoder = msgspec.json.Decoder(_WireScrape)

    def decode(self, raw: bytes) -> GpuScrape | None:
        """Return the scrape placed in its cluster (as `decode_event(raw).in_cluster`), or None."""
        if not raw.startswith(PREFIX):
            return None
        try:
            wire = self._decoder.decode(raw)
        except msgspec.DecodeError:
            return None
        ts = _utc_time(wire.ts)
        if ts is None:
            return None
        named = wire.cluster is not msgspec.UNSET
        cluster = wire.cluster if isinstance(wire.cluster, str) else DEFAULT_CLUSTER
        ident = wire.id or _derived(cluster, wire.node, ts)
        if not named and self.cluster != cluster:
            if ident == _derived(cluster, wire.node, ts):
                ident = event_id("gpu_metrics", self.cluster, wire.node, ts)
            cluster = self.cluster
        return GpuScrape(ts, wire.node, ident, cluster, wire.gpus)


def _derived(cluster: str, node: str, ts: datetime) -> str:
    if cluster == DEFAULT_CLUSTER:
        return event_id("gpu_metrics", node, ts)
    return event_id("gpu_metrics", cluster, node, ts)


def _utc_time(text: str) -> datetime | None:
    if _TIME.match(text) is None:
        return None
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
