"""Hypothesis strategies over the wire schema: valid events of every kind and hostile records.

Used by the fuzz test (`tests/integration/test_fuzz_wire.py`) and the reliability benchmark
(`python -m bench.reliability`). Every input says by construction what the platform must do
with it: a valid event (`event_id` set) is stored exactly once; a hostile record (`flaw` set)
is dead-lettered with its raw bytes, or refused by the producer before it is ever accepted
(larger than the broker takes). The platform's own decoder is never the oracle for which is
which, except that a valid event is built through the schema's models (the contract).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from ingest.bus import KIND_FAMILY, TopicFamily
from ingest.schema import (
    GPU_METRIC_FIELDS,
    CollectiveProgress,
    CollectiveState,
    CommKind,
    Communicator,
    DiskSample,
    EventBase,
    GpuMetrics,
    GpuSample,
    HostMetrics,
    JobTopology,
    LogLine,
    LogSource,
    NicSample,
    ParallelLayout,
    RankPlacement,
    TrainStep,
    encode_event,
)

U64 = 2**64 - 1


@dataclass(frozen=True)
class Input:
    """One record to publish, and what must become of it."""

    family: TopicFamily
    key: bytes | None
    value: bytes
    event_id: str | None = None  # valid: stored exactly once under this id
    kind: str | None = None  # valid: its event kind
    rows: int = 0  # valid: rows it makes in its kind's main table
    flaw: str | None = None  # hostile: why it must be dead-lettered


# --------------------------------------------------------------------------- valid events
names = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    min_size=1,
    max_size=40,
)
counts = st.integers(0, U64)
reals = st.floats(allow_nan=True, allow_infinity=True)
non_negative = st.floats(min_value=0, max_value=1e15)


def times(now: datetime) -> st.SearchStrategy[datetime]:
    """Event times a receiver must accept: mostly the last hour, some up to 30 days old."""
    recent = st.integers(-3_600_000_000, 60_000_000)
    old = st.integers(-30 * 86_400_000_000, 0)
    return st.one_of(recent, old).map(lambda us: now + timedelta(microseconds=us))


@st.composite
def gpu_samples(draw: st.DrawFn, index: int) -> GpuSample:
    fields: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(GPU_METRIC_FIELDS), unique=True, max_size=12)):
        integer = "int" in str(GpuSample.model_fields[name].annotation)
        fields[name] = draw(counts if integer else reals)
    error = draw(st.none() | st.sampled_from(["NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_UNKNOWN"]))
    return GpuSample(gpu=index, pci_bus_id=f"00000000:{index:02x}:00.0", nvml_error=error, **fields)


@st.composite
def gpu_metrics(draw: st.DrawFn, now: datetime) -> GpuMetrics:
    gpus = [draw(gpu_samples(i)) for i in range(draw(st.integers(1, 8)))]
    return GpuMetrics(node=draw(names), ts=draw(times(now)), gpus=gpus)


@st.composite
def host_metrics(draw: st.DrawFn, now: datetime) -> HostMetrics:
    nics = [
        NicSample(
            nic=f"mlx5_{i}",
            port=1,
            state=draw(st.sampled_from(["ACTIVE", "DOWN", "INIT", "weird"])),
            rate_gbps=draw(st.none() | non_negative),
            rx_bytes=draw(st.none() | counts),
            link_downed=draw(st.none() | counts),
        )
        for i in range(draw(st.integers(0, 4)))
    ]
    disks = [
        DiskSample(mount=f"/mnt/d{i}", used_bytes=draw(counts), total_bytes=draw(counts))
        for i in range(draw(st.integers(0, 3)))
    ]
    return HostMetrics(
        node=draw(names),
        ts=draw(times(now)),
        cpu_util=draw(st.none() | st.floats(0, 100)),
        load1=draw(st.none() | non_negative),
        mem_used_bytes=draw(st.none() | counts),
        nics=nics,
        disks=disks,
    )


@st.composite
def log_lines(draw: st.DrawFn, now: datetime) -> LogLine:
    line = draw(
        st.sampled_from(
            [
                "NVRM: Xid (PCI:0000:61:00): 79, pid=977823, GPU has fallen off the bus.",
                "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12",
                "RuntimeError: CUDA error: an illegal memory access was encountered",
            ]
        )
        | st.text(max_size=4096)
    )
    return LogLine(
        node=draw(names),
        ts=draw(times(now)),
        source=draw(st.sampled_from(list(LogSource))),
        line=line,
        path=draw(st.none() | names),
        seq=draw(counts),
        job_id=draw(st.none() | names),
        rank=draw(st.none() | st.integers(0, 2**32 - 1)),
    )


@st.composite
def train_steps(draw: st.DrawFn, now: datetime) -> TrainStep:
    return TrainStep(
        job_id=draw(names),
        step=draw(counts),
        rank=draw(st.none() | st.integers(0, 2**31 - 1)),
        ts=draw(times(now)),
        loss=draw(st.none() | reals),
        grad_norm=draw(st.none() | reals),
        tokens_per_s=draw(st.none() | non_negative),
        mfu=draw(st.none() | st.floats(0, 1)),
        step_time_s=draw(st.none() | non_negative),
        loss_scale=draw(st.none() | reals),
        skipped=draw(st.booleans()),
    )


@st.composite
def collectives(draw: st.DrawFn, now: datetime) -> CollectiveProgress:
    ts = draw(times(now))
    return CollectiveProgress(
        job_id=draw(names),
        rank=draw(st.integers(0, 2**32 - 1)),
        comm=draw(names),
        op=draw(st.sampled_from(["all_reduce", "all_gather", "send", "recv"])),
        seq=draw(counts),
        state=draw(st.sampled_from(list(CollectiveState))),
        bytes=draw(st.none() | counts),
        ts=ts,
        time_started=draw(st.none() | st.just(ts - timedelta(seconds=1))),
        duration_ms=draw(st.none() | non_negative),
    )


@st.composite
def topologies(draw: st.DrawFn, now: datetime) -> JobTopology:
    tp, dp = draw(st.integers(1, 8)), draw(st.integers(1, 4))
    world = tp * dp
    ranks = [RankPlacement(rank=r, node=f"node-{r // 8}", gpu=r % 8) for r in range(world)]
    comms = [
        Communicator(comm=f"tp:{i}", kind=CommKind.TP, ranks=list(range(i * tp, (i + 1) * tp)))
        for i in range(dp)
    ]
    return JobTopology(
        job_id=draw(names),
        ts=draw(times(now)),
        world_size=world,
        layout=ParallelLayout(tp=tp, dp=dp),
        ranks=ranks,
        communicators=comms,
    )


def events(now: datetime) -> st.SearchStrategy[EventBase]:
    """Valid events of every kind, with times a receiver at `now` accepts."""
    return st.one_of(
        gpu_metrics(now),
        host_metrics(now),
        log_lines(now),
        train_steps(now),
        collectives(now),
        topologies(now),
    )


def valid(event: EventBase) -> Input:
    """Return a valid event as the record a producer sends."""
    family = KIND_FAMILY[event.kind]
    rows = len(event.gpus) if isinstance(event, GpuMetrics) else 1
    return Input(
        family,
        event.key.encode(),
        encode_event(event),
        event_id=event.id,
        kind=event.kind,
        rows=rows,
    )


# --------------------------------------------------------------------------- hostile records
def _mutated(event: EventBase, change: dict[str, Any]) -> bytes:
    body = json.loads(encode_event(event))
    body.update(change)
    return json.dumps(body).encode()


@st.composite
def hostile(draw: st.DrawFn, now: datetime) -> Input:
    """A record no receiver may store: garbage, broken JSON, wrong types, impossible times."""
    event = draw(events(now))
    family = draw(st.sampled_from(list(TopicFamily)))
    good = encode_event(event)
    flaw = draw(
        st.sampled_from(
            [
                "garbage",
                "empty",
                "truncated",
                "unknown kind",
                "wrong type",
                "newer schema",
                "year 1",
                "year 2200",
                "a day ahead",
                "eleven years old",
                "invalid utf-8",
                "deep nesting",
                "not an object",
            ]
        )
    )
    value: bytes
    if flaw == "garbage":
        value = b"\xff" + draw(st.binary(max_size=512))
    elif flaw == "empty":
        value = b""
    elif flaw == "truncated":
        value = good[: draw(st.integers(1, len(good) - 1))]
    elif flaw == "unknown kind":
        value = _mutated(event, {"kind": "gpu_metricz"})
    elif flaw == "wrong type":
        value = _mutated(event, {"ts": draw(st.sampled_from([12, True, [], {}, "yesterday"]))})
    elif flaw == "newer schema":
        value = _mutated(event, {"schema_version": 99})
    elif flaw in ("year 1", "year 2200"):
        year = "0001" if flaw == "year 1" else "2200"
        value = _mutated(event, {"ts": f"{year}-01-01T00:00:00Z"})
    elif flaw == "a day ahead":
        value = _mutated(event, {"ts": (now + timedelta(days=1)).isoformat()})
    elif flaw == "eleven years old":
        value = _mutated(event, {"ts": (now - timedelta(days=4018)).isoformat()})
    elif flaw == "invalid utf-8":
        value = good[:-1] + b',"x":"\xc3\x28"}'
    elif flaw == "deep nesting":
        value = b'{"kind":"log","nested":' + b"[" * 5000 + b"]" * 5000 + b"}"
    else:
        value = json.dumps([json.loads(good)]).encode()
    return Input(family, draw(st.none() | st.binary(max_size=16)), value, flaw=flaw)


@st.composite
def batches(draw: st.DrawFn, now: datetime, max_size: int) -> list[Input]:
    """A batch of valid events with about one hostile record in four, shuffled."""
    good = draw(st.lists(events(now).map(valid), min_size=max_size // 2, max_size=max_size))
    bad = draw(st.lists(hostile(now), min_size=len(good) // 4, max_size=len(good) // 3 + 1))
    mixed = good + bad
    draw(st.randoms(use_true_random=False)).shuffle(mixed)
    return mixed
