"""The node agent publishing to real Kafka, stored by the sink in the ClickHouse server.

NVML is the recorded fake (no GPU here); the kernel log holds real Xid 79 lines; the host
tree is recorded sysfs/procfs.
"""

from __future__ import annotations

import shutil
import threading

import pytest

from analytics.queries import gpu_window, node_window
from analytics.writer import ClickHouseWriter
from ingest.agent.run import Agent
from ingest.agent.settings import AgentSettings
from ingest.sink import Sink, SinkSettings
from tests.agent_fixtures import FIXTURES, kernel_lines, load_fake_nvml
from tests.builders import at
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.integration
fake_nvml = load_fake_nvml()


def test_agent_to_kafka_to_clickhouse(kafka_bus, server_store, tmp_path):
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "host_root", root)
    kern = tmp_path / "kern.log"
    kern.write_text("\n".join(kernel_lines("xid-79")) + "\n")
    settings = AgentSettings(
        node="gpu-node-7",
        interval_s=0.2,
        log_poll_s=0.05,
        kernel_log=str(kern),
        host_root=root,
        logs_from_start=True,
    )
    nvml = fake_nvml.FakeNvml.h100_node()
    producer = kafka_bus.producer()
    agent = Agent(settings, producer, nvml=nvml)
    sink = Sink(
        kafka_bus.consumer(f"{kafka_bus.topics.prefix}sink", kafka_bus.topics.telemetry()),
        ClickHouseWriter(server_store),
        SinkSettings(batch_seconds=0.3),
    )
    stop = threading.Event()
    threads = [
        threading.Thread(target=agent.run, args=(stop,), daemon=True),
        threading.Thread(target=sink.run, args=(stop,), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: sink.stats.events_written >= 4, 60, "agent scrapes stored")
        gpu_count = nvml.nvmlDeviceGetCount()
        nvml.fall_off_bus(1)
        wait_for(lambda: _lost_gpu_rows(server_store) > 0, 60, "the lost GPU's nvml_error stored")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        sink.consumer.close()
    far = at(10**8)
    gpus = gpu_window(server_store, "gpu-node-7", at(-(10**9)), far)
    assert gpu_count >= 2
    assert set(gpus["gpu"]) == set(range(gpu_count))
    assert gpus["DCGM_FI_DEV_GPU_TEMP"].notna().any()
    lost = gpus[gpus["nvml_error"] != ""]
    assert set(lost["gpu"]) == {1}
    assert lost["nvml_error"].str.startswith("NVML_ERROR_").all()
    logs = node_window(server_store, "logs", "gpu-node-7", at(-(10**9)), far)
    assert logs["line"].str.contains("Xid").any()
    assert set(logs["source"]) == {"kernel"}
    hosts = node_window(server_store, "host_metrics", "gpu-node-7", at(-(10**9)), far)
    assert len(hosts) >= 1 and hosts["mem_total_bytes"].notna().all()
    assert agent.stats()["errors"] == 0


def _lost_gpu_rows(store) -> int:
    frame = store.query_df(
        f"SELECT count() FROM `{store.database}`.gpu_metrics WHERE nvml_error != ''"
    )
    return int(frame.iloc[0, 0])
