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

from tests.deploy_artifacts import compose_containers, container_problems, k8s_problems

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "trainguard"
DEFAULT_VALUES = CHART / "ci" / "default-values.yaml"
KUBERNETES_VALUES = CHART / "ci" / "kubernetes-values.yaml"
COMPOSE = REPO / "deploy" / "production" / "compose.yaml"
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


@pytest.mark.parametrize("values", [DEFAULT_VALUES, KUBERNETES_VALUES], ids=lambda p: p.stem)
def test_helm_lint_passes(values):
    proc = helm("lint", "--strict", str(CHART), "-f", str(values))
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("values", [DEFAULT_VALUES, KUBERNETES_VALUES], ids=lambda p: p.stem)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_rendered_object_fits_the_kubernetes_api_schema(values, version):
    docs = render(values)
    assert len(docs) > 10
    refused = {}
    for doc in docs:
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
    assert set(services) == {"api", "console", "sink-metrics", "diagnose-metrics"}


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


BROKEN: dict[str, tuple[Callable[[list[Doc]], None], str]] = {
    "bad flag": (_bad_flag, "`trainguard api --port 8000` exits 2"),
    "unknown TG_ name": (_unknown_name, f"unknown environment variable {UNKNOWN}"),
    "bad value": (_bad_value, "invalid settings: ApiSettings"),
    "literal secret": (_literal_secret, "secret TG_CLICKHOUSE_PASSWORD is a literal value"),
    "loopback": (_loopback, "listens on 127.0.0.1:8700"),
    "port mismatch": (_port_mismatch, "port http=8700 but the process listens on [9999]"),
    "probe path": (_probe_path, "livenessProbe path /health is not served"),
    "service target": (_service_target, "targetPort web is no port of its pods"),
    "one-shot service": (_one_shot_service, "`trainguard migrate` exits: not a service"),
    "missing secret key": (_missing_secret_key, "has no key webhook-key"),
    "embedded bus": (_embedded_bus, "exits 2 without TG_KAFKA_MODE=kafka"),
    "no webhook key": (_no_webhook_key, "without TG_WEBHOOK_KEY"),
    "envFrom": (_env_from, "envFrom hides its names"),
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
