"""Debian's real Prometheus scraping every TrainGuard service while a faulty twin run flows.

The twin's telemetry goes to Kafka; the sink, diagnosis and action engine (auto mode, the
in-memory executors) run as `trainguard` processes, the API with two workers, the agent on
its own topics. Prometheus scrapes them every second and the test reads the series back
through its HTTP API, comparing them with what the store says happened. Every service's
exposition passes `promtool check metrics`, and every series that deploy/prometheus/rules.yml
and deploy/grafana/trainguard.json name is one the services export.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
from datetime import UTC, datetime

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from actions import store as db
from actions.model import FINAL_STATES, State
from actions.safety import BREAKER
from analytics.ops import job_progress, latest_data_time
from api.auth import Role, TokenBook
from diagnosis.incident_store import IncidentFilter, all_incidents
from diagnosis.model import IncidentStatus
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from sim.output import BusSink
from sim.scenario import parse_scenario
from sim.twin import Twin
from tests.api_fixtures import SCENARIO
from tests.integration.conftest import REPO, process_env, wait_for
from tests.integration.prometheus_helpers import (
    PROMETHEUS,
    PROMTOOL,
    Proc,
    by_label,
    free_port,
    http_get,
    query,
    start_prometheus,
    start_trainguard,
    value,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RULES = REPO / "deploy" / "prometheus" / "rules.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "trainguard.json"
SERIES = re.compile(r"\btrainguard_[a-z0-9_]+\b|\bup\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def exported_names(text: str) -> set[str]:
    """Return the series names an exposition declares (families with no samples included)."""
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + s for s in SUFFIXES.get(family.type, ("",)))
    return names


def expressions() -> list[str]:
    """Return every PromQL expression of the shipped alert rules and dashboard."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rules = [r["expr"] for g in groups for r in g["rules"]]
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return rules + [t["expr"] for p in panels for t in p.get("targets", [])]


def _assert_all_alive(procs: list[Proc]) -> bool:
    for proc in procs:
        assert proc.alive(), f"{proc.name} exited:\n{proc.tail()}"
    return True


@pytest.fixture
def agent_topics(kafka_bus: KafkaBus, services, topics) -> Topics:
    """Topics of the agent only, so the sink's counts are the twin's events alone."""
    own = Topics(f"{topics.prefix}agent.")
    KafkaBus(services.kafka, own).ensure_topics(own.telemetry(), partitions=1)
    return own


