"""The Helm chart and compose.yaml start: every container checked against the CLI and settings.

`helm lint` and `helm template` run the real helm binary (deploy/dev.sh `tools` builds it
into the virtualenv); the rendered objects go through tests/deploy_artifacts.py, which parses
each container's arguments with `trainguard`'s own parser and builds every settings class from
its environment. A broken render (a bad flag, an unknown TG_* name, ...) must fail that check.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy_artifacts import container_problems, k8s_problems
from tests.deploy_manifests import compose_containers
from tests.integration.prometheus_helpers import PROMTOOL

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "trainguard"
DEFAULT_VALUES = CHART / "ci" / "default-values.yaml"
KUBERNETES_VALUES = CHART / "ci" / "kubernetes-values.yaml"
MONITORING_VALUES = CHART / "ci" / "monitoring-values.yaml"
CI_VALUES = (DEFAULT_VALUES, KUBERNETES_VALUES, MONITORING_VALUES)
COMPOSE = REPO / "deploy" / "production" / "compose.yaml"
COMPOSE_PROMETHEUS = REPO / "deploy" / "production" / "prometheus.yml"
RULES = REPO / "deploy" / "prometheus" / "rules.yml"
CHART_RULES = CHART / "files" / "prometheus-rules.yml"
OPERATOR_API = "monitoring.coreos.com/v1"
"""The Prometheus Operator's CRDs: no Kubernetes schema; tests/deploy_artifacts.py checks them."""
METRICS_ROLES = ("agent", "sink", "diagnose", "act", "api")
IMAGE = "trainguard:dev"
EXISTING_SECRET = "trainguard-credentials"  # ci/kubernetes-values.yaml's secrets.name
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
"""The oldest Kubernetes the chart supports and the newest schemas kubernetes-validate has."""

Doc = dict[str, Any]
UNKNOWN = "TG_" + "API_URL"
"""The old manifests' name for the console's API address (TG_CONSOLE_API_URL): read by no
setting. Built, not written, so tests/unit/test_env_check.py's scan of the repository for
TG_* names does not count it."""


