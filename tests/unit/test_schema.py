"""The wire schema: round trips, deterministic ids, validation errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from ingest.schema import (
    GPU_METRIC_FIELDS,
    SCHEMA_VERSION,
    GpuMetrics,
    JobTopology,
    SchemaError,
    decode_event,
    encode_event,
)
from tests.builders import at, make_gpu_metrics, make_log, make_topology, one_of_each


@pytest.mark.parametrize("event", one_of_each(), ids=lambda e: e.kind)
def test_every_kind_round_trips(event):
    decoded = decode_event(encode_event(event))
    assert decoded == event
    assert type(decoded) is type(event)


def test_gpu_fields_travel_under_dcgm_names():
    wire = orjson.loads(encode_event(make_gpu_metrics(gpus=1)))
    sample = wire["gpus"][0]
    assert sample["DCGM_FI_DEV_GPU_TEMP"] == 40.0
    assert "gpu_temp" not in sample
    assert len(GPU_METRIC_FIELDS) >= 30
    assert all(k.startswith("DCGM_FI_") for k in sample if k not in {"gpu", "uuid", "pci_bus_id"})


def test_id_is_deterministic_and_content_sensitive():
    assert make_gpu_metrics().id == make_gpu_metrics().id
    assert make_gpu_metrics(seconds=1).id != make_gpu_metrics().id
    assert make_gpu_metrics(node="n2").id != make_gpu_metrics().id
    assert make_log(seq=1).id != make_log(seq=2).id
    assert len(make_log().id) == 32


def test_id_on_the_wire_is_kept():
    wire = orjson.loads(encode_event(make_log()))
    wire["id"] = "f" * 32
    assert decode_event(orjson.dumps(wire)).id == "f" * 32


def test_times_are_normalised_to_utc():
    plus2 = timezone(timedelta(hours=2))
    event = GpuMetrics(node="n1", ts=datetime(2026, 1, 1, 14, 0, tzinfo=plus2), gpus=[])
    assert event.ts.utcoffset() == timedelta(0)
    assert event.ts.hour == 12
    assert event.id == GpuMetrics(node="n1", ts=datetime(2026, 1, 1, 12, 0, tzinfo=UTC), gpus=[]).id


def test_naive_time_is_rejected():
    wire = orjson.loads(encode_event(make_log()))
    wire["ts"] = "2026-01-01T12:00:00"
    with pytest.raises(SchemaError, match="ts"):
        decode_event(orjson.dumps(wire))


def test_newer_schema_version_is_rejected_with_reason():
    wire = orjson.loads(encode_event(make_log()))
    wire["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(SchemaError, match="newer than supported"):
        decode_event(orjson.dumps(wire))


def test_additive_fields_are_ignored():
    wire = orjson.loads(encode_event(make_log()))
    wire["added_in_a_later_minor"] = 1
    assert decode_event(orjson.dumps(wire)) == make_log()


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xff\xfe\x00garbage",
        b"[]",
        b'{"kind": "nope"}',
        b'{"kind": "log", "node": "n1"}',
        b"null",
    ],
)
def test_garbage_raises_schema_error(raw):
    with pytest.raises(SchemaError):
        decode_event(raw)


def test_negative_counter_is_rejected():
    wire = orjson.loads(encode_event(make_gpu_metrics(gpus=1)))
    wire["gpus"][0]["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] = -1
    with pytest.raises(SchemaError, match="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"):
        decode_event(orjson.dumps(wire))


def test_topology_rejects_ranks_outside_the_world():
    wire = make_topology().model_dump(mode="json")
    wire["communicators"][0]["ranks"] = [0, 99]
    with pytest.raises(ValueError, match="outside the world"):
        JobTopology.model_validate(wire)


def test_keys_follow_the_partitioning_contract():
    events = {e.kind: e for e in one_of_each()}
    assert events["gpu_metrics"].key == "n1"
    assert events["log"].key == "n1"
    assert events["train_step"].key == "job-1"
    assert events["collective"].key == "job-1"
    assert events["job_topology"].key == "job-1"


def test_nan_loss_survives_the_wire():
    from ingest.schema import TrainStep

    step = TrainStep(job_id="j", step=3, ts=at(3), loss=float("nan"))
    decoded = decode_event(encode_event(step))
    assert decoded.loss != decoded.loss  # NaN
