"""The real API over a populated ClickHouse database, the real console, headless Chromium.

Chromium and its driver are Debian's (`apt-get install chromium chromium-driver`, done by
deploy/dev.sh); the services come from tests/integration's `services` fixture.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role
from api.context import ApiContext
from tests.api_fixtures import api_context, populate
from tests.integration.conftest import REPO, Services, services  # noqa: F401 (fixture)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@dataclass(frozen=True)
class LiveApi:
    """The API served on loopback, with one token per role."""

    url: str
    tokens: dict[str, str]
    store: ServerStore

    def get(self, path: str, role: str = "operator", **params: object) -> httpx.Response:
        """Call the API as a role."""
        headers = {"Authorization": f"Bearer {self.tokens[role]}"}
        return httpx.get(self.url + path, params=params, headers=headers, timeout=30)  # type: ignore[arg-type]


def free_port() -> int:
    """Return a loopback port nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live_api(services: Services) -> Iterator[LiveApi]:  # noqa: F811
    """Serve the API with uvicorn in a thread over a database filled like production."""
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_ui_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    populate(store)
    # with the action engine in approve mode: steps wait
    yield from serve_api(api_context(store))


def serve_api(context: ApiContext) -> Iterator[LiveApi]:
    """Serve `context` with uvicorn in a thread, a token per role; drop its database after."""
    store = context.store
    tokens = {r.value: context.tokens.create(f"{r.value}-user", r) for r in Role}
    port = free_port()
    config = uvicorn.Config(create_app(context), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield LiveApi(f"http://127.0.0.1:{port}", tokens, store)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
        store.close()


@pytest.fixture(scope="module")
def console(live_api: LiveApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Serve the console with `trainguard console` (an operator's token); yield its URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("console") / "streamlit.log"
    env = {
        **os.environ,
        "TG_CONSOLE_API_URL": live_api.url,
        "TG_CONSOLE_TOKEN": live_api.tokens["operator"],
        "TG_CONSOLE_PORT": str(port),
        "TG_CONSOLE_REFRESH_S": "0",
        "PYTHONPATH": str(REPO),
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "trainguard", "console"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        # SIGTERM: the launcher stops Streamlit (its own process group) before it exits; it
        # used to die of it alone, and Streamlit kept serving on the port after the suite.
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()  # Streamlit gets SIGTERM from the kernel when its launcher dies
            proc.wait()
        _wait_port_free(port, log)


def _wait_port_free(port: int, log: Path) -> None:
    """Fail unless nothing listens on the port any more (no Streamlit left behind)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return
            except OSError:
                pass
        time.sleep(0.2)
    pytest.fail(f"the console still listens on {port} after stopping:\n{log.read_text()[-3000:]}")


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the console exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/_stcore/health", timeout=2).text == "ok":
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    pytest.fail(f"the console did not become healthy:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Return headless Chromium driven by Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists() and not shutil.which(Path(path).name):
            pytest.fail(f"{path} missing: apt-get install -y chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1440,1000",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return where screenshots go: TG_E2E_SCREENSHOTS (docs/screenshots) or a temp dir."""
    where = os.environ.get("TG_E2E_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path
