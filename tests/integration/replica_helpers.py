"""Start `trainguard` replicas as processes (each in its own process group) and stop them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.errors import CoordinatorNotAvailableError

from tests.integration.conftest import REPO


class Replicas:
    """The processes a test started; every one (and its children) is stopped at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
        """Start `python -m trainguard <argv>` with its output appended to `log`."""
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "trainguard", *argv],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    @staticmethod
    def kill(proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL a replica and its children (a crash, not a shutdown)."""
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop_all(self) -> None:
        """SIGTERM every replica's group; SIGKILL what is left after 30 s."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
            with contextlib.suppress(ProcessLookupError):  # children of an exited leader
                os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def running() -> Iterator[Replicas]:
    """Processes started inside the block, stopped whatever happens (a fixture's body)."""
    started = Replicas()
    try:
        yield started
    finally:
        started.stop_all()


def free_port() -> int:
    """Return a loopback port free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def consuming_members(bootstrap: str, group: str) -> int:
    """Members of a settled consumer group that own at least one partition (0 mid-rebalance).

    A test that wants replicas to race waits for all of them here before it publishes: the
    first member to join owns every partition until the others have joined."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="tg-test-group-check")
    try:
        described = admin.describe_groups([group])[group]
    except CoordinatorNotAvailableError:  # the group's coordinator is still being elected
        return 0
    finally:
        admin.close()
    if described["error"] or described["group_state"] != "Stable":
        return 0
    return sum(
        1
        for member in described["members"]
        if any(owned["partitions"] for owned in member["member_assignment"]["assigned_partitions"])
    )
