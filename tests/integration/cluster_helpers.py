"""Drive deploy/cluster.sh from a test: a private cluster (own state dir and ports), its
members' pids and logs, a store and a bus on it, and the Slurm log's drains."""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from analytics.store import ServerStore
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from tests.integration.conftest import REPO

SCRIPT = REPO / "deploy" / "cluster.sh"
KAFKA = ("kafka1", "kafka2", "kafka3")
CLICKHOUSE = ("s1r1", "s1r2", "s2r1", "s2r2")
SERVICES = (
    "sink1",
    "sink2",
    "diagnose1",
    "diagnose2",
    "diagnose3",
    "act1",
    "act2",
    "api1",
    "api2",
)
MEMBERS = (*KAFKA, *CLICKHOUSE, *SERVICES)
# Offsets from the base port that deploy/cluster.sh uses (see its header).
_OFFSETS = (
    *range(0, 3),
    *range(10, 13),
    41,
    42,
    *range(51, 54),
    61,
    62,
    71,
    72,
    81,
    82,
    100,
    *range(110, 114),
    *range(120, 124),
    *range(130, 134),
)


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ephemeral_low() -> int:
    """Return the first port the kernel hands out to outgoing connections."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_base() -> int:
    """Return a base port whose every port of the cluster is free now, below the kernel's
    ephemeral range: a port in it can be taken by any outgoing connection (a Kafka or
    ClickHouse client of this very test) between this check and the service's bind."""
    bases = list(range(21000, ephemeral_low() - max(_OFFSETS), 200))
    random.shuffle(bases)
    for base in bases:
        if all(_free(base + off) for off in _OFFSETS):
            return base
    raise RuntimeError("no free port range for a cluster")


class LocalCluster:
    """One deploy/cluster.sh cluster in a temporary directory on free ports."""

    def __init__(self, env: dict[str, str]) -> None:
        # short and plain: the scripts write it into configs
        self.root = Path(tempfile.mkdtemp(prefix="tg-cluster-", dir="/tmp"))
        self.base = free_base()
        self.env = {
            **os.environ,
            "TG_LOCAL_CLUSTER_DIR": str(self.root),
            "TG_LOCAL_CLUSTER_BASE_PORT": str(self.base),
            "TG_PYTHON": sys.executable,  # the services run with this test's TrainGuard
            **env,
        }
        self.script_log = self.root / "cluster-sh.log"

    def run(self, *args: str, timeout_s: float = 600) -> None:
        """Run `deploy/cluster.sh ARGS`; raise with its output's tail when it fails."""
        with self.script_log.open("ab") as out:
            done = subprocess.run(
                ["bash", str(SCRIPT), *args],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        if done.returncode != 0:
            tail = self.script_log.read_text(errors="replace")[-4000:]
            raise RuntimeError(
                f"deploy/cluster.sh {' '.join(args)} exited {done.returncode}:\n{tail}"
            )

    def status_ok(self) -> bool:
        """Whether `deploy/cluster.sh status` finds every member up."""
        with self.script_log.open("ab") as out:
            done = subprocess.run(
                ["bash", str(SCRIPT), "status"],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=120,
                check=False,
            )
        return done.returncode == 0

    def pidfile(self, member: str) -> Path:
        if member in KAFKA:
            return self.root / "kafka-cluster" / f"node{member[-1]}" / "kafka.pid"
        if member in CLICKHOUSE:
            return self.root / "chcluster" / member / "clickhouse.pid"
        return self.root / "run" / f"{member}.pid"

    def pid(self, member: str) -> int | None:
        """Return the member's recorded pid if that process is alive."""
        try:
            pid = int(self.pidfile(member).read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def pids(self) -> dict[str, int | None]:
        return {m: self.pid(m) for m in MEMBERS}

    def log(self, member: str) -> Path:
        return self.root / "logs" / f"{member}.log"

    def log_tail(self, member: str, chars: int = 2500) -> str:
        path = self.log(member)
        text = path.read_text(errors="replace") if path.exists() else "(no log)"
        return f"---- {member} ----\n{text[-chars:]}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.base + i}" for i in range(3))

    def ch_port(self, server: str) -> int:
        return self.base + 110 + CLICKHOUSE.index(server)

    def store(self, server: str = "s1r1") -> ServerStore:
        """A client of the cluster's store entering through `server`."""
        return ServerStore(
            "127.0.0.1", self.ch_port(server), "trainguard", cluster="tg", insert_quorum=2
        )

    def bus(self) -> KafkaBus:
        return KafkaBus(self.bootstrap, Topics(), linger_ms=5)

    def remove(self, keep_logs: Path) -> None:
        """Delete the cluster's state; its logs are copied to `keep_logs` first."""
        keep_logs.mkdir(parents=True, exist_ok=True)
        logs = [
            self.script_log,
            *self.root.glob("logs/*.log"),
            *self.root.glob("kafka-cluster/node*/logs/server.log"),
            *self.root.glob("chcluster/*/logs/*.log"),
        ]
        for path in logs:
            name = "-".join(path.relative_to(self.root).parts)
            shutil.copyfile(path, keep_logs / name)
        shutil.rmtree(self.root, ignore_errors=True)


def slurmctld_log(conf: str) -> Path:
    """Return the slurmctld log file that `conf` (a slurm.conf) names."""
    text = Path(conf).read_text()
    found = re.search(r"^SlurmctldLogFile=(\S+)", text, re.MULTILINE)
    if not found:
        raise RuntimeError(f"{conf} names no SlurmctldLogFile")
    return Path(found.group(1))


def drains_since(log: Path, offset: int) -> list[tuple[str, str]]:
    """Return (node, incident id) of every TrainGuard drain slurmctld logged after `offset`."""
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    pattern = r"update_node: node (\S+) reason set to: trainguard:([^:\s]+):"
    return re.findall(pattern, text)
