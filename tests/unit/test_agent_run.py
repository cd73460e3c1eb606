"""The Agent: collectors published through the in-process bus, failures counted, never fatal."""

from __future__ import annotations

import logging
import shutil
import socket
import threading
from collections import Counter
from pathlib import Path

import pynvml
import pytest

from ingest.agent.run import Agent, Scheduled
from ingest.agent.settings import AgentSettings
from ingest.bus import BusError, InProcessBus
from ingest.schema import EventBase, GpuMetrics, HostMetrics, LogLine, decode_event
from tests.agent_fixtures import kernel_lines, load_fake_nvml

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agent"


fake_nvml = load_fake_nvml()


@pytest.fixture
def settings(tmp_path: Path) -> AgentSettings:
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "host_root", root)
    kern = tmp_path / "kern.log"
    kern.write_text("\n".join(_xid79()) + "\n")
    return AgentSettings(
        node="gpu-node-3",
        interval_s=0.05,
        log_poll_s=0.02,
        kernel_log=str(kern),
        train_logs=[str(tmp_path / "train" / "*.log")],
        host_root=root,
        logs_from_start=True,
    )


def _xid79() -> list[str]:
    return kernel_lines("xid-79")


def drain(bus: InProcessBus) -> list[EventBase]:
    consumer = bus.consumer("test", bus.topics.telemetry())
    records = consumer.poll(100_000, 0.1)
    consumer.close()
    return [decode_event(r.value) for r in records]


def test_run_once_publishes_every_collector_and_events_decode(settings: AgentSettings) -> None:
    bus = InProcessBus()
    agent = Agent(settings, bus.producer(), nvml=fake_nvml.FakeNvml.h100_node())
    sent = agent.run_once()
    events = drain(bus)
    kinds = Counter(type(e) for e in events)
    assert kinds == {GpuMetrics: 1, HostMetrics: 1, LogLine: len(_xid79())}
    assert sent == len(events)
    gpu = next(e for e in events if isinstance(e, GpuMetrics))
    assert gpu.node == "gpu-node-3" and len(gpu.gpus) == 3
    assert gpu.gpus[2].fb_used == 9221.0
    host = next(e for e in events if isinstance(e, HostMetrics))
    assert [n.nic for n in host.nics] == ["mlx5_0", "mlx5_1", "eth0"]
    stats = agent.stats()
    assert (stats["gpu.sent"], stats["host.sent"], stats["logs.sent"]) == (1, 1, len(_xid79()))
    assert stats["dropped"] == stats["errors"] == 0
    agent.close()


def test_without_a_driver_host_and_logs_still_publish(
    settings: AgentSettings, caplog: pytest.LogCaptureFixture
) -> None:
    bus = InProcessBus()
    no_driver = fake_nvml.FakeNvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    agent = Agent(settings, bus.producer(), nvml=no_driver)
    with caplog.at_level(logging.WARNING, logger="ingest.agent"):
        agent.run_once()
        agent.run_once()
    kinds = Counter(type(e) for e in drain(bus))
    assert kinds == {HostMetrics: 2, LogLine: len(_xid79())}
    nvml_warnings = [r for r in caplog.records if "NVML unavailable" in r.getMessage()]
    assert len(nvml_warnings) == 1
    assert "NVML_ERROR_DRIVER_NOT_LOADED" in nvml_warnings[0].getMessage()
    assert agent.stats()["errors"] == 0
    agent.close()


class FlakyProducer:
    """A producer whose broker refuses every `refuse_every`-th record (0: never)."""

    def __init__(self, bus: InProcessBus, refuse_every: int = 2) -> None:
        self._inner = bus.producer()
        self.refuse_every = refuse_every
        self.attempts = 0
        self.flushed = False

    def send(self, event: EventBase) -> None:
        self.attempts += 1
        if self.refuse_every and self.attempts % self.refuse_every == 0:
            raise BusError("broker unreachable")
        self._inner.send(event)

    def send_raw(self, topic: str, key: bytes | None, value: bytes) -> None:
        self._inner.send_raw(topic, key, value)

    def flush(self, timeout_s: float = 30.0) -> None:
        self.flushed = True

    def close(self) -> None:
        self._inner.close()