def test_prometheus_scrapes_every_service(
    services, topics, kafka_bus, server_store, agent_topics, tmp_path
):
    assert PROMETHEUS.exists() and PROMTOOL.exists(), "apt-get install prometheus (deploy/dev.sh)"
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=2)
    token = TokenBook(server_store).create("prometheus-test", Role.VIEWER)
    ports = {role: free_port() for role in ("sink", "diagnose", "act", "api", "agent")}
    api_port = free_port()
    env = process_env(services, topics, server_store)
    api_tmp = tmp_path / "api-tmp"
    api_tmp.mkdir()
    roles = {
        "sink": (["sink"], {"TG_SINK_METRICS_PORT": str(ports["sink"])}),
        "diagnose": (
            ["diagnose"],
            {
                "TG_DIAGNOSE_METRICS_PORT": str(ports["diagnose"]),
                "TG_DIAGNOSE_METRICS_CACHE_S": "0",
                "TG_DIAGNOSE_PUBLISH_INTERVAL_S": "0",
            },
        ),
        "act": (
            ["act"],
            {
                "TG_ACT_METRICS_PORT": str(ports["act"]),
                "TG_ACT_METRICS_CACHE_S": "0",
                "TG_ACT_MODE": "auto",
                "TG_ACT_EXECUTOR": "local",
                "TG_ACT_INCIDENT_TTL_S": str(10 * 365 * 86400),  # the twin's days are past
            },
        ),
        "api": (
            ["api"],
            {
                "TG_API_PORT": str(api_port),
                "TG_API_WORKERS": "2",
                "TG_API_METRICS_PORT": str(ports["api"]),
                "TMPDIR": str(api_tmp),  # where its multiprocess directory is made
            },
        ),
        "agent": (
            ["agent"],
            {
                "TG_AGENT_METRICS_PORT": str(ports["agent"]),
                "TG_KAFKA_TOPIC_PREFIX": agent_topics.prefix,
                "TG_AGENT_NODE": f"prom-{topics.prefix.strip('.')}",
                "TG_AGENT_KERNEL_LOG": "off",
                "TG_AGENT_INTERVAL_S": "0.5",
            },
        ),
    }
    with contextlib.ExitStack() as stack:
        procs = []
        for role, (command, extra) in roles.items():
            proc = start_trainguard(role, command, {**env, **extra}, ports[role], tmp_path)
            stack.callback(proc.stop)
            procs.append(proc)
        prometheus = start_prometheus(
            {f"trainguard-{role}": port for role, port in ports.items()}, RULES, tmp_path
        )
        stack.callback(prometheus.stop)
        procs.append(prometheus)

        def up() -> bool:
            _assert_all_alive(procs)
            try:
                found = by_label(prometheus, 'up{job=~"trainguard-.*"}', "job")
            except (OSError, AssertionError):
                return False  # Prometheus still starting
            return len(found) == len(ports) and all(v == 1 for v in found.values())

        wait_for(up, 120, "Prometheus scraping all five services", step_s=1)
        sink = BusSink(kafka_bus.producer(), speed=None)
        Twin(parse_scenario(SCENARIO), sink).run()
        sink.producer.flush()

        api = f"http://127.0.0.1:{api_port}"
        auth = {"Authorization": f"Bearer {token}"}

        def serving() -> bool:
            _assert_all_alive(procs)
            try:
                return http_get(f"{api}/healthz")[0] == 200
            except OSError:
                return False

        wait_for(serving, 120, "the API's workers serving", step_s=1)
        for _ in range(10):
            assert http_get(f"{api}/v1/incidents?limit=5", auth)[0] == 200
        for _ in range(2):
            assert http_get(f"{api}/v1/no-such-thing", auth)[0] == 404

        def settled(expr: str, expected: float) -> bool:
            _assert_all_alive(procs)
            return value(prometheus, expr) == expected

        wait_for(
            lambda: settled("trainguard_sink_events_written_total", sink.sent),
            180,
            f"the sink's {sink.sent} events in Prometheus",
            step_s=1,
        )
        wait_for(
            lambda: settled("trainguard_diagnose_records_consumed_total", sink.sent),
            120,
            "diagnosis reading every record",
            step_s=1,
        )
        wait_for(  # nothing left buffered once the input stopped (no drain in a live worker)
            lambda: settled("trainguard_diagnose_events_fed_total", sink.sent),
            60,
            "diagnosis feeding every event it read",
            step_s=1,
        )
        wait_for(
            lambda: (value(prometheus, "trainguard_diagnose_incidents_opened_total") or 0) >= 1,
            120,
            "an incident opened (the twin's Xid 79)",
            step_s=1,
        )
        assert value(prometheus, "trainguard_sink_duplicates_total") == 0
        assert value(prometheus, "trainguard_sink_dead_letters_total") == 0
        assert value(prometheus, "trainguard_sink_batch_write_seconds_count") == value(
            prometheus, "trainguard_sink_batches_total"
        )
        assert (value(prometheus, 'trainguard_diagnose_stage_seconds_count{stage="tick"}') or 0) > 0

        # fleet series, read from the store at scrape time
        gpus = by_label(prometheus, "trainguard_gpus", "state")
        assert sum(gpus.values()) == 64  # 8 nodes x 8 GPUs
        assert gpus["healthy"] < 64  # node 1's GPU 2 fell off the bus

        def open_incidents_agree() -> bool:
            live = [
                i
                for s in (IncidentStatus.OPEN, IncidentStatus.MITIGATING)
                for i in all_incidents(server_store, IncidentFilter(status=s))
            ]
            shown = value(prometheus, "sum(trainguard_incidents_open)") or 0
            return shown == len(live)

        wait_for(open_incidents_agree, 60, "open incidents as the store has them", step_s=1)
        ettr = by_label(prometheus, "trainguard_job_ettr", "job_id")
        assert set(ettr) == {"j1", "j2"}
        progress = job_progress(server_store, now=latest_data_time(server_store))
        assert ettr == pytest.approx(dict(zip(progress["job_id"], progress["ettr"], strict=True)))
        assert all(0 < v < 0.9 for v in ettr.values())  # j1 lost a GPU at 60 s, j2 hung at 90 s
        assert value(prometheus, "trainguard_jobs_running") == 2

        def actions_agree() -> bool:
            stored = db.load_actions(server_store)
            finished = sum(a.state in FINAL_STATES for a in stored)
            running = sum(a.state == State.EXECUTING for a in stored)  # not timed until done
            executed = int((db.audit_events(server_store)["event"] == "executing").sum())
            return (
                finished > 0
                and value(prometheus, "sum(trainguard_actions_total)") == finished
                and value(prometheus, "sum(trainguard_actions_unfinished)")
                == len(stored) - finished
                and value(prometheus, "sum(trainguard_action_step_seconds_count)")
                == executed - running
            )

        wait_for(actions_agree, 120, "action outcomes and steps as the store has them", step_s=1)
        assert value(prometheus, 'trainguard_breaker_open{breaker="isolation"}') == 0
        db.set_breaker(server_store, BREAKER, True, "test", "prometheus-test", datetime.now(UTC))
        wait_for(
            lambda: value(prometheus, "trainguard_breaker_open") == 1,
            30,
            "the tripped breaker",
            step_s=1,
        )

        # the API's two workers, summed by the launcher, by route template
        routes = by_label(
            prometheus, "sum by (route) (trainguard_api_request_seconds_count)", "route"
        )
        assert routes.pop("/healthz") >= 1  # the readiness polls above
        assert routes == {"/v1/incidents": 10, "unmatched": 2}
        sent = by_label(prometheus, "trainguard_agent_events_sent_total", "collector")
        assert sent["host"] > 0 and set(sent) == {"gpu", "host", "logs"}
        roles_seen = by_label(prometheus, "trainguard_build_info", "role")
        assert set(roles_seen) == set(ports)

        names: set[str] = {"up"}
        for role, port in ports.items():
            status, body = http_get(f"http://127.0.0.1:{port}/metrics")
            assert status == 200, role
            lint = subprocess.run(
                [str(PROMTOOL), "check", "metrics"], input=body, capture_output=True, timeout=30
            )
            assert lint.returncode == 0, f"{role}: {lint.stdout!r} {lint.stderr!r}"
            names |= exported_names(body.decode())
        for expr in expressions():
            missing = set(SERIES.findall(expr)) - names
            assert not missing, f"{expr!r} names series no service exports: {missing}"
            query(prometheus, expr)  # a valid query on the live server
        rules = json.loads(
            http_get(f"http://127.0.0.1:{prometheus.port}/api/v1/rules")[1].decode()
        )["data"]["groups"]
        assert {r["name"] for g in rules for r in g["rules"]} >= {
            "TrainGuardTargetDown",
            "TrainGuardBreakerOpen",
        }
        _assert_all_alive(procs)
        assert len(list(api_tmp.glob("trainguard-api-metrics-*"))) == 1
    assert not list(api_tmp.iterdir()), "the API left its multiprocess directory behind"


