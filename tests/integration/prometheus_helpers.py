"""Real processes for the Prometheus test: TrainGuard services and Debian's Prometheus server.

Every process is started in its own session and stopped with its whole process group
(uvicorn's workers included): SIGTERM, then SIGKILL if it has not exited in 20 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.integration.conftest import REPO

PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")


def free_port() -> int:
    """Return a loopback port free now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Proc:
    """A started process, its log and the port its /metrics (or HTTP API) listens on."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log: Path

    def alive(self) -> bool:
        """Return whether it still runs."""
        return self.popen.poll() is None

    def tail(self, chars: int = 3000) -> str:
        """Return the end of its log."""
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Stop it and every process of its group; wait until it is gone."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(10)
        with contextlib.suppress(ProcessLookupError):  # workers a dead parent left behind
            os.killpg(self.popen.pid, signal.SIGKILL)


def start(name: str, argv: list[str], env: Mapping[str, str], port: int, logs: Path) -> Proc:
    """Start `argv` in a new session with its output in logs/<name>.log."""
    log = logs / f"{name}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(
            argv,
            cwd=REPO,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Proc(name, popen, port, log)


def start_trainguard(
    name: str, command: list[str], env: Mapping[str, str], port: int, logs: Path
) -> Proc:
    """Start `python -m trainguard COMMAND` (this checkout first on the path)."""
    env = {**env, "PYTHONPATH": str(REPO)}
    return start(name, [sys.executable, "-m", "trainguard", *command], env, port, logs)


def start_prometheus(targets: Mapping[str, int], rules: Path, workdir: Path) -> Proc:
    """Start Prometheus scraping each job's 127.0.0.1 port every second, with `rules`."""
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": job,
                "scrape_interval": "1s",
                "scrape_timeout": "900ms",
                "static_configs": [{"targets": [f"127.0.0.1:{target}"]}],
            }
            for job, target in targets.items()
        ],
    }
    path = workdir / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    argv = [
        str(PROMETHEUS),
        f"--config.file={path}",
        f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    return start("prometheus", argv, os.environ, port, workdir)


def http_get(url: str, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """GET a URL; return (status, body), also for 4xx and 5xx answers."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def query(prometheus: Proc, expr: str) -> list[dict[str, Any]]:
    """Return the instant vector of `expr` from Prometheus's HTTP API (fails on an error)."""
    url = f"http://127.0.0.1:{prometheus.port}/api/v1/query?" + urllib.parse.urlencode(
        {"query": expr}
    )
    status, body = http_get(url)
    answer = json.loads(body)
    if status != 200 or answer.get("status") != "success":
        raise AssertionError(f"query {expr!r} failed: {status} {body[:500]!r}")
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def value(prometheus: Proc, expr: str) -> float | None:
    """Return the single value of `expr`, or None when the vector is empty."""
    result = query(prometheus, expr)
    if not result:
        return None
    assert len(result) == 1, f"{expr!r} has {len(result)} series: {result}"
    return float(result[0]["value"][1])


def by_label(prometheus: Proc, expr: str, label: str) -> dict[str, float]:
    """Return `expr`'s values keyed by one label."""
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in query(prometheus, expr)}
