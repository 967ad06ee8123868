"""The admin's CSS and the API docs as an operator gets them from the docs' own process
commands: `runserver` and gunicorn, DEBUG off, a real SECRET_KEY, no internet.

Each server is a real process on the embedded defaults (a fresh SQLite, migrated first).
runserver runs without collectstatic (WhiteNoise serves the apps' files); gunicorn runs
after collectstatic, as the Docker image does, and serves the collected, compressed files.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from executions.supervisor import (
    ROOT,
    Supervisor,
    environment,
    free_port,
    gunicorn_argv,
    listening,
    web_argv,
)

#: Swagger UI and Redoc render in the browser; this bounds a wait, it asserts no speed.
RENDER_WAIT_SECONDS = 30


@dataclass(frozen=True)
class Served:
    kind: str
    url: str
    static_root: Path


def manage(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(params=["runserver", "gunicorn"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    kind = request.param
    static_root = tmp_path / "static"
    env = environment(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        WORKFLOW_VAR_DIR=str(tmp_path / "var"),
        WORKFLOW_STATIC_ROOT=str(static_root),
        DATABASE_URL=None,
        CELERY_BROKER_URL=None,
    )
    manage(env, "migrate", "--noinput", "-v", "0")
    port = free_port()
    if kind == "gunicorn":
        manage(env, "collectstatic", "--noinput", "-v", "0")
        argv = gunicorn_argv(port)
    else:
        argv = web_argv("127.0.0.1", port)
    supervisor = Supervisor(tmp_path / "logs", env=env)
    process = supervisor.start(kind, argv, ready=listening("127.0.0.1", port))
    try:
        process.wait_ready()
        yield Served(kind, f"http://127.0.0.1:{port}", static_root)
    finally:
        supervisor.stop()


def resources_from_elsewhere(chrome, base_url: str) -> list[str]:
    """Every URL the page fetched that is not on the server under test (a CDN, say).
    A URL the page's Content-Security-Policy refused is listed by the browser as a
    resource too, though never fetched: the browser's security log names those."""
    urls = chrome.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    refused = " ".join(
        entry["message"] for entry in chrome.get_log("browser") if entry["source"] == "security"
    )
    return [url for url in urls if not url.startswith(base_url) and f"'{url}'" not in refused]


def test_admin_and_api_are_styled_and_docs_render_with_debug_off(
    chrome, served: Served, screenshots: Path
) -> None:
    chrome.get(f"{served.url}/admin/login/")
    chrome.save_screenshot(str(screenshots / f"static-{served.kind}-admin-login.png"))
    header = chrome.find_element(By.ID, "header")
    # base.css colours the header and sets the admin's own font; unstyled HTML has neither.
    assert header.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "")
    font = chrome.find_element(By.TAG_NAME, "body").value_of_css_property("font-family")
    assert "Times" not in font, font
    assert resources_from_elsewhere(chrome, served.url) == []

    # The browsable API (a public endpoint, as a browser asks for it): Bootstrap's navbar.
    chrome.get(f"{served.url}/healthz")
    chrome.save_screenshot(str(screenshots / f"static-{served.kind}-browsable-api.png"))
    navbar = chrome.find_element(By.CSS_SELECTOR, ".navbar")
    assert navbar.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "")
    assert resources_from_elsewhere(chrome, served.url) == []

    chrome.get(f"{served.url}/docs")
    wait = WebDriverWait(chrome, RENDER_WAIT_SECONDS)
    wait.until(lambda driver: driver.find_elements(By.CSS_SELECTOR, ".opblock"))
    chrome.save_screenshot(str(screenshots / f"static-{served.kind}-docs.png"))
    paths = {e.text for e in chrome.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert {"/executions", "/workflows", "/healthz"} <= paths, sorted(paths)
    assert resources_from_elsewhere(chrome, served.url) == []

    chrome.get(f"{served.url}/redoc")
    wait.until(lambda driver: driver.find_elements(By.CSS_SELECTOR, "[data-section-id]"))
    chrome.save_screenshot(str(screenshots / f"static-{served.kind}-redoc.png"))
    assert resources_from_elsewhere(chrome, served.url) == []


def test_gunicorn_serves_the_collected_compressed_files(served: Served) -> None:
    request = urllib.request.Request(
        f"{served.url}/static/admin/css/base.css", headers={"Accept-Encoding": "gzip"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        encoding = response.headers.get("Content-Encoding")
        assert response.headers.get_content_type() == "text/css"
    if served.kind == "gunicorn":
        assert (served.static_root / "admin/css/base.css.gz").exists()
        assert encoding == "gzip"  # the .gz collectstatic wrote, not the app's own file
    else:
        assert not served.static_root.exists()  # runserver: served from the app, uncollected
        assert encoding is None
