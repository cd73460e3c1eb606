"""Kubernetes executors with the official client against a loopback fake API server.

No API server can run here; the fake serves only the endpoints the executors use, with bodies
shaped like real API responses (kind/apiVersion/metadata/spec/status).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

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

pytestmark = pytest.mark.integration


def _node(name: str) -> dict:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": "3f6c",
            "resourceVersion": "1",
            "labels": {},
            "annotations": {},
        },
        "spec": {"podCIDR": "10.0.0.0/24"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


class FakeApi:
    """Nodes and pods in memory behind the few endpoints used."""

    def __init__(self) -> None:
        self.nodes = {n: _node(n) for n in ("gpu-1", "gpu-2")}
        self.pods = {
            f"job-1-{i}": {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {
                    "name": f"job-1-{i}",
                    "namespace": "training",
                    "labels": {"trainguard.io/job": "job-1"},
                },
                "spec": {"nodeName": "gpu-1", "containers": [{"name": "t", "image": "x"}]},
                "status": {"phase": "Running"},
            }
            for i in range(2)
        }
        self.evicted: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                m = re.match(r"^/api/v1/nodes/([\w.-]+)$", self.path)
                if m and m.group(1) in api.nodes:
                    return self._send(200, api.nodes[m.group(1)])
                if self.path.startswith("/api/v1/namespaces/training/pods"):
                    return self._send(
                        200,
                        {
                            "kind": "PodList",
                            "apiVersion": "v1",
                            "metadata": {"resourceVersion": "7"},
                            "items": list(api.pods.values()),
                        },
                    )
                return self._send(
                    404,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "reason": "NotFound",
                        "code": 404,
                    },
                )

            def do_PATCH(self) -> None:  # noqa: N802
                name = self.path.rsplit("/", 1)[1]
                patch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                node = api.nodes[name]
                for key, value in patch.get("metadata", {}).get("annotations", {}).items():
                    if value is None:
                        node["metadata"]["annotations"].pop(key, None)
                    else:
                        node["metadata"]["annotations"][key] = value
                node["spec"].update(patch.get("spec", {}))
                return self._send(200, node)

            def do_POST(self) -> None:  # noqa: N802
                pod = self.path.split("/")[-2]
                api.evicted.append(pod)
                return self._send(
                    201,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "code": 201,
                    },
                )

            def log_message(self, *_a: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake():
    f = FakeApi()
    yield f
    f.server.shutdown()


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
    missing = cordon.execute(cordon.plan(_request(ActionKind.ISOLATE_NODE, "gpu-9")))
    assert missing.status == "failed" and "404" in (missing.error or "")
