"""`trainguard act` wiring: the Kubernetes backend from settings, and `act silence` as a process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from actions.executors.kube_marks import KubeOptOut
from actions.model import ActionKind
from actions.silences import list_windows
from tests.actions_builders import make_incident
from tests.integration.conftest import process_env
from tests.integration.kube_fake import FakeKubeApi, make_tls
from trainguard.act_cli import build_engine
from trainguard.settings import ActSettings

pytestmark = pytest.mark.integration


@pytest.fixture
def kube(tmp_path) -> Iterator[tuple[FakeKubeApi, Path]]:
    ca, cert, key = make_tls(tmp_path)
    api = FakeKubeApi({"gpu-1": {"ops.example/hands-off": "disabled"}}, {"t0k"}, (cert, key))
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [
            {"name": "c", "cluster": {"server": api.url, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "u", "user": {"token": "t0k"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    yield api, path
    api.close()


def test_the_kubernetes_backend_is_built_from_settings(server_store, kube):
    api, kubeconfig = kube
    settings = ActSettings(
        executor="kubernetes",
        kube_auth="kubeconfig",
        kube_config=kubeconfig,
        kube_optout_label="ops.example/hands-off",
    )
    engine = build_engine(settings, server_store, None)
    kinds = engine.registry.kinds()
    assert {ActionKind.ISOLATE_NODE, ActionKind.TAINT_NODE, ActionKind.RESUME_NODE} <= kinds
    optout = engine.holds.optout
    assert isinstance(optout, KubeOptOut)
    assert optout.opted_out("gpu-1") == "label ops.example/hands-off=disabled"
    assert any(method == "GET" for method, _, _ in api.requests), "it reached the API server"
    rule, plans = engine.preview(make_incident(1, node="gpu-1"))  # the default policy plans
    assert rule == "hardware-fault" and plans[-1].kind == ActionKind.REBOOT_NODE
    assert plans[0].params["category"] == "gpu.hardware"


def test_missing_credentials_stop_act_with_the_sources_tried(server_store, tmp_path):
    settings = ActSettings(
        executor="kubernetes", kube_auth="kubeconfig", kube_config=tmp_path / "absent"
    )
    tried = re.escape(f"=kubeconfig); tried kubeconfig ({tmp_path / 'absent'}): ")
    with pytest.raises(ValueError, match=tried):
        build_engine(settings, server_store, None)
    with pytest.raises(ValueError, match="TG_ACT_KUBE_AUTH=explicit needs TG_ACT_KUBE_HOST"):
        ActSettings(executor="kubernetes", kube_auth="explicit")


def _silence(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainguard", "act", "silence", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_silence_cli_adds_lists_and_deletes(services, topics, server_store):
    env = process_env(services, topics, server_store)
    added = _silence(env, "add", "--job", "llama-*", "--for", "90m", "--author", "alice",
                     "--reason", "checkpoint migration")  # fmt: skip
    assert added.returncode == 0, added.stderr
    window = json.loads(added.stdout)
    stored = list_windows(server_store)
    assert [(w.id, w.job, w.author) for w in stored] == [(window["id"], "llama-*", "alice")]
    assert (stored[0].ends_at - stored[0].starts_at).total_seconds() == 90 * 60
    listed = _silence(env, "list")
    assert [w["id"] for w in json.loads(listed.stdout)] == [window["id"]]
    bad = _silence(env, "add", "--for", "1h", "--author", "a", "--reason", "no matcher")
    assert bad.returncode == 2 and "at least one matcher" in bad.stdout
    wrong = _silence(env, "add", "--node", "n", "--for", "soon", "--author", "a", "--reason", "r")
    assert wrong.returncode == 2 and "a duration like" in wrong.stderr
    gone = _silence(env, "delete", window["id"], "--author", "bob")
    assert gone.returncode == 0 and json.loads(gone.stdout)["deleted_by"] == "bob"
    assert list_windows(server_store) == []
    again = _silence(env, "delete", window["id"], "--author", "bob")
    assert again.returncode == 1 and "no maintenance window" in again.stdout
