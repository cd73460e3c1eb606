"""A loopback stand-in for the Kubernetes API server (none can run here), for executor tests.

It serves only the endpoints TrainGuard's Kubernetes executors use, with bodies shaped like
the real API's (kind/apiVersion/metadata/spec/status, `Status` errors), and applies the
semantics the executors depend on: strategic merge patch (annotations `null` deletes a key,
`status.conditions` merge on `type`, `spec.taints` replaced whole), a PATCH whose content type
the body does not fit is refused as the real server refuses it, events.k8s.io/v1 Events are
validated for the fields the real server requires, and with `tokens` set a request without
one of them is 401. With `tls` it serves HTTPS with a certificate from a throwaway CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import re
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MERGE_TYPES = ("application/strategic-merge-patch+json", "application/merge-patch+json")


def node_body(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Return a Node as `kubectl get node -o json` shows one (trimmed)."""
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"3f6c0d2e-{abs(hash(name)) % 10**12:012d}",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-01T08:00:00Z",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": "10.0.0.0/24", "providerID": f"baremetal://{name}"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": "2026-12-02T03:59:00Z",
                    "lastTransitionTime": "2026-11-01T08:01:00Z",
                }
            ],
            "capacity": {"nvidia.com/gpu": "8"},
        },
    }


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """Return a metav1.Status error as the API server sends it."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def make_tls(directory: Path) -> tuple[Path, Path, Path]:
    """Write a CA and a server certificate for 127.0.0.1; return (ca, cert, key) paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.crt", directory / "apiserver.crt", directory / "apiserver.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


class FakeKubeApi:
    """Nodes, pods and events in memory behind the endpoints the executors use."""

    def __init__(
        self,
        nodes: dict[str, dict[str, str]] | None = None,
        tokens: set[str] | None = None,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        labels = nodes if nodes is not None else {"gpu-1": {}, "gpu-2": {}}
        self.nodes = {n: node_body(n, lbl) for n, lbl in labels.items()}
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
        self.events: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, str]] = []  # method, path, content type
        self.tokens = tokens
        self.lock = threading.Lock()
        self.version = 1
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.port = self.server.server_port
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving and join the server thread."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def condition(self, node: str, kind: str) -> dict[str, Any] | None:
        """Return a node's condition of a type, or None."""
        for cond in self.nodes[node]["status"]["conditions"]:
            if cond["type"] == kind:
                return dict(cond)
        return None

    # ------------------------------------------------------------------ semantics

    def bump(self, node: dict[str, Any]) -> None:
        self.version += 1
        node["metadata"]["resourceVersion"] = str(self.version)

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        node = self.nodes[name]
        meta = patch.get("metadata", {})
        for field in ("annotations", "labels"):
            for key, value in (meta.get(field) or {}).items():
                if value is None:
                    node["metadata"][field].pop(key, None)
                else:
                    node["metadata"][field][key] = value
        for key, value in patch.get("spec", {}).items():
            if value is None:
                node["spec"].pop(key, None)
            else:
                node["spec"][key] = value  # taints: no merge key, the list is replaced
        self.bump(node)
        return node

    def patch_status(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        node = self.nodes[name]
        conditions = node["status"]["conditions"]
        for cond in patch.get("status", {}).get("conditions", []):
            if "type" not in cond:
                raise ValueError("conditions: merge key type missing")
            kept = [c for c in conditions if c["type"] != cond["type"]]
            old = next((c for c in conditions if c["type"] == cond["type"]), {})
            conditions[:] = [*kept, {**old, **cond}]
        self.bump(node)
        return node

    def create_event(self, namespace: str, event: dict[str, Any]) -> dict[str, Any]:
        missing = [
            f
            for f in ("eventTime", "reportingController", "reportingInstance", "action", "reason")
            if not event.get(f)
        ]
        if event.get("type") not in ("Normal", "Warning"):
            missing.append("type (Normal or Warning)")
        if not (event.get("regarding") or {}).get("name"):
            missing.append("regarding.name")
        if missing:
            raise ValueError("Event is invalid: required " + ", ".join(missing))
        meta = event.setdefault("metadata", {})
        meta.setdefault("namespace", namespace)
        meta.update(uid=f"ev-{len(self.events)}", resourceVersion=str(self.version))
        self.events.append(event)
        return event


def _handler(api: FakeKubeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        def _allowed(self, method: str) -> bool:
            api.requests.append((method, self.path, self.headers.get("Content-Type", "")))
            if api.tokens is None:
                return True
            scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
            if scheme.lower() == "bearer" and token in api.tokens:
                return True
            self._send(401, status_body(401, "Unauthorized", "Unauthorized"))
            return False

        def _missing(self) -> None:
            self._send(404, status_body(404, "NotFound", f"{self.path} not found"))

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if not self._allowed("GET"):
                return
            m = re.match(r"^/api/v1/nodes/([\w.-]+)$", self.path)
            if m and m.group(1) in api.nodes:
                with api.lock:
                    return self._send(200, api.nodes[m.group(1)])
            if self.path.startswith("/api/v1/namespaces/training/pods"):
                items = list(api.pods.values())
                body = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
                return self._send(200, body)
            return self._missing()

        def do_PATCH(self) -> None:  # noqa: N802
            if not self._allowed("PATCH"):
                return
            m = re.match(r"^/api/v1/nodes/([\w.-]+)(/status)?$", self.path)
            if not m or m.group(1) not in api.nodes:
                return self._missing()
            kind = (self.headers.get("Content-Type") or "").split(";")[0]
            patch = self._body()
            if kind not in MERGE_TYPES:
                why = f"the body of a {kind} patch must fit it (got a JSON object)"
                return self._send(400, status_body(400, "BadRequest", why))
            with api.lock:
                try:
                    if m.group(2):
                        node = api.patch_status(m.group(1), patch)
                    else:
                        node = api.patch_node(m.group(1), patch)
                except ValueError as exc:
                    return self._send(422, status_body(422, "Invalid", str(exc)))
                return self._send(200, node)

        def do_POST(self) -> None:  # noqa: N802
            if not self._allowed("POST"):
                return
            body = self._body()
            m = re.match(r"^/apis/events\.k8s\.io/v1/namespaces/([\w-]+)/events$", self.path)
            if m:
                with api.lock:
                    try:
                        return self._send(201, api.create_event(m.group(1), body))
                    except ValueError as exc:
                        return self._send(422, status_body(422, "Invalid", str(exc)))
            m = re.match(r"^/api/v1/namespaces/training/pods/([\w.-]+)/eviction$", self.path)
            if m:
                api.evicted.append(m.group(1))
                return self._send(201, {**status_body(201, "", ""), "status": "Success"})
            return self._missing()

        def log_message(self, *_a: object) -> None:
            return

    return Handler
