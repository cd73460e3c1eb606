"""Incidents in Debian's real Alertmanager: alerts arrive, group, are silenced and resolve.

Alertmanager runs on a free loopback port with the shipped deploy/alertmanager/alertmanager.yml,
its receivers pointed at a loopback webhook server and its timings shortened.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from actions.alertmanager import AlertmanagerClient, AlertSync
from diagnosis.incident_store import record_transition, save_incidents
from diagnosis.lifecycle import Transition
from diagnosis.model import Category, IncidentStatus
from tests.actions_builders import make_incident
from tests.integration.conftest import process_env, wait_for

pytestmark = pytest.mark.integration
BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "alertmanager" / "alertmanager.yml"
CONSOLE = "https://console.example.test"
GROUP_INTERVAL_S = 2


@dataclass
class Hook:
    """A loopback webhook receiver: keeps every Alertmanager notification."""

    url: str = ""
    notifications: list[dict[str, Any]] = field(default_factory=list)

    def groups(self, job: str) -> list[dict[str, Any]]:
        return [n for n in self.notifications if n["groupLabels"].get("job") == job]


@pytest.fixture
def hook() -> Iterator[Hook]:
    got = Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            got.notifications.append(
                json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            )
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got.url = f"http://127.0.0.1:{server.server_port}/alerts"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield got
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def alertmanager(tmp_path: Path, hook: Hook) -> Iterator[str]:
    """Start Alertmanager with the shipped configuration; return its base URL; stop it after."""
    if BINARY is None:
        pytest.skip("Alertmanager is not installed (deploy/dev.sh installs it)")
    config = yaml.safe_load(CONFIG.read_text())
    config["route"].update(
        {"group_wait": "1s", "group_interval": f"{GROUP_INTERVAL_S}s", "repeat_interval": "1h"}
    )
    for route in config["route"].get("routes", []):
        route["repeat_interval"] = "1h"
    for receiver in config["receivers"]:
        for webhook in receiver.get("webhook_configs", []):
            webhook["url"] = hook.url
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    port = _free_port()
    proc = subprocess.Popen(
        [
            BINARY,
            f"--config.file={path}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "alertmanager.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url) or proc.poll() is not None, 30, "Alertmanager to start")
        assert proc.poll() is None, (tmp_path / "alertmanager.log").read_text()[-2000:]
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _api(url: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{url}/api/v2/{path}", data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read() or b"null")


def _alerts(url: str) -> dict[str, dict[str, Any]]:
    return {a["labels"]["incident_id"]: a for a in _api(url, "alerts")}


def _ids(notification: dict[str, Any]) -> list[str]:
    return sorted(a["labels"]["incident_id"] for a in notification["alerts"])


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_incidents_arrive_group_are_silenced_and_resolve(server_store, alertmanager, hook):
    now = datetime.now(UTC)
    a1 = make_incident(1, node="node-0001", gpu=3, job="job-a", at=now - timedelta(minutes=2))
    a2 = make_incident(2, node="node-0002", gpu=5, job="job-a", at=now - timedelta(minutes=1))
    b1 = make_incident(3, category=Category.HOST_MEMORY, node="node-0003", gpu=None, job="job-b")
    save_incidents(server_store, [a1, a2, b1])
    sync = AlertSync(server_store, AlertmanagerClient(alertmanager), 30.0, console_url=CONSOLE)
    assert sync.sync() == 3

    alerts = _alerts(alertmanager)
    assert set(alerts) == {a1.id, a2.id, b1.id}
    first = alerts[a1.id]
    assert first["labels"] == {
        "alertname": "TrainGuardIncident",
        "severity": "error",
        "category": Category.GPU_HARDWARE.value,
        "cluster": "default",
        "node": "node-0001",
        "gpu": "3",
        "job": "job-a",
        "incident_id": a1.id,
    }
    assert "gpu" not in alerts[b1.id]["labels"] and alerts[b1.id]["labels"]["node"] == "node-0003"
    assert first["annotations"]["summary"] == a1.summary
    assert first["annotations"]["console"] == f"{CONSOLE}/?page=incident&id={a1.id}"
    assert first["generatorURL"] == first["annotations"]["console"]
    assert abs((_at(first["startsAt"]) - a1.detected_at).total_seconds()) < 0.01
    assert 100 < (_at(first["endsAt"]) - now).total_seconds() < 140  # 4 x 30 s ahead
    assert all(a["status"]["state"] == "active" for a in alerts.values())

    # grouping: job-a's two incidents are one group, and the group's notification carries both.
    # Alertmanager flushes a new group at once when its first alert started more than group_wait
    # ago, so the other may arrive one group_interval later, in the group's next notification.
    both = sorted([a1.id, a2.id])
    wait_for(
        lambda: any(_ids(n) == both for n in hook.groups("job-a")) and hook.groups("job-b"),
        20,
        "job-a's notification with both incidents, and job-b's",
    )
    for group_a in hook.groups("job-a"):
        assert group_a["status"] == "firing"
        assert group_a["groupLabels"] == {
            "cluster": "default",
            "category": Category.GPU_HARDWARE.value,
            "job": "job-a",
        }
        assert set(_ids(group_a)) <= set(both)
    notified = len(hook.groups("job-a"))

    # a silence on job-a suppresses its alerts, a new one included: nothing new reaches the hook
    silence = _api(
        alertmanager,
        "silences",
        {
            "matchers": [{"name": "job", "value": "job-a", "isRegex": False, "isEqual": True}],
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(hours=1)).isoformat(),
            "createdBy": "test",
            "comment": "maintenance of job-a's nodes",
        },
    )["silenceID"]
    a3 = make_incident(4, node="node-0004", gpu=1, job="job-a")
    save_incidents(server_store, [a3])
    assert sync.sync() == 4
    wait_for(
        lambda: all(
            _alerts(alertmanager)[i]["status"]["state"] == "suppressed" for i in (a1.id, a3.id)
        ),
        10,
        "job-a's alerts to be suppressed",
    )
    suppressed = _alerts(alertmanager)
    assert suppressed[a3.id]["status"]["silencedBy"] == [silence]
    assert suppressed[b1.id]["status"]["state"] == "active"
    time.sleep(3 * GROUP_INTERVAL_S + 1)  # unsilenced, a3 would be notified within one interval
    assert len(hook.groups("job-a")) == notified

    # the incident closes: its alert ends when it closed and the receiver hears it resolved
    closed_at = datetime.now(UTC)
    record_transition(
        server_store,
        Transition(
            incident_id=b1.id,
            status=IncidentStatus.RESOLVED,
            reason="DIMM replaced",
            actor="test",
            at=closed_at,
        ),
    )
    assert sync.sync() == 4  # a closed incident is still posted (resolved) for a while
    wait_for(
        lambda: any(n["status"] == "resolved" for n in hook.groups("job-b")),
        20,
        "job-b's resolved notification",
    )
    resolved = next(n for n in hook.groups("job-b") if n["status"] == "resolved")
    (alert,) = resolved["alerts"]
    assert alert["labels"]["incident_id"] == b1.id
    assert abs((_at(alert["endsAt"]) - closed_at).total_seconds()) < 1.0
    assert b1.id not in _alerts(alertmanager)  # no longer active


def test_open_incidents_are_posted_again_so_they_never_expire(server_store, alertmanager):
    incident = make_incident(5, job="job-c")
    save_incidents(server_store, [incident])
    sync = AlertSync(server_store, AlertmanagerClient(alertmanager), interval_s=1.0)
    stop = threading.Event()
    runner = threading.Thread(target=sync.run, args=(stop,))
    runner.start()
    try:
        wait_for(lambda: incident.id in _alerts(alertmanager), 10, "the alert")
        first_end = _at(_alerts(alertmanager)[incident.id]["endsAt"])
        # endsAt is 4 s ahead of each post: past the first endsAt the alert is still active,
        # its endsAt moved on by the posts that followed
        wait_for(
            lambda: (
                _at(_alerts(alertmanager)[incident.id]["endsAt"]) > first_end + timedelta(seconds=2)
            ),
            20,
            "a later post to move endsAt on",
        )
        wait_for(lambda: datetime.now(UTC) > first_end, 20, "the first post's endsAt to pass")
        again = _alerts(alertmanager)[incident.id]
        assert again["status"]["state"] == "active"
        assert _at(again["endsAt"]) > first_end
    finally:
        stop.set()
        runner.join(timeout=10)
    assert not runner.is_alive()


def test_trainguard_act_posts_incidents_when_configured(
    server_store, alertmanager, services, topics, kafka_bus, tmp_path
):
    incident = make_incident(6, node="node-0066", gpu=2, job="job-act")
    save_incidents(server_store, [incident])
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=1)
    token = tmp_path / "token"
    token.write_text("am-bearer-token-5d1e\n")
    env = process_env(
        services,
        topics,
        server_store,
        TG_ACT_EXECUTOR="local",
        TG_ACT_GROUP=f"act-{topics.prefix}",
        TG_ACT_CONSOLE_URL=CONSOLE,
        TG_ALERTMANAGER_URL=alertmanager,
        TG_ALERTMANAGER_BEARER_TOKEN_FILE=str(token),
        TG_ALERTMANAGER_INTERVAL_S="1",
    )
    log = tmp_path / "act.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "trainguard", "-v", "act"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            lambda: incident.id in _alerts(alertmanager) or proc.poll() is not None,
            60,
            "trainguard act to post the incident",
        )
        assert proc.poll() is None, log.read_text()[-3000:]
        alert = _alerts(alertmanager)[incident.id]
        assert alert["labels"]["node"] == "node-0066" and alert["labels"]["job"] == "job-act"
        assert alert["annotations"]["console"].startswith(CONSOLE)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "incidents go to Alertmanager" in text and "am-bearer-token" not in text
