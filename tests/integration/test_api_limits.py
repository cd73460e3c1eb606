"""Request limits and server errors, over a socket to the API served as `trainguard api` serves
it (uvicorn with api/server.py's options) on a real ClickHouse server.

Raw sockets, because what matters is what the server does before a body is sent: an HTTP
client library would send the whole body first.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from fastapi.testclient import TestClient

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role, TokenBook
from api.context import ApiContext
from api.server import server_options
from api.settings import ApiSettings

pytestmark = pytest.mark.integration
LIMIT = ApiSettings().max_body_bytes  # the default: 1 MiB


@dataclass
class Served:
    """The API on a loopback port, its context and an operator's token."""

    port: int
    context: ApiContext
    token: str


@dataclass
class Answer:
    """A response read off the socket, and how long after sending the head it came."""

    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float

    def problem(self) -> dict[str, object]:
        assert self.headers["content-type"] == "application/problem+json", self.headers
        problem: dict[str, object] = json.loads(self.body)
        assert problem["status"] == self.status
        return problem


@pytest.fixture(scope="module")
def served(services) -> Iterator[Served]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_lim_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    context = ApiContext(store=store, tokens=TokenBook(store))
    token = context.tokens.create("operator-user", Role.OPERATOR)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    options = server_options(ApiSettings(host="127.0.0.1", port=port))
    server = uvicorn.Server(uvicorn.Config(create_app(context), **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield Served(port, context, token)
    server.should_exit = True
    thread.join(timeout=10)
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


def _connect(served: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.port), timeout=5)


def _read(sock: socket.socket, started: float) -> Answer:
    """Read one response (the head, then Content-Length bytes); fail on a timeout."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    seconds = time.monotonic() - started
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside the body"
        body += chunk
    return Answer(int(status_line.split()[1]), headers, body, seconds)


def _ask(served: Served, head: bytes, body: bytes = b"") -> Answer:
    with _connect(served) as sock:
        started = time.monotonic()
        sock.sendall(head + body)
        return _read(sock, started)


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _post(path: str, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: api", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_a_declared_body_over_the_limit_is_refused_at_once_and_never_read(served):
    for auth in ((), (f"Authorization: Bearer {served.token}",)):
        with _connect(served) as sock:
            started = time.monotonic()
            sock.sendall(_post("/v1/incidents/x/acknowledge", "Content-Length: 1073741824", *auth))
            sock.sendall(b'{"note": "' + b"a" * 1000)  # the start of a 1 GB body, no more
            answer = _read(sock, started)
            assert answer.status == 413 and answer.seconds < 1.0, answer
            assert f"at most {LIMIT}" in str(answer.problem()["detail"])
            assert answer.headers["connection"] == "close" and _closed(sock)


def test_a_body_without_valid_credentials_is_refused_before_it_is_sent(served):
    for auth, detail in (
        ((), "send an API token"),
        (("Authorization: Bearer tg_" + "x" * 43,), "unknown or revoked token"),
        (("Authorization: Basic dXNlcjpwYXNz",), "send an API token"),
    ):
        # the head only: the 100-byte body it announces is never sent
        answer = _ask(served, _post("/v1/incidents/x/acknowledge", "Content-Length: 100", *auth))
        assert answer.status == 401 and detail in str(answer.problem()["detail"]), answer
        assert answer.headers["www-authenticate"] == "Bearer"
    chunked = _ask(served, _post("/v1/incidents/x/acknowledge", "Transfer-Encoding: chunked"))
    assert chunked.status == 401


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(served):
    sent = 0
    with _connect(served) as sock:
        started = time.monotonic()
        head = _post(
            "/v1/incidents/x/acknowledge",
            "Transfer-Encoding: chunked",
            f"Authorization: Bearer {served.token}",
        )
        sock.sendall(head)

        def stream() -> None:  # 64 KiB chunks, up to 64 MiB, until the server hangs up
            nonlocal sent
            chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
            try:
                while sent < 64 * LIMIT:
                    sock.sendall(chunk)
                    sent += 0x10000
            except OSError:
                return

        writer = threading.Thread(target=stream, daemon=True)
        writer.start()
        answer = _read(sock, started)
        writer.join(timeout=10)
    assert answer.status == 413 and "over" in str(answer.problem()["detail"])
    assert not writer.is_alive() and sent < 64 * LIMIT  # the server stopped taking it


def test_a_body_within_the_limit_reaches_the_routers(served):
    body = json.dumps({"note": "looking"}).encode()
    answer = _ask(
        served,
        _post(
            "/v1/incidents/inc-nope/acknowledge",
            f"Content-Length: {len(body)}",
            f"Authorization: Bearer {served.token}",
        ),
        body,
    )
    assert answer.status == 404 and "inc-nope" in str(answer.problem()["detail"])


@pytest.mark.parametrize("length", [20_000, 100_000, 1_000_000])
def test_an_overlong_url_is_a_414_problem_not_plain_text(served, length):
    query = "node=" + "a" * length
    answer = _ask(served, f"GET /v1/gpus?{query} HTTP/1.1\r\nHost: api\r\n\r\n".encode())
    assert answer.status == 414, answer
    assert "over 16384 bytes" in str(answer.problem()["detail"])


def test_the_app_refuses_an_overlong_url_under_any_server(served):
    with TestClient(create_app(served.context)) as client:  # no uvicorn protocol in front
        refused = client.get("/v1/gpus", params={"node": "a" * 17_000})
        assert refused.status_code == 414
        assert refused.headers["content-type"] == "application/problem+json"
        assert client.get("/v1/gpus", params={"node": "a" * 100}).status_code == 401


def test_an_oversized_head_is_a_431_problem(served):
    head = f"GET /healthz HTTP/1.1\r\nHost: api\r\nX-Big: {'a' * 100_000}\r\n\r\n".encode()
    answer = _ask(served, head)
    assert answer.status == 431 and "headers are over" in str(answer.problem()["detail"])


def test_every_error_the_server_sends_is_a_problem(served):
    garbage = _ask(served, b"NOT HTTP AT ALL\r\n\r\n")
    assert garbage.status == 400 and garbage.problem()["title"] == "Bad request"
    missing = _ask(served, b"GET /v1/nope HTTP/1.1\r\nHost: api\r\n\r\n")
    assert missing.status == 404 and missing.problem()["title"] == "Not found"
    wrong = _ask(served, b"DELETE /healthz HTTP/1.1\r\nHost: api\r\n\r\n")
    assert wrong.status == 405 and wrong.problem()["title"] == "Method not allowed"
    bad_length = _ask(served, _post("/v1/incidents/x/acknowledge", "Content-Length: -5"))
    assert bad_length.status == 400 and bad_length.problem()
    ok = _ask(served, b"GET /healthz HTTP/1.1\r\nHost: api\r\n\r\n")
    assert ok.status == 200 and json.loads(ok.body) == {"status": "ok"}
