"""Metrics, alerting and their credentials in the Helm chart and compose.yaml.

Every metrics Service scrapes the port its process listens on, the Prometheus rules are the
shipped ones and promtool accepts them, the ServiceMonitor names each role's job, and the
Alertmanager credentials are mounted Secret files, never environment values.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.deploy_artifacts import k8s_problems
from tests.integration.deploy_helpers import (
    CHART,
    CHART_RULES,
    COMPOSE,
    COMPOSE_PROMETHEUS,
    DEFAULT_VALUES,
    IMAGE,
    METRICS_ROLES,
    MONITORING_VALUES,
    OPERATOR_API,
    REPO,
    RULES,
    Doc,
    by_kind,
    container,
    env_of,
    helm,
    pod_spec,
    render,
)
from tests.integration.prometheus_helpers import PROMTOOL


def _workload_kind(role: str) -> str:
    return "DaemonSet" if role == "agent" else "Deployment"


@pytest.mark.parametrize("values", [DEFAULT_VALUES, MONITORING_VALUES], ids=lambda p: p.stem)
def test_every_metrics_service_scrapes_the_port_its_process_listens_on(values):
    docs = render(values)
    services = by_kind(docs, "Service")
    for role in METRICS_ROLES:
        c = container(docs, _workload_kind(role), role)
        port = int(env_of(c)[f"TG_{role.upper()}_METRICS_PORT"]["value"])
        assert env_of(c)[f"TG_{role.upper()}_METRICS_HOST"]["value"] == "0.0.0.0"
        assert {"name": "metrics", "containerPort": port}.items() <= next(
            p for p in c["ports"] if p["name"] == "metrics"
        ).items()
        svc = services[f"{role}-metrics"]
        assert svc["spec"]["ports"] == [{"name": "metrics", "port": port, "targetPort": "metrics"}]
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["metadata"]["annotations"]["prometheus.io/port"] == str(port)
        assert svc["metadata"]["labels"]["trainguard.io/scrape-job"] == f"trainguard-{role}"
    api_ports = {
        p["name"]: p["containerPort"] for p in container(docs, "Deployment", "api")["ports"]
    }
    assert api_ports["metrics"] != api_ports["http"]  # the launcher's port, not the workers'
    agent = container(docs, "DaemonSet", "agent")["ports"][0]
    assert agent["hostPort"] == agent["containerPort"]  # hostNetwork


def test_metrics_port_0_renders_no_endpoint_and_no_service():
    sets = tuple(f"{r}.metrics.port=0" for r in METRICS_ROLES)
    docs = render(DEFAULT_VALUES, sets=(*sets, "metrics.annotations=false"))
    assert k8s_problems(docs) == []
    assert set(by_kind(docs, "Service")) == {"api", "console"}
    for role in METRICS_ROLES:
        c = container(docs, _workload_kind(role), role)
        assert not any("METRICS" in name for name in env_of(c)), role
        assert all(p["name"] != "metrics" for p in c.get("ports", []))


def test_the_chart_rules_are_deploy_prometheus_rules():
    """One source of truth: the chart's copy is byte for byte the shipped rules file."""
    assert CHART_RULES.read_bytes() == RULES.read_bytes(), (
        f"cp {RULES.relative_to(REPO)} {CHART_RULES.relative_to(REPO)}"
    )


