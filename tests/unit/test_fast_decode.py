"""The fast GPU-scrape decoder gives pydantic's rows, or declines and leaves it to pydantic."""

from __future__ import annotations

import json

import pytest

from analytics.columns import ColumnBatch
from analytics.tables import GPU_METRICS
from diagnosis.engine import DiagnosisEngine
from ingest.fast_decode import FastDecoder
from ingest.schema import SchemaError, decode_event, encode_event
from tests.builders import make_gpu_metrics, one_of_each


def _rows(event: object) -> dict[str, list[object]]:
    batch = ColumnBatch()
    batch.add_event(event, ("t", 0, 7))  # type: ignore[arg-type]
    return batch.columns(GPU_METRICS)


def _agree(raw: bytes, cluster: str = "default") -> str:
    """Assert both decoders agree on raw; return 'fast', 'declined' or 'rejected'."""
    fast = FastDecoder(cluster).decode(raw)
    try:
        slow = decode_event(raw).in_cluster(cluster)
    except SchemaError:
        assert fast is None, f"fast path accepted what pydantic rejects: {raw[:200]!r}"
        return "rejected"
    if fast is None:
        return "declined"
    assert (fast.id, fast.cluster, fast.ts) == (slow.id, slow.cluster, slow.ts)
    assert _rows(fast) == _rows(slow)
    return "fast"


def _scrape(**changes: object) -> dict[str, object]:
    event = make_gpu_metrics("node-7", gpus=2, seed=3)
    data: dict[str, object] = json.loads(encode_event(event))
    data.update(changes)
    return data


