"""The console's fleet view at 16,384 GPUs: time to first render in headless Chromium.

Fills a database on the real ClickHouse server with a 2,048-node x 8-GPU fleet
(bench/console_fleet.py), serves the real API over it (uvicorn in this process) and the real
console (`trainguard console`, a subprocess), and opens the overview in Debian's Chromium
through Selenium. Each run is a fresh page load (a new Streamlit session): the time is from
the request until the fleet view's aggregate (counts per state, the per-job chart and table)
is on the screen and the script run has finished. The first run finds the API's caches
empty; later runs are what an on-call engineer reloading the page sees. The drill-down (a
job's nodes) is timed the same way. For scale, the API answers are timed too: the aggregate
the view reads, and every GPU row (what the per-GPU map would read at this size).

    python -m bench.console [--runs 5] [--nodes 2048]

Prints JSON and writes bench/results/console.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role, TokenBook
from api.context import ApiContext
from bench.console_fleet import Fleet, fill
from trainguard.settings import local_services_env

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "console.json"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TIMEOUT_S = 120


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_api(store: ServerStore) -> Iterator[tuple[str, str]]:
    """Serve the API over `store`; yield its URL and an operator token."""
    context = ApiContext(store=store, tokens=TokenBook(store), checks={"clickhouse": lambda: None})
    token = context.tokens.create("bench-console", Role.OPERATOR)
    server = uvicorn.Server(
        uvicorn.Config(create_app(context), host="127.0.0.1", port=_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}", token
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serve_console(api_url: str, token: str) -> Iterator[str]:
    """Run `trainguard console` against the API; yield its URL; stop it afterwards."""
    port = _port()
    env = {
        **os.environ,
        "TG_CONSOLE_API_URL": api_url,
        "TG_CONSOLE_TOKEN": token,
        "TG_CONSOLE_PORT": str(port),
        "TG_CONSOLE_REFRESH_S": "0",
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainguard", "console"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/_stcore/health", timeout=2).text == "ok":
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def chromium() -> Iterator[Any]:
    """Yield headless Chromium driven by Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1440,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _until(driver: Any, condition: Callable[[], bool], what: str) -> None:
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except StaleElementReferenceException:
            pass
        time.sleep(0.02)
    raise TimeoutError(f"{what} did not appear in {TIMEOUT_S} s")


def _rendered(driver: Any, *texts: str) -> Callable[[], bool]:
    from selenium.webdriver.common.by import By

    def check() -> bool:
        body = driver.find_element(By.TAG_NAME, "body").text
        return (
            all(t in body for t in texts)
            and bool(driver.find_elements(By.CSS_SELECTOR, "[data-testid='stVegaLiteChart']"))
            and not driver.find_elements(By.CSS_SELECTOR, "[data-testid='stStatusWidget']")
        )

    return check


def first_render_s(driver: Any, url: str, fleet: Fleet) -> float:
    """Return the seconds from loading the overview to the fleet view's aggregate shown."""
    start = time.perf_counter()
    driver.get(url + "/")
    _until(driver, _rendered(driver, f"{fleet.gpus:,} GPUs on {fleet.nodes:,} nodes"), "fleet")
    return time.perf_counter() - start


def drill_down_s(driver: Any, fleet: Fleet) -> float:
    """Return the seconds from choosing job-0000 to its nodes shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    field = driver.find_element(By.CSS_SELECTOR, "input[aria-label^='Job group']")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", field)
    start = time.perf_counter()
    field.click()
    field.send_keys("job-0000", Keys.ENTER)
    _until(driver, _rendered(driver, "Nodes of job-0000", fleet.node(1)), "the job's nodes")
    return time.perf_counter() - start


def api_times(api_url: str, token: str, repeats: int = 5) -> dict[str, Any]:
    """Time the aggregate the view reads and the every-GPU list, warm, median of `repeats`."""
    headers = {"Authorization": f"Bearer {token}"}
    out: dict[str, Any] = {}
    with httpx.Client(base_url=api_url, headers=headers, timeout=120) as http:
        for name, path in (
            ("fleet_groups", "/v1/fleet/groups"),
            ("all_gpus_first_page", "/v1/gpus?limit=5000"),
        ):
            times, size = [], 0
            for _ in range(repeats):
                start = time.perf_counter()
                response = http.get(path)
                times.append(time.perf_counter() - start)
                response.raise_for_status()
                size = len(response.content)
            out[name] = {
                "path": path,
                "median_ms": round(1000 * statistics.median(times), 1),
                "max_ms": round(1000 * max(times), 1),
                "bytes": size,
            }
    return out


def main() -> None:
    """Run the bench and write bench/results/console.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=2048)
    args = parser.parse_args()
    fleet = Fleet(nodes=args.nodes)
    env = {**local_services_env(REPO), **os.environ}
    store = ServerStore(
        env.get("TG_CLICKHOUSE_HOST", "127.0.0.1"),
        int(env.get("TG_CLICKHOUSE_PORT", "9000")),
        f"bench_console_{uuid.uuid4().hex[:8]}",
    )
    try:
        migrate(store)
        start = time.perf_counter()
        fill(store, fleet)
        fill_s = time.perf_counter() - start
        with serve_api(store) as (api_url, token), serve_console(api_url, token) as url:
            with chromium() as driver:
                renders, drills = [], []
                for _ in range(args.runs):
                    renders.append(first_render_s(driver, url, fleet))
                    drills.append(drill_down_s(driver, fleet))
            api = api_times(api_url, token)
    finally:
        store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
        store.close()
    result = {
        "measured": datetime.now(UTC).date().isoformat(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "fleet": {**asdict(fleet), "gpus": fleet.gpus},
        "store": "ClickHouse 18.16 server (loopback)",
        "fill_s": round(fill_s, 1),
        "runs": args.runs,
        "first_render_s": {
            "cold": round(renders[0], 2),
            "warm_median": round(statistics.median(renders[1:] or renders), 2),
            "all": [round(r, 2) for r in renders],
        },
        "drill_down_s": {
            "median": round(statistics.median(drills), 2),
            "all": [round(d, 2) for d in drills],
        },
        "api": api,
    }
    text = json.dumps(result, indent=2)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
