"""The Helm chart and compose.yaml start: every container checked against the CLI and settings.

`helm lint` and `helm template` run the real helm binary (deploy/dev.sh `tools` builds it
into the virtualenv); the rendered objects go through tests/deploy_artifacts.py, which parses
each container's arguments with `trainguard`'s own parser and builds every settings class from
its environment. A broken render (a bad flag, an unknown TG_* name, ...) must fail that check
(test_deploy_broken.py); metrics, alerting and their credentials: test_deploy_monitoring.py.
"""

from __future__ import annotations

import shutil

import kubernetes_validate
import pytest
import yaml

from tests.deploy_artifacts import container_problems, k8s_problems
from tests.deploy_manifests import compose_containers
from tests.integration.deploy_helpers import (
    CHART,
    CI_VALUES,
    COMPOSE,
    DEFAULT_VALUES,
    EXISTING_SECRET,
    IMAGE,
    KUBERNETES_VALUES,
    KUBERNETES_VERSIONS,
    METRICS_ROLES,
    MONITORING_VALUES,
    OPERATOR_API,
    by_kind,
    container,
    env_of,
    helm,
    helm_binary,
    pod_spec,
    render,
)


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


def test_in_cluster_kube_auth_is_the_default_without_a_host():
    docs = render(DEFAULT_VALUES)
    for name in ("act", "api"):
        env = env_of(container(docs, "Deployment", name))
        assert env["TG_ACT_KUBE_AUTH"]["value"] == "incluster"
        assert env["TG_ACT_KUBE_OPTOUT_LABEL"]["value"] == "trainguard.io/remediation"
        assert "TG_ACT_KUBE_HOST" not in env and "TG_ACT_KUBE_TOKEN" not in env
        assert pod_spec(docs, "Deployment", name)["serviceAccountName"] == "tg-trainguard-act"
    auto = render(DEFAULT_VALUES, sets=("act.kubeAuth=auto",))
    assert "TG_ACT_KUBE_HOST" not in env_of(container(auto, "Deployment", "act"))
    assert set(by_kind(auto, "ClusterRole")) == {"act"}


def test_a_kubeconfig_is_a_mounted_secret_file_and_needs_no_service_account():
    docs = render(MONITORING_VALUES)
    assert by_kind(docs, "ServiceAccount") == {} and by_kind(docs, "ClusterRole") == {}
    for name in ("act", "api"):
        pod = pod_spec(docs, "Deployment", name)
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
