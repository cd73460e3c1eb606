"""A render or compose file that would crash-loop, or break metrics or credentials, fails
the check of tests/deploy_artifacts.py (each case breaks one thing in a good render).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import yaml

from tests.deploy_artifacts import container_problems, k8s_problems
from tests.deploy_manifests import compose_containers
from tests.integration.deploy_helpers import (
    COMPOSE,
    DEFAULT_VALUES,
    IMAGE,
    MONITORING_VALUES,
    Doc,
    by_kind,
    render,
)

UNKNOWN = "TG_" + "API_URL"
"""The old manifests' name for the console's API address (TG_CONSOLE_API_URL): read by no
setting. Built, not written, so tests/unit/test_env_check.py's scan of the repository for
TG_* names does not count it."""


def test_a_compose_metrics_port_bound_to_loopback_fails_the_check():
    doc = yaml.safe_load(COMPOSE.read_text())
    doc["services"]["act"]["environment"]["TG_ACT_METRICS_HOST"] = "127.0.0.1"
    act = next(c for c in compose_containers(doc, IMAGE) if c.where.endswith(" act"))
    assert any("listens on 127.0.0.1:9104" in p for p in container_problems(act))
    doc["services"]["act"]["environment"]["TG_ALERTMANAGER_PASSWORD_FILE"] = "/run/secrets/am"
    doc["services"]["act"]["environment"]["TG_ALERTMANAGER_USERNAME"] = "tg"
    act = next(c for c in compose_containers(doc, IMAGE) if c.where.endswith(" act"))
    problems = container_problems(act)
    assert any("TG_ALERTMANAGER_PASSWORD_FILE=/run/secrets/am: no Secret" in p for p in problems)
    doc["services"]["act"]["secrets"] = ["am"]
    act = next(c for c in compose_containers(doc, IMAGE) if c.where.endswith(" act"))
    assert not any("PASSWORD_FILE" in p for p in container_problems(act))


def _api(docs: list[Doc]) -> Doc:
    return by_kind(docs, "Deployment")["api"]["spec"]["template"]["spec"]["containers"][0]


def _set_env(c: Doc, name: str, value: str) -> None:
    c["env"] = [e for e in c["env"] if e["name"] != name] + [{"name": name, "value": value}]


def _bad_flag(docs: list[Doc]) -> None:
    _api(docs)["args"] = ["api", "--port", "8000"]


def _unknown_name(docs: list[Doc]) -> None:
    _set_env(_api(docs), UNKNOWN, "http://x")


def _bad_value(docs: list[Doc]) -> None:
    _set_env(_api(docs), "TG_API_WORKERS", "many")


def _literal_secret(docs: list[Doc]) -> None:
    _set_env(_api(docs), "TG_CLICKHOUSE_PASSWORD", "hunter2")


def _loopback(docs: list[Doc]) -> None:
    _set_env(_api(docs), "TG_API_HOST", "127.0.0.1")


def _port_mismatch(docs: list[Doc]) -> None:
    _set_env(_api(docs), "TG_API_PORT", "9999")


def _probe_path(docs: list[Doc]) -> None:
    _api(docs)["livenessProbe"]["httpGet"]["path"] = "/health"


def _service_target(docs: list[Doc]) -> None:
    by_kind(docs, "Service")["api"]["spec"]["ports"][0]["targetPort"] = "web"


def _one_shot_service(docs: list[Doc]) -> None:
    _api(docs)["args"] = ["migrate"]


def _missing_secret_key(docs: list[Doc]) -> None:
    secret = next(iter(by_kind(docs, "Secret").values()))
    del secret["data"]["webhook-key"]


def _embedded_bus(docs: list[Doc]) -> None:
    sink = by_kind(docs, "Deployment")["sink"]["spec"]["template"]["spec"]["containers"][0]
    _set_env(sink, "TG_KAFKA_MODE", "embedded")


def _env_from(docs: list[Doc]) -> None:
    _api(docs)["envFrom"] = [{"configMapRef": {"name": "more-settings"}}]


def _no_webhook_key(docs: list[Doc]) -> None:
    c = _api(docs)
    c["env"] = [e for e in c["env"] if e["name"] != "TG_WEBHOOK_KEY"]


def _container_of(docs: list[Doc], name: str) -> Doc:
    return by_kind(docs, "Deployment")[name]["spec"]["template"]["spec"]["containers"][0]


def _metrics_env_port(docs: list[Doc]) -> None:
    _set_env(_container_of(docs, "act"), "TG_ACT_METRICS_PORT", "9999")


def _scrape_annotation(docs: list[Doc]) -> None:
    by_kind(docs, "Service")["api-metrics"]["metadata"]["annotations"]["prometheus.io/port"] = (
        "8700"
    )


def _metrics_service_on_http(docs: list[Doc]) -> None:
    by_kind(docs, "Service")["api-metrics"]["spec"]["ports"][0]["targetPort"] = "http"


def _api_metrics_loopback(docs: list[Doc]) -> None:
    _set_env(_api(docs), "TG_API_METRICS_HOST", "127.0.0.1")


def _agent_metrics_port(docs: list[Doc]) -> None:
    agent = by_kind(docs, "DaemonSet")["agent"]["spec"]["template"]["spec"]["containers"][0]
    agent["env"] = [e for e in agent["env"] if e["name"] != "TG_AGENT_METRICS_PORT"]


BROKEN: dict[str, tuple[Callable[[list[Doc]], None], str]] = {
    "bad flag": (_bad_flag, "`trainguard api --port 8000` exits 2"),
    "unknown TG_ name": (_unknown_name, f"unknown environment variable {UNKNOWN}"),
    "bad value": (_bad_value, "invalid settings: ApiSettings"),
    "literal secret": (_literal_secret, "secret TG_CLICKHOUSE_PASSWORD is a literal value"),
    "loopback": (_loopback, "listens on 127.0.0.1:8700"),
    "port mismatch": (_port_mismatch, "port http=8700 but the process listens on [9105, 9999]"),
    "probe path": (_probe_path, "livenessProbe path /health is not served"),
    "service target": (_service_target, "targetPort web is no port of its pods"),
    "one-shot service": (_one_shot_service, "`trainguard migrate` exits: not a service"),
    "missing secret key": (_missing_secret_key, "has no key webhook-key"),
    "embedded bus": (_embedded_bus, "exits 2 without TG_KAFKA_MODE=kafka"),
    "no webhook key": (_no_webhook_key, "without TG_WEBHOOK_KEY"),
    "envFrom": (_env_from, "envFrom hides its names"),
    "metrics env port": (_metrics_env_port, "port metrics=9104 but the process listens on [9999]"),
    "scrape annotation": (_scrape_annotation, "prometheus.io/port 8700 is not where"),
    "metrics Service on http": (_metrics_service_on_http, "port metrics http is not where"),
    "api metrics loopback": (_api_metrics_loopback, "listens on 127.0.0.1:9105"),
    "agent without metrics port": (_agent_metrics_port, "listens on nothing"),
}


def _act_pod(docs: list[Doc]) -> Doc:
    return dict(by_kind(docs, "Deployment")["act"]["spec"]["template"]["spec"])


def _unmounted_password(docs: list[Doc]) -> None:
    act = _container_of(docs, "act")
    act["volumeMounts"] = [m for m in act["volumeMounts"] if m["name"] != "credentials"]


def _password_path(docs: list[Doc]) -> None:
    _set_env(
        _container_of(docs, "act"), "TG_ALERTMANAGER_PASSWORD_FILE", "/etc/trainguard/secrets/pw"
    )


def _password_from_env(docs: list[Doc]) -> None:
    act = _container_of(docs, "act")
    act["env"] = [e for e in act["env"] if e["name"] != "TG_ALERTMANAGER_PASSWORD_FILE"]
    key_ref = {"secretKeyRef": {"name": "tg-trainguard", "key": "alertmanager-password"}}
    act["env"].append({"name": "TG_ALERTMANAGER_PASSWORD_FILE", "valueFrom": key_ref})


def _secret_without_file_key(docs: list[Doc]) -> None:
    del by_kind(docs, "Secret")["tg-trainguard"]["data"]["alertmanager-password"]


def _monitor_port(docs: list[Doc]) -> None:
    by_kind(docs, "ServiceMonitor")["tg-trainguard"]["spec"]["endpoints"][0]["port"] = "http"


def _monitor_job(docs: list[Doc]) -> None:
    by_kind(docs, "ServiceMonitor")["tg-trainguard"]["spec"]["jobLabel"] = (
        "app.kubernetes.io/component"
    )


def _monitor_selector(docs: list[Doc]) -> None:
    monitor = by_kind(docs, "ServiceMonitor")["tg-trainguard"]["spec"]
    monitor["selector"]["matchLabels"]["trainguard.io/metrics"] = "yes"


BROKEN_MONITORING: dict[str, tuple[Callable[[list[Doc]], None], str]] = {
    "unmounted password": (_unmounted_password, "no Secret volume is mounted there"),
    "password path": (_password_path, "mounted there has no such file"),
    "password file from env": (_password_from_env, "must be a literal path into a Secret"),
    "Secret without the file's key": (
        _secret_without_file_key,
        "volume credentials: Secret tg-trainguard has no key alertmanager-password",
    ),
    "monitor port": (_monitor_port, "has no port named http"),
    "monitor job": (_monitor_job, "is scraped as job 'act', not trainguard-<role>"),
    "monitor selector": (_monitor_selector, "selects no Service"),
}


@pytest.fixture(scope="module")
def default_render() -> list[Doc]:
    return render(DEFAULT_VALUES)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_render_that_would_crash_loop_fails_the_check(case, default_render):
    docs = copy.deepcopy(default_render)
    break_it, expected = BROKEN[case]
    break_it(docs)
    problems = k8s_problems(docs)
    assert any(expected in p for p in problems), problems


def test_a_compose_service_with_a_bad_flag_or_name_fails_the_check():
    doc = yaml.safe_load(COMPOSE.read_text())
    doc["services"]["console"]["command"] = ["console", "--port", "8501"]
    doc["services"]["console"]["environment"][UNKNOWN] = "http://api:8700"
    console = next(c for c in compose_containers(doc, IMAGE) if c.where.endswith("console"))
    problems = container_problems(console)
    assert any("`trainguard console --port 8501` exits 2" in p for p in problems), problems
    doc["services"]["console"]["command"] = ["console"]
    console = next(c for c in compose_containers(doc, IMAGE) if c.where.endswith("console"))
    assert any(f"variable {UNKNOWN}" in p for p in container_problems(console))


@pytest.mark.parametrize("case", sorted(BROKEN_MONITORING))
def test_a_broken_credential_file_or_service_monitor_fails_the_check(case):
    docs = render(MONITORING_VALUES)
    assert k8s_problems(docs) == []
    break_it, expected = BROKEN_MONITORING[case]
    break_it(docs)
    problems = k8s_problems(docs)
    assert any(expected in p for p in problems), problems
