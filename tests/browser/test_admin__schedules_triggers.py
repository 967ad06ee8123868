"""Schedules and triggers in the admin as a person uses them, in a real browser: a
schedule's overlap and catch-up changed on its page (which lists its recent fires), the
fires of every schedule filtered down to one, and triggers disabled and enabled from
their list.

Screenshots go to var/screenshots/admin-schedule-*.png and admin-trigger*.png.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from executions.schedules.models import Schedule, ScheduleFire
from executions.schedules.services import schedule_create, schedule_run
from executions.triggers.models import Trigger
from executions.triggers.services import trigger_create
from tests.browser.test_admin__console import PATIENCE, log_in
from tests.factories import make_version
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

ECHO = {"nodes": [{"id": "a", "type": "function", "function": "std.echo"}]}
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def wait_until(chrome, condition) -> None:
    eventually(condition, PATIENCE, "the page never showed it", interval=0.2)


def message(chrome) -> str:
    return " ".join(m.text for m in chrome.find_elements(By.CSS_SELECTOR, "ul.messagelist li"))


def column(chrome, name: str) -> list[str]:
    cells = chrome.find_elements(By.CSS_SELECTOR, f"#result_list tbody .field-{name}")
    return [cell.text for cell in cells]


def fired_schedules() -> tuple[Schedule, Schedule]:
    """every-five fired at 10:05 (started) and 10:10 (skipped: the first still runs, no
    workers here); hourly at 11:00."""
    workflow = make_version(ECHO, name="every-five").workflow
    every_five = schedule_create(workflow=workflow, cron="*/5 * * * *", by="ada")
    hourly = schedule_create(workflow=workflow, cron="0 * * * *", by="ada")
    Schedule.objects.filter(pk__in=[every_five.pk, hourly.pk]).update(last_fire_at=T0)
    schedule_run(schedule_id=str(every_five.pk), now=T0.replace(minute=5))
    schedule_run(schedule_id=str(every_five.pk), now=T0.replace(minute=10))
    schedule_run(schedule_id=str(hourly.pk), now=T0.replace(hour=11))
    return every_five, hourly


def test_a_schedules_policies_and_fires_in_the_admin(
    chrome, live_server, screenshots: Path
) -> None:
    every_five, _ = fired_schedules()
    started = ScheduleFire.objects.get(schedule=every_five, outcome="started")
    log_in(chrome, live_server)

    chrome.get(f"{live_server.url}/admin/executions/schedule/{every_five.pk}/change/")
    overlap = Select(chrome.find_element(By.NAME, "overlap"))
    catchup = Select(chrome.find_element(By.NAME, "catchup"))
    values = [o.get_attribute("value") for o in overlap.options]
    assert values == ["allow", "skip", "buffer_one", "cancel_other"]
    assert overlap.first_selected_option.text == "skip: start nothing while one runs"
    assert catchup.first_selected_option.text == "last: run the latest missed fire"
    table = chrome.find_element(By.CSS_SELECTOR, "table.wf-fires")
    fires = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [row.text for row in fires] == [
        "2026-03-02 10:10:00 UTC skipped —",
        f"2026-03-02 10:05:00 UTC started {str(started.execution_id)[:8]}…",
    ]
    chrome.save_screenshot(str(screenshots / "admin-schedule-change.png"))
    chrome.execute_script("arguments[0].scrollIntoView()", table)
    chrome.save_screenshot(str(screenshots / "admin-schedule-recent-fires.png"))

    overlap.select_by_value("buffer_one")
    catchup.select_by_value("all")
    window = chrome.find_element(By.NAME, "catchup_window_seconds")
    window.clear()
    window.send_keys("600")
    chrome.find_element(By.NAME, "_save").click()
    wait_until(chrome, lambda: "was changed successfully" in message(chrome))
    assert column(chrome, "policies") == ["buffer_one / all 600 s", "skip / last"]
    chrome.save_screenshot(str(screenshots / "admin-schedule-saved.png"))
    saved = Schedule.objects.get(pk=every_five.pk)
    assert (saved.overlap, saved.catchup, saved.catchup_window_seconds) == (
        "buffer_one",
        "all",
        600,
    )
    assert saved.updated_by == "root"

    chrome.get(f"{live_server.url}/admin/executions/schedulefire/")
    assert column(chrome, "outcome") == ["Started", "Skipped", "Started"]
    chrome.save_screenshot(str(screenshots / "admin-schedule-fires.png"))
    # The filter by schedule, as a person clicks it in the side bar.
    chrome.find_element(By.LINK_TEXT, str(every_five)).click()
    wait_until(chrome, lambda: len(column(chrome, "outcome")) == 2)
    assert column(chrome, "outcome") == ["Skipped", "Started"]
    chrome.save_screenshot(str(screenshots / "admin-schedule-fires-filtered.png"))
    chrome.find_element(By.LINK_TEXT, f"{str(started.execution_id)[:8]}…").click()
    wait_until(chrome, lambda: str(started.execution_id) in chrome.current_url)


def test_triggers_disabled_and_enabled_from_their_list(
    chrome, live_server, screenshots: Path
) -> None:
    workflow = make_version(ECHO, name="on-signup").workflow
    for name in ("audit", "welcome"):
        trigger_create(name=name, event="user.signed_up", workflow=workflow, by="ada")
    log_in(chrome, live_server)

    def run(action: str, *names: str) -> None:
        chrome.get(f"{live_server.url}/admin/executions/trigger/")
        for name in names:
            pk = Trigger.objects.get(name=name).pk
            chrome.find_element(By.CSS_SELECTOR, f"input.action-select[value='{pk}']").click()
        Select(chrome.find_element(By.NAME, "action")).select_by_value(action)
        chrome.find_element(By.CSS_SELECTOR, "button[name=index]").click()
        wait_until(chrome, lambda: " trigger" in message(chrome))

    run("disable_selected", "welcome")
    assert message(chrome) == "1 trigger disabled: welcome."
    assert dict(Trigger.objects.values_list("name", "enabled")) == {"audit": True, "welcome": False}
    chrome.save_screenshot(str(screenshots / "admin-triggers-disabled.png"))
    run("enable_selected", "audit", "welcome")
    assert message(chrome) == "1 trigger enabled: welcome; already enabled: audit."
    assert set(Trigger.objects.values_list("enabled", flat=True)) == {True}
    chrome.save_screenshot(str(screenshots / "admin-triggers-enabled.png"))