def helm_binary() -> str:
    """Return the helm binary: on PATH, or next to this Python (deploy/dev.sh tools)."""
    found = shutil.which("helm") or shutil.which("helm", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(
            "helm is not installed: `deploy/dev.sh tools` builds it into the virtualenv, or "
            "`GOBIN=$VENV/bin go install helm.sh/helm/v3/cmd/helm@v3.22.0`"
        )
    return found


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run helm with `args` on the chart; fail the test with its output when it fails."""
    proc = subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    if check and proc.returncode != 0:
        pytest.fail(f"helm {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def render(*values: Path, sets: tuple[str, ...] = ()) -> list[Doc]:
    """Return the objects `helm template` renders with these values files and --set pairs."""
    args = ["template", "tg", str(CHART), "--namespace", "trainguard"]
    for path in values:
        args += ["-f", str(path)]
    for pair in sets:
        args += ["--set", pair]
    return [doc for doc in yaml.safe_load_all(helm(*args).stdout) if doc]


def by_kind(docs: list[Doc], kind: str) -> dict[str, Doc]:
    """Return the objects of one kind by name, without the release prefix."""
    return {
        d["metadata"]["name"].removeprefix("tg-trainguard-"): d for d in docs if d["kind"] == kind
    }


def container(docs: list[Doc], kind: str, name: str) -> Doc:
    """Return the first container of a workload."""
    spec = by_kind(docs, kind)[name]["spec"]
    if kind == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return dict(spec["template"]["spec"]["containers"][0])


def env_of(c: Doc) -> dict[str, Doc]:
    return {e["name"]: e for e in c.get("env", [])}


def test_a_missing_helm_fails_the_test_with_how_to_build_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda *args, **kwargs: None)
    with pytest.raises(pytest.fail.Exception, match="deploy/dev.sh tools"):
        helm_binary()


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.stem)
def test_helm_lint_passes(values):
    proc = helm("lint", "--strict", str(CHART), "-f", str(values))
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.stem)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_rendered_object_fits_the_kubernetes_api_schema(values, version):
    docs = render(values)
    assert len(docs) > 10
    refused = {}
    for doc in docs:
        if doc["apiVersion"] == OPERATOR_API:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            refused[f"{doc['kind']}/{doc['metadata']['name']}"] = exc.message
    assert refused == {}


def test_a_misspelt_field_fails_the_schema_check():
    agent = next(d for d in render(DEFAULT_VALUES) if d["kind"] == "DaemonSet")
    agent["spec"]["template"]["spec"]["runtimeClassNam"] = "nvidia"
    with pytest.raises(kubernetes_validate.ValidationError, match="runtimeClassNam"):
        kubernetes_validate.validate(agent, KUBERNETES_VERSIONS[0], strict=True)


def test_the_chart_refuses_to_render_without_a_webhook_key():
    proc = helm("template", "tg", str(CHART), check=False)
    assert proc.returncode != 0
    assert "secrets.webhookKey is required" in proc.stderr


@pytest.mark.parametrize(
    ("pair", "refusal"),
    [
        ("sink.batchRecord=5", "additional properties 'batchRecord' not allowed"),
        ("act.mode=yolo", "value must be one of 'dry_run', 'approve', 'auto'"),
        ("api.port=70000", "maximum"),
        ("act.kubeAuth=token", "value must be one of 'incluster', 'auto', 'kubeconfig'"),
        ("metrics.serviceMonitor.enable=true", "additional properties 'enable' not allowed"),
        ("api.metrics.port=-1", "minimum"),
    ],
)
def test_the_values_schema_refuses_misspelt_keys_and_bad_values(pair, refusal):
    args = ["template", "tg", str(CHART), "-f", str(DEFAULT_VALUES), "--set", pair]
    proc = helm(*args, check=False)
    assert proc.returncode != 0
    assert refusal in proc.stderr


def test_the_default_render_would_start():
    docs = render(DEFAULT_VALUES)
    assert k8s_problems(docs) == []
    deployments = by_kind(docs, "Deployment")
    assert set(deployments) == {"sink", "diagnose", "act", "api", "console"}
    assert set(by_kind(docs, "DaemonSet")) == {"agent"}
    assert {name: container(docs, "Deployment", name)["args"] for name in deployments} == {
        name: [name] for name in deployments
    }
    api = env_of(container(docs, "Deployment", "api"))
    assert api["TG_API_HOST"]["value"] == "0.0.0.0"
    assert api["TG_WEBHOOK_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "webhook-key"
    secret = by_kind(docs, "Secret")["tg-trainguard"]
    assert set(secret["data"]) == {"clickhouse-password", "webhook-key"}
    services = by_kind(docs, "Service")
    assert services["api"]["spec"]["ports"][0]["port"] == 8700
    assert set(services) == {"api", "console"} | {f"{r}-metrics" for r in METRICS_ROLES}
    assert by_kind(docs, "ServiceMonitor") == {} and by_kind(docs, "PrometheusRule") == {}


def test_migrate_is_a_pre_install_and_pre_upgrade_hook_after_its_secret():
    docs = render(DEFAULT_VALUES)
    job = by_kind(docs, "Job")["migrate"]
    notes = job["metadata"]["annotations"]
    assert notes["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "before-hook-creation" in notes["helm.sh/hook-delete-policy"]
    assert container(docs, "Job", "migrate")["args"] == ["migrate"]
    secret = next(iter(by_kind(docs, "Secret").values()))
    secret_notes = secret["metadata"]["annotations"]
    assert secret_notes["helm.sh/hook"] == notes["helm.sh/hook"]
    assert int(secret_notes["helm.sh/hook-weight"]) < int(notes["helm.sh/hook-weight"])
    retention = container(docs, "CronJob", "retention")
    assert retention["args"] == ["retention", "--days", "30"]


def test_the_act_identity_may_cordon_taint_condition_and_record_events():
    docs = render(DEFAULT_VALUES)
    rules = by_kind(docs, "ClusterRole")["act"]["rules"]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    assert {("nodes", "patch"), ("nodes/status", "patch"), ("events", "create")} <= granted
    assert ("pods/eviction", "create") in granted
    assert not any(v in {"delete", "*"} for _, v in granted)
    binding = by_kind(docs, "ClusterRoleBinding")["act"]
    account = binding["subjects"][0]["name"]
    for name in ("act", "api"):
        pod = by_kind(docs, "Deployment")[name]["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == account
    assert binding["subjects"][0]["namespace"] == "trainguard"


def test_non_default_values_render_and_would_start():
    docs = render(KUBERNETES_VALUES)
    assert k8s_problems(docs, external_secrets=frozenset({EXISTING_SECRET})) == []
    assert "agent" not in by_kind(docs, "DaemonSet")
    assert by_kind(docs, "Secret") == {}
    deployments = by_kind(docs, "Deployment")
    assert deployments["diagnose"]["spec"]["replicas"] == 3
    act = env_of(container(docs, "Deployment", "act"))
    assert act["TG_ACT_EXECUTOR"]["value"] == "kubernetes"
    assert act["TG_ACT_OPERATOR_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == EXISTING_SECRET
    assert act["TG_ACT_WEBHOOK_HOSTS"]["value"] == '["hooks.slack.com","events.pagerduty.com"]'
    console = env_of(container(docs, "Deployment", "console"))
    assert console["TG_CONSOLE_API_URL"]["value"] == "http://tg-trainguard-api:443"
    sink = container(docs, "Deployment", "sink")
    assert "ports" not in sink and "TG_SINK_METRICS_PORT" not in env_of(sink)
    assert "sink-metrics" not in by_kind(docs, "Service")


def test_the_slurm_executor_gets_no_kubernetes_identity():
    docs = render(DEFAULT_VALUES, sets=("act.executor=slurm",))
    assert k8s_problems(docs) == []
    assert by_kind(docs, "ClusterRole") == {} and by_kind(docs, "ServiceAccount") == {}
    pod = by_kind(docs, "Deployment")["act"]["spec"]["template"]["spec"]
    assert "serviceAccountName" not in pod and pod["automountServiceAccountToken"] is False
    assert "TG_ACT_KUBE_HOST" not in env_of(container(docs, "Deployment", "act"))


# ---- metrics, alerting, Kubernetes credentials ----------------------------------------


def _pod(docs: list[Doc], kind: str, name: str) -> Doc:
    return dict(by_kind(docs, kind)[name]["spec"]["template"]["spec"])


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
        v for v in _pod(docs, "Deployment", "act")["volumes"] if v["name"] == mount["name"]
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


def test_in_cluster_kube_auth_is_the_default_without_a_host():
    docs = render(DEFAULT_VALUES)
    for name in ("act", "api"):
        env = env_of(container(docs, "Deployment", name))
        assert env["TG_ACT_KUBE_AUTH"]["value"] == "incluster"
        assert env["TG_ACT_KUBE_OPTOUT_LABEL"]["value"] == "trainguard.io/remediation"
        assert "TG_ACT_KUBE_HOST" not in env and "TG_ACT_KUBE_TOKEN" not in env
        assert _pod(docs, "Deployment", name)["serviceAccountName"] == "tg-trainguard-act"
    auto = render(DEFAULT_VALUES, sets=("act.kubeAuth=auto",))
    assert "TG_ACT_KUBE_HOST" not in env_of(container(auto, "Deployment", "act"))
    assert set(by_kind(auto, "ClusterRole")) == {"act"}


def test_a_kubeconfig_is_a_mounted_secret_file_and_needs_no_service_account():
    docs = render(MONITORING_VALUES)
    assert by_kind(docs, "ServiceAccount") == {} and by_kind(docs, "ClusterRole") == {}
    for name in ("act", "api"):
        pod = _pod(docs, "Deployment", name)
        assert pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod
        env = env_of(container(docs, "Deployment", name))
        assert env["TG_ACT_KUBE_AUTH"]["value"] == "kubeconfig"
        assert env["TG_ACT_KUBE_CONTEXT"]["value"] == "gpu-fleet"
        assert env["TG_ACT_KUBE_CONFIG"]["value"] == "/etc/trainguard/secrets/kubeconfig"
    assert "kubeconfig" in by_kind(docs, "Secret")["tg-trainguard"]["data"]


def test_explicit_kube_auth_needs_a_host_and_mounts_its_ca():
    base = ("act.kubeAuth=explicit",)
    proc = helm(
        "template", "tg", str(CHART), "-f", str(DEFAULT_VALUES), "--set", base[0], check=False
    )
    assert proc.returncode != 0 and "act.kubeHost is required" in proc.stderr
    sets = (*base, "act.kubeHost=https://10.0.0.1:6443", "act.kubeCaCert=true")
    proc = helm(
        "template",
        "tg",
        str(CHART),
        "-f",
        str(DEFAULT_VALUES),
        "--set",
        ",".join(sets),
        check=False,
    )
    assert proc.returncode != 0 and "secrets.kubeCaCert is required" in proc.stderr
    docs = render(DEFAULT_VALUES, sets=(*sets, "secrets.kubeCaCert=PEM", "secrets.kubeToken=t"))
    assert k8s_problems(docs) == []
    env = env_of(container(docs, "Deployment", "act"))
    assert env["TG_ACT_KUBE_HOST"]["value"] == "https://10.0.0.1:6443"
    assert env["TG_ACT_KUBE_CA_CERT"]["value"] == "/etc/trainguard/secrets/kube-ca-cert"
    assert env["TG_ACT_KUBE_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "kube-token"
    assert by_kind(docs, "ServiceAccount") == {}


def test_the_compose_services_would_start():
    doc = yaml.safe_load(COMPOSE.read_text())
    containers = compose_containers(doc, IMAGE)
    assert {c.where.removeprefix("compose service ") for c in containers} == {
        "migrate",
        "agent",
        "sink",
        "diagnose",
        "act",
        "api",
        "console",
    }
    assert {c.where: container_problems(c) for c in containers} == {c.where: [] for c in containers}


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


# ---- a render that would crash-loop fails the check ---------------------------------------


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
