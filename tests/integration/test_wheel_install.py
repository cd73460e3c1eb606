"""The built wheel, installed (not editable) outside the checkout, runs every role.

The sdist is built from the checkout, the wheel from the sdist (so both must carry the data
files), and the wheel is installed with `--no-deps` into a fresh virtual environment in a
temporary directory. Its third-party packages come from this interpreter's site-packages
through a .pth file, never the checkout: each test asserts that `trainguard` imports from
the new environment. The agent's environment sees only the distributions of the `agent`
extra (symlinked), so a server-only import in the agent's path fails here.
"""

from __future__ import annotations

import email.parser
import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from actions import store as db
from actions.model import State
from analytics.store import ServerStore
from ingest.bus import Topics
from ingest.kafka_bus import KafkaBus
from tests.actions_builders import make_incident
from tests.integration.conftest import Services, process_env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (
    "ingest",
    "analytics",
    "diagnosis",
    "prediction",
    "actions",
    "scheduler",
    "api",
    "ui",
    "sim",
)
PACKAGES_ALL = (*PACKAGES, "trainguard")
SERVER_ONLY = {"chdb", "streamlit", "scikit-learn", "clickhouse-driver", "fastapi", "kubernetes"}
XID_79 = "NVRM: Xid (PCI:0000:61:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"


@dataclass(frozen=True)
class Built:
    """The sdist, the wheel built from it, and what building cost."""

    sdist: Path
    wheel: Path
    build_s: float


