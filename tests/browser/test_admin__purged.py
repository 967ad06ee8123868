"""The console page of a purged execution, in a real browser: it answers 410 with what
the tombstone keeps (workflow, status, when it ended and was purged, its events and last
hash) and a link to the tombstone's own admin page.

Screenshots go to var/screenshots/console-purged*.png for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from executions.models import Execution, Tombstone
from executions.services.start import execution_start
from tests.api.test_purge import purge
from tests.browser.test_admin__console import log_in, wait_until
from tests.factories import make_version
from tests.integration.engine import Engine

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}


def status_of(chrome, url: str) -> int:
    """The HTTP status the browser gets for a URL (a page load does not tell Selenium)."""
    return chrome.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => done(r.status));",
        url,
    )


def test_the_console_of_a_purged_execution_shows_its_tombstone(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    version = make_version(ECHO, name="nightly-export")
    execution = engine.wait(execution_start(version=version, input={"x": 1})[0].pk)
    assert execution.status == "succeeded"
    purge()
    assert not Execution.objects.filter(pk=execution.pk).exists()
    tombstone = Tombstone.objects.get(pk=execution.pk)
    log_in(chrome, live_server)

    url = f"{live_server.url}/admin/executions/execution/{execution.pk}/change/"
    chrome.get(url)
    assert status_of(chrome, url) == 410
    assert "(purged)" in chrome.title
    page = chrome.find_element(By.ID, "wf-purged")
    text = page.text
    assert str(execution.pk) in text
    assert "of nightly-export v1 ended" in text
    # When, as the console writes times (not ISO 8601 with microseconds, split mid-date).
    ended = tombstone.ended_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert page.find_element(By.ID, "wf-ended").text == ended
    purged_at = tombstone.purged_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert page.find_element(By.ID, "wf-purged-at").text == purged_at
    assert page.find_element(By.CSS_SELECTOR, ".wf-badge.wf-succeeded").text == "succeeded"
    assert f"Its {tombstone.events} events are gone from this database" in text
    assert tombstone.last_hash in text
    assert "replay_execution --from-file" in text
    # The long id and hash stay inside the page: nothing runs off its right edge.
    width = chrome.execute_script("return document.documentElement.scrollWidth")
    assert width <= chrome.execute_script("return window.innerWidth"), width
    chrome.save_screenshot(str(screenshots / "console-purged.png"))

    chrome.find_element(By.LINK_TEXT, "Its tombstone").click()
    wait_until(chrome, lambda: "/tombstone/" in chrome.current_url, "the tombstone's page")
    assert status_of(chrome, chrome.current_url) == 200
    assert tombstone.last_hash in chrome.find_element(By.ID, "content").text
    chrome.save_screenshot(str(screenshots / "console-purged-tombstone.png"))

    # An id that never existed is still "not found", not a tombstone.
    unknown = (
        f"{live_server.url}/admin/executions/execution/{'0' * 8}-0000-0000-0000-{'0' * 12}/change/"
    )
    assert status_of(chrome, unknown) == 404
