"""Producer -> real Kafka -> sink -> ClickHouse (server and chdb): everything reads back equal."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from analytics.queries import dead_letters, gpu_window, job_steps, latest_topology
from analytics.readback import all_events, port_states
from analytics.store import Store
from analytics.writer import ClickHouseWriter
from ingest.kafka_bus import KafkaBus
from ingest.schema import DEFAULT_CLUSTER, EventBase, HostMetrics, PortSeen
from ingest.sink import Sink, SinkSettings
from tests.builders import at, make_gpu_metrics, make_host, make_log, make_step, one_of_each
from tests.integration.conftest import count, wait_for

pytestmark = pytest.mark.integration


def _sink(bus: KafkaBus, store: Store, group: str = "sink") -> Sink:
    holder: list[Sink] = []
    # both hooks, as trainguard.wiring.build_sink: a member alone still rejoins once when its
    # topics' metadata first arrives, and a revoke without the rewind of the assignment that
    # follows drops the pending batch for good (the positions are kept)
    consumer = bus.consumer(
        f"{bus.topics.prefix}{group}",  # a group per test: an idle member never stalls another
        bus.topics.telemetry(),
        on_assign=lambda tps: holder[0].on_assign(tps),
        on_revoke=lambda tps: holder[0].on_revoke(tps),
    )
    sink = Sink(consumer, ClickHouseWriter(store), SinkSettings(batch_seconds=0.5))
    holder.append(sink)
    return sink


def _drain(sink: Sink, expected: int, timeout_s: float = 60) -> None:
    def done() -> bool:
        sink.step()
        return (
            sink.stats.events_written + sink.stats.dead_letters + sink.stats.duplicates >= expected
        )

    def why() -> str:
        return f"sink {sink.stats}; owned {sorted(map(str, sink.consumer.assignment()))}"

    wait_for(done, timeout_s, f"{expected} records through the sink", step_s=0, detail=why)


def _store(kafka_bus: KafkaBus, store: Store, sent: Sequence[EventBase]) -> None:
    """Publish the events and let the real sink store them all."""
    producer = kafka_bus.producer()
    for event in sent:
        producer.send(event)
    producer.flush()
    sink = _sink(kafka_bus, store)
    _drain(sink, len(sent))
    sink.consumer.close()


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_every_kind_reads_back_equal(store_kind, request, kafka_bus):
    store = request.getfixturevalue(store_kind)
    sent = [
        *one_of_each(),
        *(make_gpu_metrics(node=f"n{i}", seconds=i) for i in range(20)),
        *(make_step(step=s) for s in range(2, 30)),
    ]
    _store(kafka_bus, store, sent)
    stored = {e.id: e for e in all_events(store)}
    assert len(stored) == len(sent)
    for event in sent:
        assert stored[event.id] == event, event.kind
    assert len(gpu_window(store, "n3", at(0), at(10))) == 8
    assert job_steps(store, "job-1", 5, 9)["step"].tolist() == [5, 6, 7, 8, 9]
    assert latest_topology(store, "job-1").layout.tp == 2


def test_garbage_lands_in_dead_letters_and_valid_events_still_flow(kafka_bus, server_store):
    producer = kafka_bus.producer()
    garbage = [b"\xff\xfe\x00\x01binary", b'{"kind": "gpu_metrics", "node": ""}', b"{" * 10]
    for raw in garbage:
        producer.send_raw(kafka_bus.topics.telemetry()[0], b"n1", raw)
    producer.send(make_log())
    producer.flush()
    sink = _sink(kafka_bus, server_store)
    _drain(sink, len(garbage) + 1)
    sink.consumer.close()
    letters = dead_letters(server_store)
    assert sorted(letters["raw"].tolist()) == sorted(garbage)
    assert all(reason for reason in letters["reason"])
    assert count(server_store, "logs") == (1, 1)


def test_replay_after_write_before_commit_stores_once(kafka_bus, server_store):
    """The crash window: rows inserted, offsets not committed, a fresh sink takes over."""
    producer = kafka_bus.producer()
    for i in range(300):
        producer.send(make_log(seq=i, seconds=i))
    producer.flush()
    first = _sink(kafka_bus, server_store, group="g")
    records = []
    wait_for(
        lambda: records.extend(first.consumer.poll(1000, 0.5)) or len(records) >= 300,
        30,
        "300 records",
    )
    events, dead, _ = first._decode(records[:200])
    first.writer.write(events, dead)  # stored ...
    first.consumer.close()  # ... but never committed: the process "died" here
    assert count(server_store, "logs") == (200, 200)
    second = _sink(kafka_bus, server_store, group="g")
    _drain(second, 100)
    second.consumer.close()
    assert count(server_store, "logs") == (300, 300)


def test_nan_loss_is_stored_as_nan(kafka_bus, server_store):
    from ingest.schema import TrainStep

    producer = kafka_bus.producer()
    producer.send(
        TrainStep(job_id="j", step=1, ts=at(1), loss=float("nan"), grad_norm=float("inf"))
    )
    producer.flush()
    sink = _sink(kafka_bus, server_store)
    _drain(sink, 1)
    sink.consumer.close()
    frame = server_store.query_df(
        f"SELECT isNaN(loss) AS nan, isInfinite(grad_norm) AS inf, isNull(mfu) AS missing "
        f"FROM `{server_store.database}`.train_steps"
    )
    assert frame.iloc[0].tolist() == [1, 1, 1]


def _ports(node: str, seconds: float, state: str, downed: int | None = 0) -> HostMetrics:
    """A host scrape whose every NIC port is in `state`, its link_downed counter `downed`."""
    scrape = make_host(node, seconds).model_dump(exclude={"id"})
    scrape["nics"] = [{**nic, "state": state, "link_downed": downed} for nic in scrape["nics"]]
    return HostMetrics.model_validate(scrape)


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_port_states_are_the_last_sampled_before_a_time(store_kind, request, kafka_bus):
    store = request.getfixturevalue(store_kind)
    sent = [
        _ports("n1", 0, "ACTIVE"),
        _ports("n1", 10, "DOWN", 1),
        _ports("n2", 5, "ACTIVE", None),  # a port without the counter (Ethernet)
        _ports("n3", -1000, "DOWN"),  # older than the lookback from either point
    ]
    _store(kafka_bus, store, sent)
    lookback = timedelta(minutes=15)

    nodes = ["n1", "n2", "n3"]
    before = port_states(store, nodes, at(10), lookback)  # the sample at 10 s is not before it
    assert before == {
        DEFAULT_CLUSTER: {
            ("n1", "mlx5_0", 1): PortSeen("ACTIVE", 0),
            ("n1", "mlx5_1", 1): PortSeen("ACTIVE", 0),
            ("n2", "mlx5_0", 1): PortSeen("ACTIVE", None),
            ("n2", "mlx5_1", 1): PortSeen("ACTIVE", None),
        }
    }
    newest = port_states(store, nodes, None, lookback)
    assert newest[DEFAULT_CLUSTER][("n1", "mlx5_0", 1)] == PortSeen("DOWN", 1)
    assert ("n3", "mlx5_0", 1) not in newest[DEFAULT_CLUSTER]
    assert port_states(store, nodes, at(-2000), lookback) == {}
    only = port_states(store, ["n2"], None, lookback)  # the nodes asked for, no other
    assert sorted(only[DEFAULT_CLUSTER]) == [("n2", "mlx5_0", 1), ("n2", "mlx5_1", 1)]
    assert port_states(store, [], None, lookback) == {}