def _raw(data: dict[str, object]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


@pytest.mark.parametrize("cluster", ["default", "eu-1"])
def test_encoded_scrapes_take_the_fast_path_with_pydantic_values(cluster: str) -> None:
    event = make_gpu_metrics("node-7", seed=5)
    assert _agree(encode_event(event), cluster) == "fast"
    named = event.model_copy(update={"cluster": "us-2"})
    named.model_fields_set.add("cluster")
    assert _agree(encode_event(named), cluster) == "fast"


@pytest.mark.parametrize("cluster", ["default", "eu-1"])
def test_a_scrape_without_id_gets_the_same_derived_id(cluster: str) -> None:
    data = _scrape()
    del data["id"]
    assert _agree(_raw(data), cluster) == "fast"
    assert _agree(_raw({**data, "cluster": "us-2"}), cluster) == "fast"


def test_other_event_kinds_are_left_to_pydantic() -> None:
    for event in one_of_each():
        if event.kind != "gpu_metrics":
            assert FastDecoder().decode(encode_event(event)) is None


def _gpu0(data: dict[str, object], **fields: object) -> dict[str, object]:
    gpus = [dict(g) for g in data["gpus"]]  # type: ignore[attr-defined]
    gpus[0].update(fields)
    return {**data, "gpus": gpus}


MUTATIONS: dict[str, object] = {
    "python name of a field": lambda d: _gpu0(d, gpu_temp=12.0),
    "extra field": lambda d: {**d, "rack": "r1"},
    "extra gpu field": lambda d: _gpu0(d, DCGM_FI_DEV_NEW=1),
    "counter at u64 max": lambda d: _gpu0(d, DCGM_FI_DEV_XID_ERRORS=2**64 - 1),
    "counter over u64": lambda d: _gpu0(d, DCGM_FI_DEV_XID_ERRORS=2**64),
    "negative counter": lambda d: _gpu0(d, DCGM_FI_DEV_XID_ERRORS=-1),
    "float for a counter": lambda d: _gpu0(d, DCGM_FI_DEV_XID_ERRORS=3.0),
    "string for a float": lambda d: _gpu0(d, DCGM_FI_DEV_GPU_TEMP="41.5"),
    "NaN string": lambda d: _gpu0(d, DCGM_FI_DEV_GPU_TEMP="NaN"),
    "int for a float": lambda d: _gpu0(d, DCGM_FI_DEV_GPU_TEMP=41),
    "bool for a float": lambda d: _gpu0(d, DCGM_FI_DEV_GPU_TEMP=True),
    "gpu index too big": lambda d: _gpu0(d, gpu=70_000),
    "null metric": lambda d: _gpu0(d, DCGM_FI_DEV_GPU_TEMP=None),
    "naive time": lambda d: {**d, "ts": "2026-11-30T12:00:00"},
    "space in time": lambda d: {**d, "ts": "2026-11-30 12:00:00Z"},
    "offset time": lambda d: {**d, "ts": "2026-11-30T14:30:00.5+02:30"},
    "nanosecond time": lambda d: {**d, "ts": "2026-11-30T12:00:00.123456789Z"},
    "unix time": lambda d: {**d, "ts": 1_800_000_000},
    "year one east of UTC": lambda d: {**d, "ts": "0001-01-01T00:30:00+01:00"},
    "cluster with newline": lambda d: {**d, "cluster": "eu\n"},
    "bad cluster": lambda d: {**d, "cluster": "-eu"},
    "empty node": lambda d: {**d, "node": ""},
    "newer schema": lambda d: {**d, "schema_version": 2},
    "no gpus": lambda d: {k: v for k, v in d.items() if k != "gpus"},
    "empty gpus": lambda d: {**d, "gpus": []},
    "no time": lambda d: {k: v for k, v in d.items() if k != "ts"},
}


FAST = {"int for a float", "null metric", "offset time", "empty gpus"}
DECLINED = {  # valid for pydantic, not taken by the fast path: pydantic decodes them
    *("NaN string", "bool for a float", "counter at u64 max", "extra field", "extra gpu field"),
    *("float for a counter", "nanosecond time", "python name of a field", "space in time"),
    *("string for a float", "unix time"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_scrapes_never_decode_differently(name: str) -> None:
    raw = _raw(MUTATIONS[name](_scrape()))  # type: ignore[operator]
    expected = "fast" if name in FAST else "declined" if name in DECLINED else "rejected"
    for cluster in ("default", "eu-1"):
        assert _agree(raw, cluster) == expected


def test_duplicate_keys_and_odd_bytes_never_decode_differently() -> None:
    raw = encode_event(make_gpu_metrics("node-7"))
    cases = [
        raw[:-1] + b',"node":"node-8"}',
        raw[:-1] + b',"kind":"log"}',
        raw + b" ",
        raw[:-1],
        raw.replace(b"node-7", b"node-\xff"),
        raw.replace(b'"ts":"', b'"ts":"\\u0032'),
    ]
    outcomes = {_agree(case) for case in cases}
    assert "rejected" in outcomes


def test_at_least_the_builders_times_take_the_fast_path() -> None:
    raw = encode_event(make_gpu_metrics("node-7", seconds=1.5))
    assert _agree(raw) == "fast"


def test_diagnosis_finds_the_same_in_a_fast_scrape_as_in_pydantics():
    scrape = make_gpu_metrics("n1", seconds=2)
    lost = scrape.gpus[3].model_copy(update={"nvml_error": "NVML_ERROR_GPU_IS_LOST"})
    raw = encode_event(scrape.model_copy(update={"gpus": [*scrape.gpus[:3], lost]}))
    fast = FastDecoder().decode(raw)
    assert fast is not None
    engines = [DiagnosisEngine(), DiagnosisEngine()]
    for engine, event in zip(engines, (fast, decode_event(raw)), strict=True):
        engine.feed(event)
    fast_found, slow_found = (e.finish() for e in engines)
    assert [i.model_dump() for i in fast_found] == [i.model_dump() for i in slow_found]
    assert len(fast_found) == 1 and fast_found[0].suspects[0].gpu == 3
    assert engines[0].pci_gpu == engines[1].pci_gpu and len(engines[0].pci_gpu) == 4