def test_the_prometheus_rule_is_the_shipped_rules_and_promtool_accepts_it(tmp_path):
    docs = render(MONITORING_VALUES)
    rule = by_kind(docs, "PrometheusRule")["tg-trainguard"]
    assert rule["apiVersion"] == OPERATOR_API
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    assert PROMTOOL.exists(), "apt-get install prometheus (deploy/dev.sh installs it)"
    rendered = tmp_path / "rules.yml"
    rendered.write_text(yaml.safe_dump(rule["spec"]))
    check = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(rendered)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_service_monitor_scrapes_every_metrics_service_as_its_trainguard_job():
    docs = render(MONITORING_VALUES)
    assert k8s_problems(docs) == []
    monitor = by_kind(docs, "ServiceMonitor")["tg-trainguard"]["spec"]
    selected = [
        svc
        for svc in by_kind(docs, "Service").values()
        if monitor["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    ]
    jobs = {svc["metadata"]["labels"][monitor["jobLabel"]] for svc in selected}
    assert jobs == {f"trainguard-{role}" for role in METRICS_ROLES}
    assert monitor["namespaceSelector"]["matchNames"] == ["trainguard"]


def test_alertmanager_credentials_are_a_mounted_secret_file_never_an_env_value():
    docs = render(MONITORING_VALUES)
    act = container(docs, "Deployment", "act")
    env = env_of(act)
    assert env["TG_ALERTMANAGER_URL"]["value"] == "http://alertmanager-operated.monitoring.svc:9093"
    assert env["TG_ALERTMANAGER_USERNAME"]["value"] == "trainguard"
    assert env["TG_ALERTMANAGER_INTERVAL_S"]["value"] == "30"
    assert env["TG_ACT_CONSOLE_URL"]["value"] == "https://trainguard.example.com"
    path = env["TG_ALERTMANAGER_PASSWORD_FILE"]["value"]
    mount = next(m for m in act["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
    assert mount["readOnly"] is True
    volume = next(
        v for v in pod_spec(docs, "Deployment", "act")["volumes"] if v["name"] == mount["name"]
    )
    items = {i["path"]: i["key"] for i in volume["secret"]["items"]}
    assert items[path.removeprefix(mount["mountPath"] + "/")] == "alertmanager-password"
    assert "alertmanager-password" in by_kind(docs, "Secret")["tg-trainguard"]["data"]
    password = yaml.safe_load(MONITORING_VALUES.read_text())["secrets"]["alertmanagerPassword"]
    rendered = helm("template", "tg", str(CHART), "-f", str(MONITORING_VALUES)).stdout
    assert password not in rendered  # only base64 in the Secret
    assert "TG_ALERTMANAGER_URL" not in env_of(container(docs, "Deployment", "api"))


@pytest.mark.parametrize(
    ("pair", "refusal"),
    [
        ("alertmanager.auth=bearer", "secrets.alertmanagerBearerToken is required"),
        ("alertmanager.username=", "alertmanager.username is required"),
        ("alertmanager.url=http://user:pw@am:9093", "alertmanager/url"),
    ],
)
def test_alertmanager_values_without_their_credential_are_refused(pair, refusal):
    proc = helm(
        "template", "tg", str(CHART), "-f", str(MONITORING_VALUES), "--set", pair, check=False
    )
    assert proc.returncode != 0
    assert refusal in proc.stderr


def test_the_bearer_token_is_mounted_like_the_password():
    docs = render(
        MONITORING_VALUES, sets=("alertmanager.auth=bearer", "secrets.alertmanagerBearerToken=t0k")
    )
    assert k8s_problems(docs) == []
    env = env_of(container(docs, "Deployment", "act"))
    assert env["TG_ALERTMANAGER_BEARER_TOKEN_FILE"]["value"].endswith("/alertmanager-bearer-token")
    assert "TG_ALERTMANAGER_USERNAME" not in env and "TG_ALERTMANAGER_PASSWORD_FILE" not in env


def _compose_metrics_ports(doc: Doc) -> dict[str, int]:
    """Return each compose TrainGuard service's metrics port, by role."""
    ports = {}
    for name, service in doc["services"].items():
        if service.get("image") != IMAGE:
            continue
        env = service.get("environment", {})
        for key, value in env.items():
            if key.endswith("_METRICS_PORT"):
                assert service["command"] == [name]
                assert key == f"TG_{name.upper()}_METRICS_PORT"
                ports[name] = int(value)
    return ports


def test_compose_prometheus_scrapes_every_metrics_port_with_the_shipped_rules(tmp_path):
    doc = yaml.safe_load(COMPOSE.read_text())
    ports = _compose_metrics_ports(doc)
    assert set(ports) == set(METRICS_ROLES)
    config = yaml.safe_load(COMPOSE_PROMETHEUS.read_text())
    scraped = {}
    for job in config["scrape_configs"]:
        (sd,) = job["dns_sd_configs"]
        (service,) = sd["names"]
        assert job["job_name"] == f"trainguard-{service}"
        scraped[service] = sd["port"]
    assert scraped == ports
    for name in ports:
        assert str(ports[name]) in doc["services"][name]["expose"]
    prometheus = doc["services"]["prometheus"]
    mounts = {
        target: source
        for source, target, _ in (v.split(":") for v in prometheus["volumes"] if ":ro" in v)
    }
    assert (COMPOSE.parent / mounts["/etc/prometheus/rules.yml"]).resolve() == RULES
    assert mounts["/etc/prometheus/prometheus.yml"] == "./prometheus.yml"
    am = doc["services"]["alertmanager"]["volumes"][0].split(":")[0]
    assert (COMPOSE.parent / am).resolve() == REPO / "deploy" / "alertmanager" / "alertmanager.yml"
    assert (
        doc["services"]["act"]["environment"]["TG_ALERTMANAGER_URL"] == "http://alertmanager:9093"
    )
    assert PROMTOOL.exists(), "apt-get install prometheus (deploy/dev.sh installs it)"
    shutil.copy(COMPOSE_PROMETHEUS, tmp_path / "prometheus.yml")
    shutil.copy(RULES, tmp_path / "rules.yml")
    check = subprocess.run(
        [str(PROMTOOL), "check", "config", "prometheus.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
