"""Kubernetes executors and credentials with the official client against a loopback fake API
server (tests/integration/kube_fake.py: no API server can run here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from actions.executors.kube_credentials import KubeCredentialsError, load_credentials
from actions.executors.kube_marks import CONDITION, REPORTING_CONTROLLER, KubeOptOut
from actions.executors.kubernetes import (
    ANNOTATION,
    TAINT_KEY,
    KubeCordon,
    KubeEvictJob,
    KubeTaint,
    KubeUncordon,
    core_api,
)
from actions.model import ActionKind, Target
from actions.registry import ActionRequest
from tests.actions_builders import make_incident
from tests.integration.kube_fake import FakeKubeApi, make_tls

pytestmark = pytest.mark.integration


@pytest.fixture
def fake() -> Iterator[FakeKubeApi]:
    f = FakeKubeApi({"gpu-1": {}, "gpu-2": {}, "gpu-3": {"trainguard.io/remediation": "disabled"}})
    yield f
    f.close()


def _request(kind: ActionKind, node: str) -> ActionRequest:
    incident = make_incident(1, node=node)
    return ActionRequest(
        incident=incident, kind=kind, target=Target(node=node, job="job-1"), step=0, rule="r"
    )


def test_cordon_taint_evict_and_uncordon_only_our_own(fake):
    api = core_api(fake.url)
    cordon = KubeCordon(api)
    result = cordon.execute(cordon.plan(_request(ActionKind.ISOLATE_NODE, "gpu-1")))
    assert result.status == "done" and fake.nodes["gpu-1"]["spec"]["unschedulable"] is True
    assert fake.nodes["gpu-1"]["metadata"]["annotations"][ANNOTATION].startswith("inc-")
    assert "node.alpha.kubernetes.io/ttl" in fake.nodes["gpu-1"]["metadata"]["annotations"]
    taint = KubeTaint(api)
    assert taint.execute(taint.plan(_request(ActionKind.TAINT_NODE, "gpu-1"))).status == "done"
    assert fake.nodes["gpu-1"]["spec"]["taints"][0]["key"] == TAINT_KEY
    evict = KubeEvictJob(api, "training")
    got = evict.execute(evict.plan(_request(ActionKind.RESTART_JOB, "gpu-1")))
    assert got.status == "done" and sorted(fake.evicted) == ["job-1-0", "job-1-1"]
    fake.nodes["gpu-2"]["spec"]["unschedulable"] = True  # a person cordoned it
    human = cordon.execute(cordon.plan(_request(ActionKind.ISOLATE_NODE, "gpu-2")))
    assert human.status == "skipped"
    uncordon = KubeUncordon(api)
    assert (
        uncordon.execute(uncordon.plan(_request(ActionKind.RESUME_NODE, "gpu-2"))).status
        == "skipped"
    )
    assert fake.nodes["gpu-2"]["spec"]["unschedulable"] is True
    ours = uncordon.execute(uncordon.plan(_request(ActionKind.RESUME_NODE, "gpu-1")))
    assert ours.status == "done" and fake.nodes["gpu-1"]["spec"]["unschedulable"] is False
    assert not fake.nodes["gpu-1"]["spec"]["taints"], "TrainGuard's taint goes with the cordon"
    missing = cordon.execute(cordon.plan(_request(ActionKind.ISOLATE_NODE, "gpu-9")))
    assert missing.status == "failed" and "404" in (missing.error or "")
    patches = {ctype for method, _, ctype in fake.requests if method == "PATCH"}
    assert patches == {"application/strategic-merge-patch+json"}


def test_isolation_sets_a_condition_and_an_event_and_return_clears_it(fake):
    api = core_api(fake.url)
    request = _request(ActionKind.ISOLATE_NODE, "gpu-1")
    cordon = KubeCordon(api)
    plan = cordon.plan(request)
    assert cordon.execute(plan).status == "done"
    cond = fake.condition("gpu-1", CONDITION)
    assert cond is not None and cond["status"] == "True"
    assert cond["reason"] == "GpuHardware"  # category gpu.hardware, CamelCase
    assert plan.incident_id in cond["message"] and "gpu.hardware" in cond["message"]
    assert fake.condition("gpu-1", "Ready")["status"] == "True", "other conditions kept"
    isolate = fake.events[-1]
    assert isolate["reportingController"] == REPORTING_CONTROLLER
    assert isolate["regarding"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "gpu-1",
        "uid": fake.nodes["gpu-1"]["metadata"]["uid"],
    }
    assert isolate["type"] == "Warning" and isolate["reason"] == "GpuHardware"
    assert plan.incident_id in isolate["note"] and isolate["metadata"]["namespace"] == "default"
    uncordon = KubeUncordon(api)
    back = uncordon.execute(uncordon.plan(_request(ActionKind.RESUME_NODE, "gpu-1")))
    assert back.status == "done"
    cleared = fake.condition("gpu-1", CONDITION)
    assert cleared is not None and cleared["status"] == "False" and cleared["reason"] == "Returned"
    assert cleared["lastTransitionTime"] >= cond["lastTransitionTime"]
    assert [e["action"] for e in fake.events] == ["Isolate", "Return"]
    assert fake.events[-1]["type"] == "Normal"


def test_reconcile_after_a_crash_finishes_the_condition(fake):
    cordon = KubeCordon(core_api(fake.url))
    plan = cordon.plan(_request(ActionKind.ISOLATE_NODE, "gpu-2"))
    assert cordon.reconcile(plan) is None, "not cordoned: surely did not run"
    fake.patch_node("gpu-2", {"metadata": {"annotations": {ANNOTATION: plan.incident_id}},
                              "spec": {"unschedulable": True}})  # fmt: skip
    assert cordon.reconcile(plan).status == "done"
    assert fake.condition("gpu-2", CONDITION)["status"] == "True" and len(fake.events) == 1
    assert cordon.reconcile(plan).status == "done" and len(fake.events) == 1, "marked once"


def test_a_refused_condition_is_reported_but_the_cordon_stands(fake):
    api = core_api(fake.url)
    cordon = KubeCordon(api)
    fake.patch_status = _refuse  # type: ignore[method-assign]
    result = cordon.execute(cordon.plan(_request(ActionKind.ISOLATE_NODE, "gpu-2")))
    assert result.status == "done" and fake.nodes["gpu-2"]["spec"]["unschedulable"] is True
    assert "condition TrainGuardIsolated not set: Kubernetes API 422" in result.detail
    assert result.outputs["unrecorded"] and fake.events, "the event is still recorded"


def _refuse(name: str, patch: dict) -> dict:
    raise ValueError("nodes/status: forbidden field")


def test_opt_out_label_is_read_from_the_node(fake):
    optout = KubeOptOut(core_api(fake.url))
    assert optout.opted_out("gpu-3") == "label trainguard.io/remediation=disabled"
    assert optout.opted_out("gpu-1") is None
    assert optout.opted_out("gpu-9") is None  # not a Kubernetes node: the executor says so
    other = KubeOptOut(core_api(fake.url), label="example.com/no-touch")
    assert other.opted_out("gpu-3") is None
    fake.nodes["gpu-1"]["metadata"]["labels"]["example.com/no-touch"] = "disabled"
    assert other.opted_out("gpu-1") == "label example.com/no-touch=disabled"
    closed = FakeKubeApi({"gpu-1": {}}, tokens={"nobody"})
    try:
        unreadable = KubeOptOut(core_api(closed.url)).opted_out("gpu-1")
    finally:
        closed.close()
    assert unreadable is not None and "unreadable" in unreadable and "401" in unreadable


# ---------------------------------------------------------------------- credentials


@pytest.fixture
def tls_api(tmp_path) -> Iterator[tuple[FakeKubeApi, Path]]:
    ca, cert, key = make_tls(tmp_path)
    api = FakeKubeApi({"gpu-1": {}}, tokens={"sa-token", "ctx-b-token"}, tls=(cert, key))
    yield api, ca
    api.close()


def _can_read_node(credentials) -> bool:
    api = k8s.CoreV1Api(credentials.client())
    return api.read_node("gpu-1").metadata.name == "gpu-1"


def _service_account(tmp_path: Path, ca: Path, token: str = "sa-token") -> Path:
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(token)
    (sa / "ca.crt").write_bytes(ca.read_bytes())
    (sa / "namespace").write_text("trainguard")
    return sa


def test_in_cluster_service_account_over_tls(tls_api, tmp_path):
    api, ca = tls_api
    sa = _service_account(tmp_path, ca)
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(api.port)}
    creds = load_credentials("auto", sa_dir=sa, environ=env, kubeconfig=tmp_path / "none")
    assert creds.source.startswith("in-cluster") and _can_read_node(creds)
    assert "sa-token" not in creds.source
    with pytest.raises(KubeCredentialsError, match="incluster"):
        load_credentials("incluster", sa_dir=sa, environ={})


def _kubeconfig(path: Path, url: str, ca: Path) -> Path:
    def context(name: str, token: str) -> tuple[dict, dict, dict]:
        cluster = {"name": name, "cluster": {"server": url, "certificate-authority": str(ca)}}
        user = {"name": f"{name}-user", "user": {"token": token}}
        ctx = {"name": name, "context": {"cluster": name, "user": f"{name}-user"}}
        return cluster, user, ctx

    a, b = context("ctx-a", "ctx-a-token"), context("ctx-b", "ctx-b-token")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "ctx-a",
        "clusters": [a[0], b[0]],
        "users": [a[1], b[1]],
        "contexts": [a[2], b[2]],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubeconfig_with_a_chosen_context(tls_api, tmp_path):
    api, ca = tls_api
    config = _kubeconfig(tmp_path / "config", api.url, ca)
    no_cluster = {"KUBERNETES_SERVICE_HOST": ""}
    creds = load_credentials("auto", kubeconfig=config, context="ctx-b", environ=no_cluster)
    assert "context ctx-b" in creds.source and _can_read_node(creds)
    current = load_credentials("kubeconfig", kubeconfig=config)  # ctx-a: token unknown there
    with pytest.raises(k8s.ApiException) as denied:
        _can_read_node(current)
    assert denied.value.status == 401


def test_explicit_settings_and_an_error_naming_every_source(tls_api, tmp_path):
    api, ca = tls_api
    creds = load_credentials(
        "auto",
        host=api.url,
        token="sa-token",
        ca_cert=ca,
        kubeconfig=tmp_path / "absent",
        sa_dir=tmp_path / "no-sa",
        environ={},
    )
    assert creds.source == f"explicit API server {api.url}" and _can_read_node(creds)
    with pytest.raises(KubeCredentialsError) as nothing:
        load_credentials("auto", kubeconfig=tmp_path / "absent", sa_dir=tmp_path, environ={})
    text = str(nothing.value)
    for source in (f"incluster ({tmp_path}):", "kubeconfig (", "explicit: no API server URL"):
        assert source in text
    assert str(tmp_path / "absent") in text
    with pytest.raises(KubeCredentialsError, match=r"kubeconfig \(.*\): .*context"):
        load_credentials(
            "kubeconfig", kubeconfig=_kubeconfig(tmp_path / "c", api.url, ca), context="ctx-zzz"
        )
