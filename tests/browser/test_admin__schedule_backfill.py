"""A schedule's past fire times backfilled from its admin page, in a real browser: the
form, what it started (each execution's input carries its own fire time), a repeat that
starts nothing, and a refusal shown on the form.

Screenshots go to var/screenshots/admin-schedule-backfill*.png.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from executions.schedules.models import ScheduleFire
from executions.schedules.services import schedule_create
from tests.browser.test_admin__console import log_in
from tests.browser.test_admin__schedules_triggers import column, message, wait_until
from tests.factories import make_version

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}


def fill(chrome, start: str, end: str) -> None:
    # The browser's own date-time picker has no keyboard layout that holds in every
    # locale: the values go in as the picker would leave them.
    for name, value in (("start", start), ("end", end)):
        field = chrome.find_element(By.NAME, name)
        chrome.execute_script("arguments[0].value = arguments[1]", field, value)
    chrome.find_element(By.NAME, "backfill").click()


def test_a_schedule_backfilled_from_its_admin_page(chrome, live_server, screenshots: Path) -> None:
    workflow = make_version(ECHO, name="hourly-report").workflow
    schedule = schedule_create(
        workflow=workflow, cron="0 * * * *", input={"for": "{{ schedule.fire_time }}"}, by="ada"
    )
    log_in(chrome, live_server)
    chrome.get(f"{live_server.url}/admin/executions/schedule/{schedule.pk}/change/")
    chrome.find_element(By.ID, "wf-backfill").click()
    wait_until(chrome, lambda: chrome.find_elements(By.ID, "wf-backfill-form"))
    assert "Backfill" in chrome.title
    chrome.save_screenshot(str(screenshots / "admin-schedule-backfill-form.png"))

    fill(chrome, "2026-03-01T00:00:00", "2026-03-01T04:00:00")
    wait_until(chrome, lambda: "Backfill started" in message(chrome))
    assert message(chrome) == "Backfill started 5 execution(s); 0 fire time(s) had run already."
    chrome.save_screenshot(str(screenshots / "admin-schedule-backfill-message.png"))
    fires = ScheduleFire.objects.filter(schedule=schedule).order_by("fire_time")
    assert [(fire.outcome, fire.backfill) for fire in fires] == [("started", True)] * 5
    assert [fire.execution.input for fire in fires] == [
        {"for": f"2026-03-01T0{hour}:00:00Z"} for hour in range(5)
    ]
    rows = chrome.find_elements(By.CSS_SELECTOR, "table.wf-fires tbody tr")
    assert [row.text.split(" started")[0] for row in rows] == [
        f"2026-03-01 0{hour}:00:00 UTC" for hour in (4, 3, 2, 1, 0)
    ]
    chrome.execute_script("arguments[0].scrollIntoView()", rows[0])
    chrome.save_screenshot(str(screenshots / "admin-schedule-backfill-done.png"))

    chrome.find_element(By.ID, "wf-backfill").click()
    wait_until(chrome, lambda: chrome.find_elements(By.ID, "wf-backfill-form"))
    fill(chrome, "2026-03-01T03:00:00", "2026-03-01T05:00:00")
    wait_until(chrome, lambda: "Backfill started" in message(chrome))
    assert message(chrome) == "Backfill started 1 execution(s); 2 fire time(s) had run already."
    assert ScheduleFire.objects.filter(schedule=schedule).count() == 6

    chrome.find_element(By.ID, "wf-backfill").click()
    wait_until(chrome, lambda: chrome.find_elements(By.ID, "wf-backfill-form"))
    fill(chrome, "2026-03-01T05:00:00", "2026-03-01T01:00:00")
    wait_until(chrome, lambda: chrome.find_elements(By.CSS_SELECTOR, ".errorlist"))
    errors = chrome.find_element(By.CSS_SELECTOR, ".errorlist").text
    assert "is before start" in errors
    chrome.save_screenshot(str(screenshots / "admin-schedule-backfill-refused.png"))
    assert ScheduleFire.objects.filter(schedule=schedule).count() == 6


def test_the_fires_list_shows_when_each_began_and_which_were_backfilled(
    chrome, live_server, screenshots: Path
) -> None:
    workflow = make_version(ECHO, name="spread-out").workflow
    schedule = schedule_create(workflow=workflow, cron="0 * * * *", jitter_seconds=600)
    log_in(chrome, live_server)
    chrome.get(f"{live_server.url}/admin/executions/schedule/{schedule.pk}/backfill/")
    fill(chrome, "2026-03-01T00:00:00", "2026-03-01T01:00:00")
    wait_until(chrome, lambda: "Backfill started" in message(chrome))
    chrome.get(f"{live_server.url}/admin/executions/schedulefire/?backfill__exact=1")
    fires = ScheduleFire.objects.filter(schedule=schedule).order_by("-fire_time")
    delays = [fire.start_at - fire.fire_time for fire in fires if fire.start_at]
    assert len(delays) == 2
    assert all(timedelta(0) <= delay < timedelta(seconds=600) for delay in delays)
    shown = [f"+{delay.total_seconds():.3f} s" for delay in delays]  # the browser text: a space
    assert column(chrome, "delay") == shown
    chrome.save_screenshot(str(screenshots / "admin-schedule-fires-backfilled.png"))