def test_a_single_worker_api_serves_its_metrics_and_removes_its_directory(
    services, topics, server_store, tmp_path
):
    api_port, metrics_port = free_port(), free_port()
    api_tmp = tmp_path / "api-tmp"
    api_tmp.mkdir()
    env = {
        **process_env(services, topics, server_store),
        "TG_API_PORT": str(api_port),
        "TG_API_METRICS_PORT": str(metrics_port),
        "TMPDIR": str(api_tmp),
    }
    api = start_trainguard("api", ["api"], env, metrics_port, tmp_path)
    try:

        def serving() -> bool:
            assert api.alive(), api.tail()
            try:
                return http_get(f"http://127.0.0.1:{api_port}/healthz")[0] == 200
            except OSError:
                return False

        wait_for(serving, 60, "the API serving", step_s=0.5)
        assert http_get(f"http://127.0.0.1:{api_port}/v1/nope")[0] == 404
        status, body = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
        text = body.decode()
        assert status == 200
        assert 'trainguard_api_request_seconds_count{method="GET",route="unmatched",' in text
        assert len(list(api_tmp.glob("trainguard-api-metrics-*"))) == 1
        api.popen.send_signal(signal.SIGTERM)
        assert api.popen.wait(30) == 0, api.tail()
    finally:
        api.stop()
    assert not list(api_tmp.iterdir()), "the API left its multiprocess directory behind"
