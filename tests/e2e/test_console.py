"""The console in headless Chromium over the real API: overview → incident → lifecycle."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.conftest import LiveApi, free_port

pytestmark = [pytest.mark.integration, pytest.mark.e2e]
WAIT_S = 45


class Console:
    """The console as a person sees it."""

    def __init__(self, driver: WebDriver, url: str) -> None:
        self.driver = driver
        self.url = url

    def open(self, query: str = "") -> None:
        """Load the console afresh (a new Streamlit session)."""
        self.driver.get(self.url + "/" + query)
        self.until(lambda: "TrainGuard" in self.text(), "the sidebar")

    def text(self) -> str:
        """Return the page's visible text."""
        try:
            return self.driver.find_element(By.TAG_NAME, "body").text
        except (StaleElementReferenceException, WebDriverException):
            return ""

    def until(self, condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
        """Wait until condition() is truthy and return it; fail saying what did not appear."""

        def check(_driver: WebDriver) -> Any:
            try:
                return condition()
            except StaleElementReferenceException:
                return False

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.25).until(check)
        except Exception as exc:  # noqa: BLE001 (report what the page showed instead)
            pytest.fail(f"timed out waiting for {what}; page text:\n{self.text()[:3000]}\n{exc}")

    def see(self, *texts: str) -> None:
        """Wait until every text is on the page."""
        for text in texts:
            self.until(lambda t=text: t in self.text(), repr(text))

    def button(self, label: str) -> WebElement:
        """Return the enabled button whose text contains label."""
        clickable = "self::button or self::summary or @role='tab'"
        xpath = f"//*[{clickable}][contains(normalize-space(.), {_literal(label)})]"

        def find() -> WebElement | bool:
            found = [b for b in self.driver.find_elements(By.XPATH, xpath) if b.is_enabled()]
            return found[0] if found else False

        button: WebElement = self.until(find, f"button {label!r}")
        return button

    def click(self, label: str) -> None:
        """Click the button whose text contains label."""
        button = self.button(label)
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        button.click()

    def type_into(self, aria_label: str, text: str, enter: bool = False) -> None:
        """Type into the input with this label."""
        css = f"input[aria-label={_literal(aria_label)}]"
        field: WebElement = self.until(
            lambda: next(iter(self.driver.find_elements(By.CSS_SELECTOR, css)), False),
            f"input {aria_label!r}",
        )
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.DELETE)
        field.send_keys(text + (Keys.ENTER if enter else ""))

    def settle(self) -> None:
        """Wait until Streamlit has finished running the script."""
        time.sleep(0.5)
        self.until(
            lambda: (
                not self.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stStatusWidget']")
            ),
            "the script run to finish",
        )

    def screenshot(self, path: Path) -> None:
        """Save the page as a small PNG (256 colours)."""
        from PIL import Image

        self.settle()
        self.driver.save_screenshot(str(path))
        with Image.open(path) as image:
            image.convert("RGB").quantize(colors=256).save(path, optimize=True)

    def no_traceback(self) -> None:
        """Say a Python traceback never reaches the screen."""
        body = self.text()
        assert "Traceback" not in body and "StreamlitAPIException" not in body, body[:3000]


def _literal(text: str) -> str:
    return f'"{text}"' if '"' not in text else f"'{text}'"


@pytest.fixture
def page(browser: WebDriver, console: str) -> Console:
    return Console(browser, console)


def _incident(api: LiveApi, category: str) -> dict[str, Any]:
    items = api.get("/v1/incidents").json()["items"]
    (one,) = [i for i in items if i["category"] == category]
    return one


def test_overview_to_incident_then_acknowledge_and_resolve(page, live_api, screenshots):
    hang = _incident(live_api, "hang")
    page.open()
    page.see("Fleet overview", "Fleet map", "Live incidents", "ETTR per job", "j1", "j2")
    page.until(
        lambda: page.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stVegaLiteChart']"),
        "the fleet map",
    )
    page.no_traceback()
    page.screenshot(screenshots / "overview.png")

    page.click("hang · j2")
    page.see("Timeline", hang["id"], "Suspects", "rank 13")
    assert "page=incident" in page.driver.current_url
    assert f"id={hang['id']}" in page.driver.current_url  # a link that can be shared
    page.no_traceback()
    page.screenshot(screenshots / "incident.png")

    page.type_into("Note", "looking at rank 13")
    page.click("Acknowledge")
    page.see("Acknowledged.", "acknowledged by operator-user", "looking at rank 13")

    page.type_into("Resolution", "rank 13's host rebooted, job restarted")
    page.click("Resolve")
    page.see("Resolved.", "rank 13's host rebooted, job restarted")
    timeline = page.driver.find_element(By.CSS_SELECTOR, "[data-testid='stTable']").text
    assert "acknowledged" in timeline and "resolved" in timeline, timeline
    assert live_api.get(f"/v1/incidents/{hang['id']}").json()["incident"]["status"] == "resolved"
    page.no_traceback()


