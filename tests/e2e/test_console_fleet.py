"""The console's fleet view over a 16,384-GPU store: counts per job, then a job's nodes, a node.

The store holds 2,048 nodes x 8 GPUs in the default cluster (bench/console_fleet.py) and a
small second cluster, so the sidebar offers a cluster choice. For the large cluster the
overview must show the fleet aggregated by job with its counts per state instead of one cell
per GPU, and drill down to a job's nodes and from there to one node's GPUs; the small one
keeps the per-GPU map. Timing is measured by bench/console.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.auth import TokenBook
from api.context import ApiContext
from bench.console_fleet import Fleet, fill
from tests.e2e.conftest import LiveApi, serve_api
from tests.e2e.test_console import Console
from tests.integration.conftest import Services

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
FLEET = Fleet()
WEST = Fleet(nodes=4, jobs=1, nodes_per_job=2, incidents=1)  # 32 GPUs: the per-GPU map


@pytest.fixture(scope="module")
def live_api(services: Services) -> Iterator[LiveApi]:
    """Serve the API over a store holding the 16,384-GPU fleet (replaces conftest's)."""
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_fleet_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    fill(store, FLEET)
    fill(store, WEST, cluster="west")
    context = ApiContext(store=store, tokens=TokenBook(store), checks={"clickhouse": lambda: None})
    yield from serve_api(context)


def _choose(page: Console, label: str, value: str) -> None:
    field = page.until(
        lambda: next(
            iter(page.driver.find_elements(By.CSS_SELECTOR, f"input[aria-label*='{label}']")),
            False,
        ),
        f"the {label!r} chooser",
    )
    page.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", field)
    field.click()
    field.send_keys(value, Keys.ENTER)


@pytest.mark.slow
def test_fleet_view_aggregates_16k_gpus_by_job_and_drills_down(
    browser: WebDriver, console: str, live_api: LiveApi, screenshots
):
    summary = live_api.get("/v1/fleet/groups", cluster="default").json()
    lost, suspect = len(FLEET.lost()), len(FLEET.suspect_nodes())
    assert summary["gpus"] == FLEET.gpus == 16_384
    assert summary["states"]["lost"] == lost and summary["states"]["suspect"] == suspect
    assert len(summary["groups"]) == FLEET.jobs + 1  # the jobs and the idle nodes

    page = Console(browser, console)
    page.open()
    both = FLEET.gpus + WEST.gpus
    page.see("Cluster", f"{both:,} GPUs on {FLEET.nodes + WEST.nodes:,} nodes")
    _choose(page, "Cluster", "default")
    page.see(
        "Fleet map",
        f"{FLEET.gpus:,} GPUs on {FLEET.nodes:,} nodes, grouped by job",
        f"{FLEET.gpus - lost - suspect:,}",  # healthy GPUs, counted in ClickHouse
        "job-0000",
        "job-0014",
    )
    page.until(
        lambda: page.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stVegaLiteChart']"),
        "the per-job bars",
    )
    page.no_traceback()
    page.screenshot(screenshots / "fleet-16k.png")

    _choose(page, "Job group", "job-0000")
    first = range(FLEET.nodes_per_job)  # job-0000's nodes
    attention = {n for n in FLEET.lost() if n in first} | set(FLEET.suspect_nodes())
    page.see(
        "Nodes of job-0000",
        f"{FLEET.nodes_per_job - len(attention)} healthy node(s), {len(attention)} to look at",
        *(FLEET.node(n) for n in sorted(attention)),
    )
    nodes = live_api.get("/v1/fleet/groups/job-0000/nodes", cluster="default").json()["items"]
    assert len(nodes) == FLEET.nodes_per_job
    states = {n["node"]: n["state"] for n in nodes}
    assert states[FLEET.node(0)] == "lost" and states[FLEET.node(1)] == "suspect"

    _choose(page, "Group node", FLEET.node(1))
    page.click("Open group node")
    page.see("Nodes / GPUs", "Unhealthy GPUs", "Incident inc-fleet000001", "Xid history")
    assert f"node={FLEET.node(1)}" in page.driver.current_url
    assert "cluster=default" in page.driver.current_url  # the choice stays across pages
    detail = live_api.get(f"/v1/nodes/{FLEET.node(1)}", cluster="default").json()
    assert len(detail["gpus"]) == FLEET.gpus_per_node
    assert [g["state"] for g in detail["gpus"]].count("suspect") >= 1
    page.no_traceback()

    _choose(page, "Cluster", "west")
    page.see("Incident inc-west-fleet000001")  # the same node name, in the other cluster
    page.open("?page=overview&cluster=west")  # a shared link keeps the cluster
    west_healthy = WEST.gpus - len(WEST.lost()) - len(WEST.suspect_nodes())
    page.see("Fleet map", f"{west_healthy} healthy")
    page.until(lambda: "grouped by job" not in page.text(), "the per-GPU map of west")
    page.until(
        lambda: page.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stVegaLiteChart']"),
        "the per-GPU map",
    )
    assert "cluster=west" in page.driver.current_url
    page.no_traceback()
