"""`trainguard demo` as the README runs it: live fleet, API up, incidents appear, clean stop."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_live_demo_serves_incidents_of_its_faulty_fleet_and_stops_cleanly(tmp_path):
    port, console_port = _free_port(), _free_port()
    env = {**os.environ, "TG_API_PORT": str(port), "TG_CONSOLE_PORT": str(console_port)}
    log = tmp_path / "demo.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trainguard",
                "demo",
                "--speed",
                "30",
                "--data-dir",
                str(tmp_path / "data"),
            ],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        token = None
        deadline = time.monotonic() + 90
        while token is None and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            found = re.search(r"token: (tg_[A-Za-z0-9_-]+)", log.read_text())
            token = found.group(1) if found else None
            time.sleep(0.5)
        assert token, log.read_text()[-3000:]
        assert f"http://127.0.0.1:{port}/docs" in log.read_text()
        incidents: list = []
        while not incidents and time.monotonic() < deadline + 150:
            assert proc.poll() is None, log.read_text()[-3000:]
            incidents = _get(f"http://127.0.0.1:{port}/v1/incidents", token)["items"]
            time.sleep(1)
        assert incidents, "no incident within 4 minutes of a fleet with faults every few minutes"
        assert incidents[0]["suspects"], incidents[0]
        jobs = _get(f"http://127.0.0.1:{port}/v1/jobs", token)["items"]
        assert {j["job_id"] for j in jobs} == {"llm-13b", "llm-7b"}
        assert f"console   http://127.0.0.1:{console_port}" in log.read_text()
        health = f"http://127.0.0.1:{console_port}/_stcore/health"
        while time.monotonic() < deadline + 180:
            try:
                with urllib.request.urlopen(health, timeout=5) as response:
                    if response.read() == b"ok":
                        break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("the console never answered its health check")
    finally:
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
    assert rc == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()
