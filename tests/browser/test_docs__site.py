"""The built documentation site in a real browser, served as plain files (as any static
host would): the home page, a generated reference page, and the REST API page, where Redoc
renders the committed OpenAPI document from the site's own files, nothing from elsewhere."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from executions.supervisor import free_port
from tests.docs.site import build_once
from tests.waiting import eventually

#: Bounds a wait for Redoc to render; it asserts no speed.
RENDER_WAIT_SECONDS = 30


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    site = build_once().site
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
         "--directory", str(site)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        eventually(lambda: _answers(url), 30, "the site's http.server to answer")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/index.html", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def fetched_elsewhere(chrome, base_url: str, log: list[dict]) -> list[str]:
    """Every URL the page fetched from another host. One the site's Content-Security-Policy
    refused is listed as a resource too, though never fetched: the security log names it."""
    urls = chrome.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    refused = " ".join(entry["message"] for entry in log if entry["source"] == "security")
    return [
        url for url in urls if not url.startswith((base_url, "data:")) and f"'{url}'" not in refused
    ]


def visit(chrome, url: str) -> None:
    chrome.get_log("browser")  # what earlier pages logged is theirs
    chrome.get(url)


def test_home_and_a_reference_page_render_styled(chrome, site_url: str, screenshots: Path) -> None:
    visit(chrome, f"{site_url}/index.html")
    chrome.save_screenshot(str(screenshots / "docs-home.png"))
    header = chrome.find_element(By.CSS_SELECTOR, "header.md-header")
    # Material's stylesheet colours the header; unstyled HTML would leave it transparent.
    assert header.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "")
    tabs = {
        e.get_attribute("textContent").strip()
        for e in chrome.find_elements(By.CSS_SELECTOR, ".md-nav__link")
    }
    assert {"Tutorial", "How-to", "Reference", "Explanation", "Contributing"} <= tabs, tabs
    assert fetched_elsewhere(chrome, site_url, chrome.get_log("browser")) == []

    visit(chrome, f"{site_url}/reference/settings.html")
    chrome.save_screenshot(str(screenshots / "docs-reference-settings.png"))
    assert chrome.find_element(By.TAG_NAME, "h1").text == "Settings"
    cells = {e.text for e in chrome.find_elements(By.CSS_SELECTOR, "article table td code")}
    assert {"WORKFLOW_SWEEP_INTERVAL", "WORKFLOW_MAX_NODES"} <= cells
    assert fetched_elsewhere(chrome, site_url, chrome.get_log("browser")) == []


def test_redoc_renders_the_rest_api_offline(chrome, site_url: str, screenshots: Path) -> None:
    visit(chrome, f"{site_url}/reference/rest-api.html")
    wait = WebDriverWait(chrome, RENDER_WAIT_SECONDS)
    wait.until(lambda driver: driver.find_elements(By.CSS_SELECTOR, "[data-section-id]"))
    chrome.save_screenshot(str(screenshots / "docs-rest-api-redoc.png"))
    text = chrome.find_element(By.ID, "redoc-container").text
    # An operation of the document, by the name Redoc gives it, and one of its paths.
    assert "executions_list" in text, text[:2000]
    assert "/executions" in text
    log = chrome.get_log("browser")
    assert fetched_elsewhere(chrome, site_url, log) == []
    errors = [e for e in log if e["level"] == "SEVERE" and e["source"] != "security"]
    assert errors == [], errors
