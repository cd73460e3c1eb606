"""`trainguard console` as a real process: SIGTERM stops Streamlit too and frees the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import REPO, wait_for

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no listener
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _children(pid: int) -> list[int]:
    """Return the live processes whose parent is pid (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while listing
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/_stcore/health", timeout=2).text == "ok"
    except httpx.TransportError:
        return False


class Console:
    """One `trainguard console` launcher process and what it started."""

    def __init__(self, port: int, token: str, log: Path) -> None:
        env = {
            **os.environ,
            "TG_CONSOLE_API_URL": "http://127.0.0.1:9",
            "TG_CONSOLE_TOKEN": token,
            "TG_CONSOLE_PORT": str(port),
            "PYTHONPATH": str(REPO),
        }
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "trainguard", "console"],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.seen: set[int] = set()

    def wait_healthy(self) -> int:
        """Wait until Streamlit answers; return its pid (the launcher's only child)."""
        wait_for(
            lambda: self.proc.poll() is not None or _healthy(self.url),
            60,
            f"the console on {self.url}",
        )
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        children = _children(self.proc.pid)
        self.seen.update(children)
        assert len(children) == 1, children
        return children[0]

    def kill_all(self) -> None:
        """Cleanup whatever the test left: the launcher and every child seen."""
        for pid in [self.proc.pid, *self.seen]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture
def consoles(tmp_path: Path) -> Iterator[list[Console]]:
    started: list[Console] = []
    yield started
    for console in started:
        console.kill_all()


def test_sigterm_stops_streamlit_frees_the_port_and_a_restart_works(consoles, tmp_path):
    port, token = _free_port(), f"tg_{uuid.uuid4().hex}"
    first = Console(port, token, tmp_path / "console.log")
    consoles.append(first)
    child = first.wait_healthy()
    # The token is not in the child's environment or command line.
    environ = Path(f"/proc/{child}/environ").read_bytes()
    cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
    assert token.encode() not in environ and token.encode() not in cmdline
    assert b"TG_CONSOLE_TOKEN_FD=" in environ
    # It runs in its own process group (stopped as a group).
    assert os.getpgid(child) == child != os.getpgid(first.proc.pid)

    started = time.monotonic()
    first.proc.send_signal(signal.SIGTERM)
    assert first.proc.wait(timeout=30) == 0, first.log.read_text()[-3000:]
    stopped_s = time.monotonic() - started
    assert not _alive(child), "Streamlit outlived the launcher"
    assert _port_free(port), f"port {port} still taken after SIGTERM"
    assert stopped_s < 15

    second = Console(port, token, tmp_path / "console.log")
    consoles.append(second)
    second_child = second.wait_healthy()
    second.proc.send_signal(signal.SIGINT)  # Ctrl-C stops it the same way
    assert second.proc.wait(timeout=30) == 0
    assert not _alive(second_child) and _port_free(port)


def test_streamlit_dies_with_a_killed_launcher(consoles, tmp_path):
    console = Console(_free_port(), "", tmp_path / "console.log")
    consoles.append(console)
    child = console.wait_healthy()
    console.proc.send_signal(signal.SIGKILL)  # no chance to stop the child itself
    console.proc.wait(timeout=10)
    wait_for(lambda: not _alive(child), 20, "Streamlit to exit after its launcher was killed")
