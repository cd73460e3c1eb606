"""Render the Helm chart with the real helm binary; the paths and names the deploy tests share.

tests/integration/test_deploy_artifacts.py (the chart and compose.yaml would start),
test_deploy_monitoring.py (metrics, alerting, credentials) and test_deploy_broken.py (a broken
render or compose file fails the check) use them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

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


def pod_spec(docs: list[Doc], kind: str, name: str) -> Doc:
    return dict(by_kind(docs, kind)[name]["spec"]["template"]["spec"])
