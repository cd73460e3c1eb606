"""The twin streamed through real Kafka into the ClickHouse server: every event stored once,
and a fault's evidence queryable where the ground truth says it is."""

from __future__ import annotations

import threading

import pytest

from analytics import evidence
from analytics.writer import ClickHouseWriter
from ingest.sink import Sink, SinkSettings
from sim.output import BusSink
from sim.scenario import parse_scenario
from sim.twin import Twin
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.integration


def test_twin_through_kafka_into_clickhouse(kafka_bus, server_store):
    scenario = parse_scenario(
        {
            "seed": 9,
            "cluster": {"nodes": 4, "gpus_per_node": 8, "nodes_per_rack": 2},
            "jobs": [{"id": "j", "tp": 8, "dp": 4, "step_time_s": 2.0}],
            "duration_s": 120,
            "faults": [
                {"kind": "xid79", "node": 2, "gpu": 5, "at_s": 60},
                {"kind": "nic_down", "node": 1, "nic": 3, "at_s": 30},
            ],
        }
    )
    producer = kafka_bus.producer()
    bus_sink = BusSink(producer, speed=None)
    truth = Twin(scenario, bus_sink).run()
    producer.flush()
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}sink", kafka_bus.topics.telemetry())
    sink = Sink(consumer, ClickHouseWriter(server_store), SinkSettings(batch_seconds=0.3))
    stop = threading.Event()
    thread = threading.Thread(target=sink.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: sink.stats.events_written >= bus_sink.sent, 120, "every twin event")
    finally:
        stop.set()
        thread.join(timeout=30)
        consumer.close()
    assert sink.stats.events_written == bus_sink.sent and sink.stats.dead_letters == 0
    lost = evidence.gpus_with_nvml_errors(server_store)
    component = next(f["component"] for f in truth if f["kind"] == "xid79")
    assert lost[["node", "gpu"]].values.tolist() == [[component["node"], component["gpu"]]]
    down = evidence.nic_ports_down(server_store)
    assert down[["node", "nic"]].values.tolist() == [["node-0001", "mlx5_3"]]
    assert evidence.xid_lines_by_node(server_store)["node"].tolist() == ["node-0002"]