def test_shared_link_shows_groups_metrics_and_pending_actions(page, live_api):
    xid = _incident(live_api, "gpu.hardware")
    page.open(f"?page=incident&id={xid['id']}")
    page.see(xid["id"], "fallen off the bus", "node-0001 GPU 2")

    page.click("Parallel groups")
    page.until(
        lambda: page.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stGraphVizChart'] svg"),
        "the parallel-groups drawing",
    )
    page.see("Culprit rank 10")

    page.click("Metrics around the onset")
    page.see("GPU samples of node-0001")

    page.click("Actions")
    pending = live_api.get("/v1/actions", incident=xid["id"], status="pending").json()["items"]
    assert pending, "approve mode holds the node's isolation for an operator"
    page.see(pending[0]["kind"])
    page.no_traceback()


def test_fleet_map_drills_down_to_the_node(page):
    page.open()
    page.see("Fleet map")
    field = page.until(
        lambda: next(
            iter(page.driver.find_elements(By.CSS_SELECTOR, "input[aria-label^='Node']")), False
        ),
        "the node chooser",
    )
    field.click()
    field.send_keys("node-0001", Keys.ENTER)
    page.click("Open node")
    page.see("Nodes / GPUs", "Xid history", "fallen off the bus")
    assert "node=node-0001" in page.driver.current_url
    page.no_traceback()


def test_rejected_token_and_unreachable_api_are_explained(page):
    page.open("?page=jobs&job=j1")
    page.see("World size", "slurm")
    page.click("Connection")
    page.type_into("API token", "tg_not-a-real-token", enter=True)
    page.see("Token rejected", "unknown or revoked token")
    page.no_traceback()

    page.type_into("API URL", f"http://127.0.0.1:{free_port()}", enter=True)
    page.see("API unreachable", "cannot reach the TrainGuard API")
    page.no_traceback()


def test_a_viewer_sees_no_operator_or_admin_buttons(page, live_api):
    xid = _incident(live_api, "gpu.hardware")
    page.open(f"?page=incident&id={xid['id']}")
    page.see(xid["id"], "Signed in as operator-user (operator)")
    page.button("Acknowledge")  # the operator's token has them
    page.click("Connection")
    page.type_into("API token", live_api.tokens["viewer"], enter=True)
    page.see(
        "Signed in as viewer-user (viewer)",
        "Acknowledge, resolve and false alarm needs the operator role (this token is viewer)",
    )
    page.click("Actions")
    page.see("Approving or rejecting needs the operator role")
    page.settle()
    labels = {b.text.strip() for b in page.driver.find_elements(By.TAG_NAME, "button")}
    assert not labels & {"Acknowledge", "Resolve", "False alarm", "Approve", "Reject"}, labels
    page.no_traceback()


def test_approving_a_pending_action_shows_in_the_audit_log(page, live_api):
    probe = live_api.get("/v1/actions", status="pending")
    assert probe.status_code == 200, probe.text
    deadline = time.monotonic() + 30
    pending = probe.json()["items"]
    while not pending and time.monotonic() < deadline:
        time.sleep(1)
        pending = live_api.get("/v1/actions", status="pending").json()["items"]
    assert pending, "no pending action: the engine should ask approval for one (populate)"
    action = pending[0]

    page.open("?page=actions")
    page.see("Actions", action["kind"], "Audit log")
    approve = page.until(
        lambda: next(
            iter(
                page.driver.find_elements(By.CSS_SELECTOR, f".st-key-approve-{action['id']} button")
            ),
            False,
        ),
        "the action's Approve button",
    )
    approve.click()
    page.see(f"Approved {action['kind']}")
    audit = page.until(
        lambda: next(
            (
                t.text
                for t in page.driver.find_elements(By.CSS_SELECTOR, "[data-testid='stTable']")
                if action["id"] in t.text
            ),
            False,
        ),
        "the approval in the audit log",
    )
    assert "approv" in audit.lower(), audit
    after = live_api.get("/v1/actions", status="pending").json()["items"]
    assert action["id"] not in {a["id"] for a in after}
    page.no_traceback()
