"""The services' Prometheus series: names, types, values from the stats, the fleet cache."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi import FastAPI, HTTPException
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

from actions.model import ActionKind
from analytics.store import StoreUnavailable
from api.timing import UNMATCHED, RequestTiming
from diagnosis.worker import WorkerStats
from ingest.agent.run import Agent, Scheduled
from ingest.agent.settings import AgentSettings
from ingest.bus import InProcessBus, Topics
from ingest.schema import EventBase
from ingest.sink import SinkStats
from tests.builders import make_host
from trainguard.metrics import services
from trainguard.metrics.api import request_observer
from trainguard.metrics.exposition import BuildInfo, new_registry
from trainguard.metrics.fleet import FleetCollector

REPO = Path(__file__).resolve().parents[2]


def families(registry: CollectorRegistry) -> dict[str, Metric]:
    """Return the registry's exposition, parsed back, by family name."""
    text = generate_latest(registry).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    """Return one sample's value (None when absent)."""
    return registry.get_sample_value(name, labels or None)


def test_counters_end_in_total_and_every_family_has_help():
    registry = new_registry("sink")
    services.register_sink(registry, SimpleNamespace(stats=SinkStats(), observe_write=None))
    services.register_diagnosis(registry, SimpleNamespace(stats=WorkerStats(), observe_stage=None))
    services.step_histogram(registry)
    request_observer(registry)
    found = families(registry)
    assert found, "nothing exported"
    for name, family in found.items():
        assert family.documentation, f"{name} has no HELP"
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples), name
    assert found["trainguard_sink_batch_write_seconds"].type == "histogram"
    assert found["trainguard_api_request_seconds"].type == "histogram"


def test_sink_series_are_its_stats_at_scrape_time():
    registry = CollectorRegistry()
    sink = SimpleNamespace(stats=SinkStats(), observe_write=None)
    services.register_sink(registry, sink)
    assert sample(registry, "trainguard_sink_events_written_total") == 0
    sink.stats.events_written, sink.stats.dead_letters, sink.stats.store_up = 120, 3, False
    sink.stats.record_age_s = 7.5
    assert sample(registry, "trainguard_sink_events_written_total") == 120
    assert sample(registry, "trainguard_sink_dead_letters_total") == 3
    assert sample(registry, "trainguard_sink_store_up") == 0
    assert sample(registry, "trainguard_sink_record_age_seconds") == 7.5
    sink.observe_write(0.2)
    sink.observe_write(40.0)
    assert sample(registry, "trainguard_sink_batch_write_seconds_count") == 2
    assert sample(registry, "trainguard_sink_batch_write_seconds_bucket", le="0.25") == 1


def test_diagnosis_stages_are_labelled_and_present_before_any_tick():
    registry = CollectorRegistry()
    worker = SimpleNamespace(stats=WorkerStats(), observe_stage=None)
    services.register_diagnosis(registry, worker)
    for stage in ("tick", "detect", "publish"):
        assert sample(registry, "trainguard_diagnose_stage_seconds_count", stage=stage) == 0
    worker.observe_stage("detect", 0.003)
    worker.stats.fed = 9
    assert sample(registry, "trainguard_diagnose_stage_seconds_count", stage="detect") == 1
    assert sample(registry, "trainguard_diagnose_events_fed_total") == 9


class _Collector:
    def __init__(self, name: str, events: Sequence[EventBase], fail: bool = False) -> None:
        self.name, self.events, self.fail = name, events, fail

    def collect(self) -> Sequence[EventBase]:
        if self.fail:
            raise OSError("no /proc here")
        return self.events

    def close(self) -> None:
        return None


def test_agent_counters_are_per_collector():
    bus = InProcessBus(Topics("m."), partitions=1)
    agent = Agent(
        AgentSettings(node="n1"),
        bus.producer(),
        collectors=[
            Scheduled(_Collector("host", [make_host(), make_host(seconds=1)]), 1.0),
            Scheduled(_Collector("gpu", [], fail=True), 1.0),
        ],
    )
    registry = CollectorRegistry()
    services.register_agent(registry, agent)
    agent.run_once()
    agent.run_once()
    assert sample(registry, "trainguard_agent_events_sent_total", collector="host") == 4
    assert sample(registry, "trainguard_agent_events_sent_total", collector="gpu") == 0
    assert sample(registry, "trainguard_agent_collector_errors_total", collector="gpu") == 2
    assert sample(registry, "trainguard_agent_collects_total", collector="host") == 2