@dataclass(frozen=True)
class Venv:
    """A virtual environment with the wheel installed, and a working directory outside."""

    root: Path
    cwd: Path
    install_s: float

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def env(self, base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
        """Return `base` (default: os.environ) run from this venv, nothing from the checkout."""
        env = {**(base if base is not None else os.environ), **extra}
        for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH"):
            env.pop(name, None)
        env["VIRTUAL_ENV"] = str(self.root)
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        return env

    def run(
        self, *argv: str, env: dict[str, str] | None = None, timeout: float = 120, **kw: object
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            cwd=self.cwd,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kw,  # type: ignore[arg-type]
        )


def _sh(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{argv}: {proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Build the sdist from the checkout (PEP 517 hooks), then the wheel from the sdist."""
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    code = f"from setuptools import build_meta as b; print(b.build_sdist({str(out)!r}))"
    name = _sh([sys.executable, "-c", code], REPO).strip().splitlines()[-1]
    sdist = out / name
    _sh(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--no-index", "-q", "-w", str(out), str(sdist)),
        ],
        out,
    )
    (wheel,) = out.glob("trainguard-*.whl")
    return Built(sdist, wheel, time.monotonic() - started)


def _make_venv(root: Path, wheel: Path, deps: Path) -> Venv:
    """Create a pip-less venv seeing `deps` (a .pth line) and install the wheel into it."""
    started = time.monotonic()
    _sh([sys.executable, "-m", "venv", "--without-pip", str(root)], root.parent)
    python = root / "bin" / "python"
    purelib = _sh(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        root.parent,
    ).strip()
    Path(purelib, "_trainguard_deps.pth").write_text(f"{deps}\n")
    _sh(
        [
            *(sys.executable, "-m", "pip", "--python", str(python), "install"),
            *("--no-deps", "--no-index", "-q", str(wheel)),
        ],
        root.parent,
    )
    cwd = root.parent / "work"
    cwd.mkdir()
    return Venv(root, cwd, time.monotonic() - started)


@pytest.fixture(scope="module")
def venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel in a fresh venv whose third-party packages are this interpreter's."""
    site = Path(sysconfig.get_paths()["purelib"])
    return _make_venv(tmp_path_factory.mktemp("full") / "venv", built.wheel, site)


def _requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(archive.read(name).decode())
    return [Requirement(line) for line in message.get_all("Requires-Dist") or []]


def _extra_closure(wheel: Path, extras: set[str]) -> set[str]:
    """Return the distributions the wheel requires with `extras` (self-references expanded)."""
    reqs = _requirements(wheel)
    wanted, seen, names = set(extras), set(), set()
    while wanted - seen:
        extra = (wanted - seen).pop()
        seen.add(extra)
        for req in reqs:
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue
            if req.name == "trainguard":
                wanted |= set(req.extras)
            else:
                names.add(req.name.lower().replace("_", "-"))
    return names


def _installed_closure(names: set[str]) -> dict[str, metadata.Distribution]:
    """Return the installed distributions `names` need, recursively (no extras of theirs)."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in found:
            continue
        dist = metadata.distribution(name)
        found[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


@pytest.fixture(scope="module")
def agent_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The wheel in a venv that sees only the distributions of the `agent` extra."""
    base = tmp_path_factory.mktemp("agent")
    deps = base / "deps"
    deps.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for dist in _installed_closure(_extra_closure(built.wheel, {"agent"})).values():
        top = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for entry in top:
            if (site / entry).exists() and not (deps / entry).exists():
                (deps / entry).symlink_to(site / entry)
    return _make_venv(base / "venv", built.wheel, deps)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def stop_all() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts: SIGTERM, then SIGKILL, whatever happens."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _start(venv: Venv, argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    with log.open("w") as out:
        return subprocess.Popen(
            [str(venv.bin / argv[0]), *argv[1:]],
            cwd=venv.cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )


def _stop(proc: subprocess.Popen[str], log: Path) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"{proc.args} ignored SIGTERM for 30 s:\n{log.read_text()[-3000:]}")


def test_wheel_and_sdist_carry_every_data_file(built: Built) -> None:
    tracked = _sh(["git", "ls-files", "--", *PACKAGES_ALL], REPO).split()
    data = sorted(f for f in tracked if not f.endswith(".py") and (REPO / f).is_file())
    assert {"actions/policies/default.yaml", "sim/scenarios/demo.yaml"} <= set(data)
    assert "diagnosis/catalog/xid_catalog.csv" in data
    with zipfile.ZipFile(built.wheel) as archive:
        in_wheel = set(archive.namelist())
    with tarfile.open(built.sdist) as archive:
        in_sdist = {n.partition("/")[2] for n in archive.getnames()}
    assert [f for f in data if f not in in_wheel] == []
    assert [f for f in data if f not in in_sdist] == []
    assert not any(n.startswith(("tests/", "bench/", "deploy/")) for n in in_wheel)
    size = built.wheel.stat().st_size
    print(
        f"wheel {size / 1e3:.0f} kB, sdist {built.sdist.stat().st_size / 1e3:.0f} kB, "
        f"built in {built.build_s:.1f} s"
    )


def test_the_agent_extra_leaves_out_the_server_packages(built: Built) -> None:
    agent = _extra_closure(built.wheel, {"agent"})
    core = _extra_closure(built.wheel, set())
    assert agent & SERVER_ONLY == set() and core & SERVER_ONLY == set()
    assert {"kafka-python", "nvidia-ml-py"} <= agent
    assert {"chdb", "streamlit"} & _extra_closure(built.wheel, {"server"}) == set()
    assert _extra_closure(built.wheel, {"dev"}) >= SERVER_ONLY
    print("agent extra:", ", ".join(sorted(agent)))


def test_the_installed_package_is_not_the_checkout(venv: Venv) -> None:
    code = (
        "import json, importlib; "
        f"print(json.dumps({{m: importlib.import_module(m).__file__ for m in {PACKAGES_ALL!r}}}))"
    )
    proc = venv.run("python", "-c", code)
    assert proc.returncode == 0, proc.stderr
    files = json.loads(proc.stdout)
    for module, path in files.items():
        assert Path(path).is_relative_to(venv.root), (module, path)
    print(f"installed with --no-deps in {venv.install_s:.1f} s")


def test_explain_a_log_line(venv: Venv) -> None:
    proc = venv.run("trainguard", "explain", "--json", "-", input=XID_79)
    assert proc.returncode == 0, proc.stderr
    (finding,) = json.loads(proc.stdout)
    assert finding["xid"] == 79 and finding["category"] == "gpu.hardware"


def test_explain_gives_the_learned_hint_from_the_installed_model(venv: Venv) -> None:
    """With --hint, a text no rule reads gets the hint of the model shipped in the wheel."""
    from bench.explain import load
    from diagnosis.explain import explain
    from diagnosis.explain.hint import RULE, hint

    text = next(r.text for r in load() if not explain(r.text) and hint(r.text) is not None)
    proc = venv.run("trainguard", "explain", "--json", "--hint", "-", input=text)
    assert proc.returncode == 0, proc.stderr
    assert [f["rule"] for f in json.loads(proc.stdout)] == [RULE]
    quiet = venv.run("trainguard", "explain", "--json", "-", input=text)
    assert json.loads(quiet.stdout) == []


def test_demo_once(venv: Venv) -> None:
    proc = venv.run("trainguard", "demo", "--once", "--data-dir", "demo-data", timeout=280)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "gpu.hardware" in proc.stdout and "Injected" in proc.stdout
    assert (venv.cwd / "demo-data").is_dir()


def test_act_runs_the_default_policy(
    venv: Venv,
    services: Services,
    topics: Topics,
    server_store: ServerStore,
    kafka_bus: KafkaBus,
    stop_all: list[subprocess.Popen[str]],
) -> None:
    kafka_bus.ensure_topics([topics.incidents, topics.actions], partitions=1)
    env = venv.env(
        process_env(services, topics, server_store),
        TG_ACT_EXECUTOR="local",
        TG_ACT_GROUP=f"act-{topics.prefix}",
        TG_ACT_POLL_S="0.5",
        TG_WEBHOOK_KEY_FILE=str(venv.cwd / "webhook.key"),
    )
    env.pop("TG_ACT_POLICY", None)
    log = venv.cwd / "act.log"
    proc = _start(venv, ["trainguard", "act"], env, log)
    stop_all.append(proc)
    incident = make_incident(79, node="node-0042", job="job-wheel")
    producer = kafka_bus.producer()
    producer.send_raw(topics.incidents, incident.id.encode(), incident.model_dump_json().encode())
    producer.flush()

    def dry_run() -> bool:  # TG_ACT_MODE defaults to dry_run: every step planned, none run
        assert proc.poll() is None, log.read_text()[-3000:]
        states = {a.state for a in db.load_actions(server_store, incident_id=incident.id)}
        return states == {State.DRY_RUN}

    wait_for(dry_run, 90, "the engine to plan the incident's ladder and record a dry run")
    assert _stop(proc, log) == 0, log.read_text()[-3000:]


def test_api_starts_answers_and_stops(
    venv: Venv,
    services: Services,
    topics: Topics,
    server_store: ServerStore,
    stop_all: list[subprocess.Popen[str]],
) -> None:
    port = _free_port()
    env = venv.env(
        process_env(services, topics, server_store),
        TG_API_PORT=str(port),
        TG_WEBHOOK_KEY_FILE=str(venv.cwd / "webhook.key"),
    )
    log = venv.cwd / "api.log"
    proc = _start(venv, ["trainguard", "api"], env, log)
    stop_all.append(proc)

    def answers(path: str) -> bool:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    wait_for(lambda: answers("/healthz"), 90, "the API's /healthz")
    assert answers("/readyz")  # ClickHouse and Kafka reachable from the installed API
    # uvicorn shuts down gracefully, then re-raises the signal it caught (exit by SIGTERM)
    assert _stop(proc, log) in (0, -signal.SIGTERM), log.read_text()[-3000:]


def test_agent_runs_with_the_agent_extra_alone(
    agent_venv: Venv,
    services: Services,
    topics: Topics,
    kafka_bus: KafkaBus,
    stop_all: list[subprocess.Popen[str]],
) -> None:
    for module in ("sklearn", "chdb", "streamlit", "clickhouse_driver", "pandas", "fastapi"):
        proc = agent_venv.run("python", "-c", f"import {module}")
        assert proc.returncode == 1 and "ModuleNotFoundError" in proc.stderr, module
    refused = agent_venv.run("trainguard", "api")
    assert refused.returncode == 2
    assert "pip install 'trainguard[server]'" in refused.stderr
    node = f"wheel-{topics.prefix.strip('.')}"
    env = agent_venv.env(
        TG_KAFKA_MODE="kafka",
        TG_KAFKA_BOOTSTRAP=services.kafka,
        TG_KAFKA_TOPIC_PREFIX=topics.prefix,
        TG_AGENT_NODE=node,
        TG_AGENT_KERNEL_LOG="off",
        TG_AGENT_INTERVAL_S="0.5",
    )
    log = agent_venv.cwd / "agent.log"
    proc = _start(agent_venv, ["trainguard", "agent"], env, log)
    stop_all.append(proc)
    consumer = kafka_bus.consumer(f"read-{topics.prefix}", topics.telemetry())
    got: list[bytes] = []

    def published() -> bool:
        assert proc.poll() is None, log.read_text()[-3000:]
        got.extend(r.value for r in consumer.poll(100, 0.5))
        return any(node.encode() in value for value in got)

    try:
        wait_for(published, 60, "the agent's host metrics on Kafka")
    finally:
        consumer.close()
    assert _stop(proc, log) == 0, log.read_text()[-3000:]
