"""Execution tags in the admin as a person sees them, in a real browser: the list's tags
column, and the search by `key:value` that narrows the list to the tagged executions.

Screenshots go to var/screenshots/admin-executions-tags*.png for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from executions.models import Execution
from executions.services.start import execution_start
from tests.browser.test_admin__console import log_in, wait_until
from tests.browser.test_admin__schedules_triggers import column
from tests.factories import make_version

pytestmark = pytest.mark.django_db(transaction=True)

ONE = {"nodes": [{"id": "a", "type": "approval"}]}
#: The longest value a tag may have (executions/tags.py): the column must still read.
LONG = "eu-west-1/" + "x" * 118


def tagged(version, tags: dict[str, str]) -> Execution:
    execution, _ = execution_start(version=version, input={}, tags=tags, by="ada")
    return execution


def shown_ids(chrome) -> set[str]:
    """The executions the list shows, by the full id each row's checkbox carries."""
    boxes = chrome.find_elements(By.CSS_SELECTOR, "#result_list input.action-select")
    return {box.get_attribute("value") for box in boxes}


def search(chrome, term: str) -> None:
    field = chrome.find_element(By.ID, "searchbar")
    field.clear()
    field.send_keys(term, Keys.ENTER)
    wait_until(chrome, lambda: f"q={term.replace(':', '%3A')}" in chrome.current_url, "search")


def test_tags_in_the_execution_list_and_the_search_by_key_value(
    chrome, live_server, screenshots: Path
) -> None:
    version = make_version(ONE, name="tagged-report")
    billing_prod = tagged(version, {"team": "billing", "env": "prod"})
    billing_eu = tagged(version, {"team": "billing", "region": LONG, "env": "staging"})
    search_prod = tagged(version, {"team": "search", "env": "prod"})
    untagged = tagged(version, {})
    log_in(chrome, live_server)

    chrome.get(f"{live_server.url}/admin/executions/execution/")
    everything = {str(e.pk) for e in (billing_prod, billing_eu, search_prod, untagged)}
    assert shown_ids(chrome) == everything
    # The column header says what it is; each row its tags, sorted by key, or a dash.
    headers = [h.text for h in chrome.find_elements(By.CSS_SELECTOR, "#result_list thead th")]
    assert "TAGS" in [h.upper() for h in headers]
    assert sorted(column(chrome, "tags_text")) == sorted(
        [
            "env:prod\nteam:billing",
            f"env:staging\nregion:{LONG}\nteam:billing",
            "env:prod\nteam:search",
            "—",
        ]
    )
    # A 128-character value wraps inside its cell: at 1400px, with the admin's sidebars
    # open, the whole table shows, none of it behind a horizontal scroll.
    overflow = chrome.execute_script(
        "const box = document.querySelector('#changelist .results');"
        "return box.scrollWidth - box.clientWidth;"
    )
    assert overflow <= 0, f"the list runs {overflow}px past its box"
    chrome.save_screenshot(str(screenshots / "admin-executions-tags.png"))

    search(chrome, "team:billing")
    assert shown_ids(chrome) == {str(billing_prod.pk), str(billing_eu.pk)}
    assert all("team:billing" in tags for tags in column(chrome, "tags_text"))
    assert chrome.find_element(By.ID, "searchbar").get_attribute("value") == "team:billing"
    chrome.save_screenshot(str(screenshots / "admin-executions-tags-search.png"))

    search(chrome, "env:prod")
    assert shown_ids(chrome) == {str(billing_prod.pk), str(search_prod.pk)}

    search(chrome, "team:nobody")
    assert shown_ids(chrome) == set()
    assert "0 results" in chrome.find_element(By.ID, "changelist-search").text

    # A row's id opens its console, which shows the same tags.
    search(chrome, "env:staging")
    assert shown_ids(chrome) == {str(billing_eu.pk)}
    chrome.find_element(By.CSS_SELECTOR, "#result_list tbody th a").click()
    wait_until(chrome, lambda: chrome.find_elements(By.ID, "wf-tags"), "the console")
    badges = chrome.find_elements(By.CSS_SELECTOR, "#wf-tags .wf-badge")
    assert [b.text for b in badges] == ["env:staging", f"region:{LONG}", "team:billing"]
    chrome.save_screenshot(str(screenshots / "admin-executions-tags-console.png"))
    # In a narrower window the long value wraps inside its badge: no sideways scroll.
    chrome.set_window_size(1000, 900)
    try:
        wait_until(chrome, lambda: chrome.execute_script("return innerWidth") < 1100, "resize")
        overflow = chrome.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"the console runs {overflow}px past the window"
        chrome.save_screenshot(str(screenshots / "admin-executions-tags-console-narrow.png"))
    finally:
        chrome.set_window_size(1400, 900)