def test_action_steps_by_kind_and_outcome():
    registry = CollectorRegistry()
    observe = services.step_histogram(registry)
    observe(ActionKind.ISOLATE_NODE, "done", 0.4)
    observe(ActionKind.ISOLATE_NODE, "failed", 2.0)
    labels = {"kind": "isolate_node", "outcome": "done"}
    assert sample(registry, "trainguard_action_step_seconds_count", **labels) == 1
    assert sample(registry, "trainguard_action_step_seconds_sum", **labels) == 0.4


class _Reader:
    """A fleet reader returning its call count as a gauge, or failing when told to."""

    def __init__(self) -> None:
        self.calls, self.fail = 0, False

    def __call__(self, store: object) -> list[Metric]:
        if self.fail:
            raise StoreUnavailable("ClickHouse at 127.0.0.1:1 unreachable")
        self.calls += 1
        return [GaugeMetricFamily("trainguard_test_reads", "Reads so far.", value=self.calls)]


def test_fleet_series_are_read_at_most_once_per_cache_period():
    now = [100.0]
    reader = _Reader()
    registry = CollectorRegistry()
    registry.register(FleetCollector(object(), [reader], cache_s=15, monotonic=lambda: now[0]))
    assert reader.calls == 0  # registering reads nothing
    assert sample(registry, "trainguard_test_reads") == 1
    now[0] += 10
    assert sample(registry, "trainguard_test_reads") == 1  # cached
    now[0] += 5
    assert sample(registry, "trainguard_test_reads") == 2
    assert (sample(registry, "trainguard_fleet_read_timestamp_seconds") or 0) > 0


def test_a_failed_fleet_read_keeps_the_last_values_and_counts_the_error():
    now = [0.0]
    reader = _Reader()
    registry = CollectorRegistry()
    registry.register(FleetCollector(object(), [reader], cache_s=1, monotonic=lambda: now[0]))
    assert sample(registry, "trainguard_test_reads") == 1
    read_at = sample(registry, "trainguard_fleet_read_timestamp_seconds")
    reader.fail = True
    now[0] += 2
    assert sample(registry, "trainguard_test_reads") == 1
    assert sample(registry, "trainguard_fleet_read_errors_total") == 1
    assert sample(registry, "trainguard_fleet_read_timestamp_seconds") == read_at


def test_requests_are_timed_by_route_template_and_status():
    seen: list[tuple[str, str, int]] = []
    app = FastAPI()

    @app.get("/v1/incidents/{incident_id}")
    def incident(incident_id: str) -> dict[str, str]:
        if incident_id == "boom":
            raise RuntimeError("handler failed")
        if incident_id == "gone":
            raise HTTPException(404, "no such incident")
        return {"id": incident_id}

    app.add_middleware(
        RequestTiming,
        observe=lambda m, r, s, t: seen.append((m, r, s)),
        known_paths=["/v1/gpus"],
    )
    client = TestClient(app, raise_server_exceptions=False)
    for path in ("/v1/incidents/a1", "/v1/incidents/b2", "/v1/incidents/gone"):
        client.get(path)
    client.get("/v1/incidents/boom")
    client.get("/v1/gpus")  # not routed here: a known path keeps its name
    client.get("/v1/scan/../../etc/passwd")
    template = "/v1/incidents/{incident_id}"
    assert seen == [
        ("GET", template, 200),
        ("GET", template, 200),
        ("GET", template, 404),
        ("GET", template, 500),
        ("GET", "/v1/gpus", 404),
        ("GET", UNMATCHED, 404),
    ]


def test_build_info_names_the_role_and_refuses_an_unknown_one():
    registry = new_registry("act")
    info = families(registry)["trainguard_build_info"].samples[0]
    assert info.labels["role"] == "act" and info.labels["version"] and info.value == 1
    with pytest.raises(ValueError, match="unknown role"):
        BuildInfo("console")


def test_the_cli_imports_no_prometheus_client_before_a_command_runs():
    """`trainguard api` sets PROMETHEUS_MULTIPROC_DIR first: no earlier import may pick memory."""
    code = (
        "import sys\n"
        "from trainguard.cli import build_parser\n"
        "build_parser()\n"
        "sys.exit('prometheus_client' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