def test_bus_errors_count_drops_and_the_agent_keeps_going(settings: AgentSettings) -> None:
    bus = InProcessBus()
    producer = FlakyProducer(bus)
    agent = Agent(settings, producer, nvml=fake_nvml.FakeNvml.h100_node())
    agent.run_once()
    agent.run_once()
    stats = agent.stats()
    assert stats["sent"] + stats["dropped"] == producer.attempts
    assert stats["dropped"] == producer.attempts // 2 > 0
    assert len(drain(bus)) == stats["sent"]
    agent.close()


class BrokenCollector:
    """A collector whose source fails every time."""

    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    def collect(self) -> list[EventBase]:
        self.calls += 1
        raise RuntimeError("sysfs went away")

    def close(self) -> None:
        """Nothing held."""


def test_a_failing_collector_is_counted_and_the_others_run(
    settings: AgentSettings, caplog: pytest.LogCaptureFixture
) -> None:
    from ingest.agent.host import HostSampler

    bus = InProcessBus()
    broken = BrokenCollector()
    host = HostSampler("gpu-node-3", settings.host_root)
    agent = Agent(
        settings, bus.producer(), collectors=[Scheduled(broken, 0.01), Scheduled(host, 0.01)]
    )
    with caplog.at_level(logging.ERROR, logger="ingest.agent.run"):
        agent.run_once()
    assert agent.stats()["broken.errors"] == 1
    assert agent.stats()["host.sent"] == 1
    assert "collector broken failed" in caplog.records[0].getMessage()
    assert caplog.records[0].exc_info is not None


def test_run_loops_until_stopped_then_flushes(settings: AgentSettings) -> None:
    bus = InProcessBus()
    producer = FlakyProducer(bus, refuse_every=0)
    broken = BrokenCollector()
    agent = Agent(settings, producer, nvml=fake_nvml.FakeNvml.h100_node())
    agent.collectors.append(Scheduled(broken, 0.01))
    stop = threading.Event()
    runner = threading.Thread(target=agent.run, args=(stop,))
    runner.start()
    train = Path(settings.train_logs[0]).parent
    train.mkdir()
    (train / "rank0.log").write_text("iteration 1 | lm loss: 2.24\n")
    stop.wait(0.6)
    stop.set()
    runner.join(10)
    assert not runner.is_alive()
    stats = agent.stats()
    assert stats["gpu.collects"] >= 3 and stats["host.collects"] >= 3
    assert stats["logs.collects"] > stats["gpu.collects"]  # logs are polled more often
    assert stats["broken.errors"] == broken.calls >= 3
    assert producer.flushed
    assert stats["dropped"] == 0
    train_lines = [
        e for e in drain(bus) if isinstance(e, LogLine) and str(e.path).endswith("rank0.log")
    ]
    assert [e.line for e in train_lines] == ["iteration 1 | lm loss: 2.24"]


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TG_AGENT_INTERVAL_S", "0.5")
    monkeypatch.setenv("TG_AGENT_TRAIN_LOGS", "/runs/*/rank*.log, /runs/launcher.out")
    monkeypatch.setenv("TG_AGENT_DISK_MOUNTS", '["/", "/scratch"]')
    monkeypatch.setenv("TG_AGENT_KERNEL_LOG", "journal")
    s = AgentSettings()
    assert s.node == socket.gethostname()
    assert s.interval_s == 0.5
    assert s.train_logs == ["/runs/*/rank*.log", "/runs/launcher.out"]
    assert s.disk_mounts == ["/", "/scratch"]
    assert s.kernel_log == "journal"
    assert s.host_root == Path("/") and s.max_line_bytes == 16 * 1024
    monkeypatch.setenv("TG_AGENT_INTERVAL_S", "0")
    with pytest.raises(ValueError, match="interval_s"):
        AgentSettings()
